package fetch

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sluice-data/sluice/store"
)

// errSuperseded ends an attempt whose part another attempt finished.
var errSuperseded = errors.New("fetch: superseded")

// shortBody is a body that ended before the bytes its range promised: a
// transfer cut short, worth another try from where it stopped.
type shortBody struct {
	url       string
	got, want int64
}

func (e *shortBody) Error() string {
	return fmt.Sprintf("read %s: body ended after %d of %d bytes", e.url, e.got, e.want)
}

func (e *shortBody) Is(target error) bool { return target == store.ErrRetryable }

// run drives one attempt and, if it fails with no other attempt left on
// the part, the retries after it. slot says whether it holds one of the
// in-flight slots (the first attempt does; duplicates run beside it).
func (p *Plan) run(pt *part, a *attempt, slot bool) {
	defer p.wg.Done()
	if slot {
		defer p.f.link.slots.release()
	}
	for {
		err := p.attempt(pt, a)
		pt.mu.Lock()
		a.cancel()
		wasLive := pt.forget(a)
		// Done, replaced by the monitor, or another attempt carries on.
		if pt.done || !wasLive || len(pt.live) > 0 || p.ctx.Err() != nil {
			pt.mu.Unlock()
			return
		}
		if !p.f.retry.Again(err, pt.retries) {
			pt.mu.Unlock()
			if err == nil {
				err = fmt.Errorf("fetch: %s: request ended without its bytes", pt.u.obj.url)
			}
			p.fail(err)
			return
		}
		pt.retries++
		n := pt.retries
		pt.mu.Unlock()
		p.stats.retries.Add(1)
		if p.f.retry.Wait(p.ctx, n) != nil {
			return
		}
		pt.mu.Lock()
		if pt.done {
			pt.mu.Unlock()
			return
		}
		a = pt.newAttempt(p.ctx, a.hedge)
		pt.mu.Unlock()
	}
}

// attempt requests the part from a.from on, pinned to the object's ETag
// once known, and commits what arrives. It returns nil once the part is
// complete.
func (p *Plan) attempt(pt *part, a *attempt) error {
	obj := pt.u.obj
	etag := obj.pinned()
	want := pt.n - a.from
	p.stats.requests.Add(1)
	p.stats.inFlightAdd(1)
	defer p.stats.inFlightAdd(-1)
	t0 := time.Now()
	rc, info, err := p.f.st.ReadRange(a.ctx, obj.key, store.Range{Off: pt.off + a.from, Len: want}, store.ReadOptions{IfMatch: etag})
	if err != nil {
		switch {
		case etag != "" && errors.Is(err, store.ErrPrecondition):
			return p.changed(obj, etag, info.ETag)
		case etag != "" && errors.Is(err, store.ErrNotFound):
			return &ChangedError{URL: obj.url, Old: etag, Deleted: true}
		}
		return err
	}
	defer rc.Close()
	if old, ok := obj.pin(info.ETag); !ok {
		return &ChangedError{URL: obj.url, Old: old, New: info.ETag}
	}
	if pt.end() > info.Size {
		return pastEnd(p.f.st, obj.key, pt.off, pt.end(), info.Size)
	}
	bp := p.f.scratch.Get().(*[]byte)
	defer p.f.scratch.Put(bp)
	buf := *bp
	pos := a.from
	var first time.Time
	for pos < pt.n {
		m, rerr := rc.Read(buf[:min(int64(len(buf)), pt.n-pos)])
		if m > 0 {
			if first.IsZero() {
				first = time.Now()
				p.f.link.addTTFB(first.Sub(t0))
				p.stats.addTTFB(first.Sub(t0))
			}
			p.stats.fetched.Add(int64(m))
			live, complete := p.commit(pt, a, pos, buf[:m])
			pos += int64(m)
			if complete {
				p.f.link.addRate(pos-a.from, time.Since(first))
				return nil
			}
			if !live {
				return errSuperseded
			}
		}
		if rerr == io.EOF && pos < pt.n {
			return &shortBody{url: obj.url, got: pos - a.from, want: want}
		}
		if rerr != nil && rerr != io.EOF {
			return rerr
		}
	}
	// The body had every byte, but another attempt committed them first.
	return errSuperseded
}

// commit writes the bytes of b (at offset pos of the part) that are not
// committed yet, so two attempts racing over the same bytes deliver each
// byte once. live is false once the part is finished; complete is true
// for the commit that finished it.
func (p *Plan) commit(pt *part, a *attempt, pos int64, b []byte) (live, complete bool) {
	end := pos + int64(len(b))
	pt.mu.Lock()
	if pt.done {
		pt.mu.Unlock()
		return false, false
	}
	var added int64
	if end > pt.wm {
		pt.u.copyIn(pt.base+pt.wm, b[pt.wm-pos:])
		added = end - pt.wm
		pt.wm = end
		pt.progressAt = time.Now()
		a.committed += added
		if pt.wm == pt.n {
			complete = pt.finishLocked(nil)
		} else {
			pt.dropFalseAlarms(a)
		}
	}
	pt.mu.Unlock()
	if added > 0 {
		p.f.link.addDelivered(added)
		p.arrived(added)
	}
	if complete {
		if a.hedge {
			p.stats.hedgeWins.Add(1)
		}
		p.partDone(pt)
	}
	return !complete, complete
}

// changed builds the error for a failed If-Match, learning the new ETag
// with a Stat when the response did not carry it.
func (p *Plan) changed(obj *object, old, now string) error {
	if now == "" {
		info, err := p.f.st.Stat(p.ctx, obj.key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return &ChangedError{URL: obj.url, Old: old, Deleted: true}
		case err == nil:
			now = info.ETag
		}
	}
	return &ChangedError{URL: obj.url, Old: old, New: now}
}
