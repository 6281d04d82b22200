package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/store"
)

// Config says what to measure. Run fills in the defaults noted.
type Config struct {
	// Objects per cell. Zero means max(16, 4 x concurrency) when writing,
	// and every object under the prefix when ReadOnly.
	Objects int
	// Sizes are the object sizes to write, one cell each (with each
	// concurrency). Required unless ReadOnly, where sizes are what the
	// objects have.
	Sizes []int64
	// Concurrency lists the numbers of requests in flight to measure.
	// Ignored when Auto.
	Concurrency []int
	// Auto doubles concurrency from 1 until a step gains less than AutoGain
	// (default 0.05) in steady-state MiB/s of the gets (the puts when
	// WriteOnly), or until AutoMax (default 256), and reports the last
	// concurrency that still gained: the saturating value.
	Auto     bool
	AutoGain float64
	AutoMax  int
	// RangeSize, when above zero, reads each object as ranged gets of this
	// size, taken from the same queue so the ranges of one object are in
	// flight together.
	RangeSize int64
	// PartConcurrency is how many parts of one object upload at once
	// when a write is a multipart upload (zero: the store's default).
	PartConcurrency int
	// ReadOnly reads the objects already under the prefix; WriteOnly only
	// writes. Keep leaves the written objects in place.
	ReadOnly, WriteOnly, Keep bool
	// Attempts per request, retryable errors only (default 4).
	Attempts int
	// Seed makes the object bytes (default 1).
	Seed uint64
	// Prefixes, above 1, spreads each cell's objects round robin over that
	// many sub-prefixes (p000/, p001/, ...), so a store that limits
	// requests per prefix sees a share of the rate on each.
	Prefixes int
	// Start, when set, is when the measured requests begin (Run waits for
	// it after its checks) and what record times count from: processes
	// of one fanned-out run share it, so their records line up.
	Start time.Time
	// Observer, when set, hears about phases and bytes as they move.
	Observer Observer
}

// PhaseInfo describes a phase about to start.
type PhaseInfo struct {
	Kind        Kind
	Cell        int
	ObjectSize  int64 // mean, when objects differ
	Concurrency int
	Objects     int
	Bytes       int64 // to move
}

// Observer follows a run, for progress displays. Add is called from every
// worker at once; the others from Run's goroutine. PhaseEnd has the error
// that stopped the run, if this phase is where it stopped.
type Observer interface {
	PhaseStart(PhaseInfo)
	Add(n int64)
	PhaseEnd(s Summary, err error)
}

// AutoResult is what Config.Auto found for one object size.
type AutoResult struct {
	Kind       Kind  `json:"kind"`
	ObjectSize int64 `json:"object_size"`
	// Concurrency is the saturating value: doubling it gained less than
	// the threshold. Saturated is false when AutoMax stopped the search
	// while it was still gaining.
	Concurrency int     `json:"concurrency"`
	SteadyMiBps float64 `json:"steady_mib_s"`
	Saturated   bool    `json:"saturated"`
}

// Result is a run: every summary in the order measured, every record, and
// where the objects were.
type Result struct {
	Start time.Time
	// Prefix is the key prefix the objects were under: the fresh one made
	// inside the given prefix, or the given one when ReadOnly.
	Prefix string
	Kept   bool
	// Summaries holds each cell's put then get summary, cell by cell.
	Summaries []Summary
	Records   []Record
	Auto      []AutoResult
	// GeneratorMiBps is how fast one core made object bytes during the
	// puts (bytes made over time spent making them); zero if none.
	GeneratorMiBps float64
}

// Validate reports the first setting that makes c unusable, in one line.
func (c Config) Validate() error {
	switch {
	case c.Objects < 0:
		return fmt.Errorf("objects must not be negative, got %d", c.Objects)
	case c.ReadOnly && c.WriteOnly:
		return errors.New("read-only and write-only exclude each other")
	case c.ReadOnly && len(c.Sizes) > 0:
		return errors.New("read-only reads the objects that are there: sizes do not apply")
	case !c.ReadOnly && len(c.Sizes) == 0:
		return errors.New("no object size given")
	case !c.Auto && len(c.Concurrency) == 0:
		return errors.New("no concurrency given")
	case c.PartConcurrency < 0:
		return fmt.Errorf("part concurrency must not be negative, got %d", c.PartConcurrency)
	case c.RangeSize < 0:
		return fmt.Errorf("range size must be positive, got %d", c.RangeSize)
	case c.RangeSize > 0 && c.WriteOnly:
		return errors.New("range size applies to reads, and write-only does none")
	case c.Prefixes < 0 || c.Prefixes > maxPrefixes:
		return fmt.Errorf("prefixes must be in 0..%d, got %d", maxPrefixes, c.Prefixes)
	case c.Prefixes > 1 && c.ReadOnly:
		return errors.New("prefixes spread what is written, and read-only writes nothing")
	case c.Attempts < 0:
		return fmt.Errorf("attempts must not be negative, got %d", c.Attempts)
	case c.AutoMax < 0 || c.AutoMax > maxConcurrency:
		return fmt.Errorf("auto concurrency limit must be in 1..%d, got %d", maxConcurrency, c.AutoMax)
	}
	for _, s := range c.Sizes {
		if s <= 0 {
			return fmt.Errorf("object size must be positive, got %d", s)
		}
	}
	if !c.Auto {
		for _, n := range c.Concurrency {
			if n <= 0 || n > maxConcurrency {
				return fmt.Errorf("concurrency must be in 1..%d, got %d", maxConcurrency, n)
			}
		}
	}
	return nil
}

// MaxConcurrency is the largest concurrency c measures at (AutoMax when
// Auto): what to size the store's connection pool for, so that the run
// measures the store and not the pool.
func (c Config) MaxConcurrency() int {
	if c.Auto {
		return c.withDefaults().AutoMax
	}
	if len(c.Concurrency) == 0 {
		return 0
	}
	return slices.Max(c.Concurrency)
}

const maxConcurrency = 4096

const maxPrefixes = 1000

func (c Config) withDefaults() Config {
	if c.AutoGain == 0 {
		c.AutoGain = 0.05
	}
	if c.AutoMax == 0 {
		c.AutoMax = 256
	}
	if c.Attempts == 0 {
		c.Attempts = 4
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	return c
}

// objectsAt is how many objects a cell at concurrency c writes.
func (c Config) objectsAt(conc int) int {
	if c.Objects > 0 {
		return c.Objects
	}
	return max(16, 4*conc)
}

type nopObserver struct{}

func (nopObserver) PhaseStart(PhaseInfo)    {}
func (nopObserver) Add(int64)               {}
func (nopObserver) PhaseEnd(Summary, error) {}

// chunk is the unit of writes and the read buffer of each worker.
const chunk = 1 << 20

// cleanupTimeout bounds deleting what a run wrote, which goes on after the
// run's own context is cancelled.
const cleanupTimeout = 2 * time.Minute

// Run benchmarks st under prefix (a key prefix, "" for the whole store).
// Unless cfg.ReadOnly it writes only under a fresh prefix inside it,
// refuses to start if that prefix holds anything, and deletes what it
// wrote unless cfg.Keep, also when it fails or ctx is cancelled. The
// Result holds what was measured even when err is not nil.
//
// A request that fails with a retryable error is retried with backoff up
// to cfg.Attempts; one that still fails, or fails permanently, is counted
// as an error and the run goes on. Not found, permission and invalid
// errors (a missing bucket, an unwritable URL) stop the run.
func Run(ctx context.Context, st *store.Store, prefix string, cfg Config) (res Result, err error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	r := &runner{st: st, cfg: cfg.withDefaults(), start: time.Now(), written: map[string]bool{}}
	r.retry = retry.Policy{Retries: r.cfg.Attempts - 1, Base: 50 * time.Millisecond, Max: 2 * time.Second}
	if r.retry.Retries == 0 {
		r.retry.Retries = -1 // one attempt: no retries
	}
	res.Start = r.start
	defer func() {
		res.Records = r.records
		res.Summaries = r.summaries
		res.Auto = r.auto
		if r.genTime > 0 {
			res.GeneratorMiBps = float64(r.genBytes) / mib / r.genTime.Seconds()
		}
	}()
	if cfg.ReadOnly {
		res.Prefix = prefix
		if err := r.waitStart(ctx, &res); err != nil {
			return res, err
		}
		return res, r.readOnly(ctx, prefix)
	}
	res.Prefix = freshPrefix(prefix)
	if err := r.checkEmpty(ctx, res.Prefix); err != nil {
		return res, err
	}
	r.payload = NewPayload(r.cfg.Seed)
	res.Kept = cfg.Keep
	if !cfg.Keep {
		defer r.cleanupAtEnd(ctx, res.Prefix, &err)
	}
	if err := r.waitStart(ctx, &res); err != nil {
		return res, err
	}
	single := len(cfg.Sizes) == 1 && len(cfg.Concurrency) == 1 && !cfg.Auto
	for _, size := range cfg.Sizes {
		cellPrefix := func(c int) string {
			if single {
				return res.Prefix
			}
			return res.Prefix + fmt.Sprintf("%s-c%d/", FormatSize(size), c)
		}
		objects := func(c int) []object {
			objs := make([]object, r.cfg.objectsAt(c))
			for i := range objs {
				objs[i] = object{key: cellPrefix(c) + spread(cfg.Prefixes, i) + fmt.Sprintf("obj-%06d", i), size: size}
			}
			return objs
		}
		if err := r.sweep(ctx, objects); err != nil {
			return res, err
		}
	}
	return res, nil
}

// spread is object i's sub-prefix when objects are spread over n.
func spread(n, i int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf("p%03d/", i%n)
}

// waitStart waits for cfg.Start and counts record times from it.
func (r *runner) waitStart(ctx context.Context, res *Result) error {
	if r.cfg.Start.IsZero() {
		return nil
	}
	t := time.NewTimer(time.Until(r.cfg.Start))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.start, res.Start = r.cfg.Start, r.cfg.Start
	return nil
}

// freshPrefix is a prefix no one else has used: the time to the second and
// 48 random bits, so two runs started together still differ.
func freshPrefix(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("sluice-bench-%s-%s", time.Now().UTC().Format("20060102T150405Z"), hex.EncodeToString(b[:]))
	return store.Join(prefix, name) + "/"
}

type object struct {
	key  string
	size int64
}

type runner struct {
	st      *store.Store
	cfg     Config
	retry   retry.Policy
	start   time.Time
	payload *Payload
	bufs    [][]byte

	records   []Record
	summaries []Summary
	auto      []AutoResult
	cell      int

	genMu    sync.Mutex
	genBytes int64
	genTime  time.Duration

	writtenMu sync.Mutex
	written   map[string]bool // keys that may exist and are not yet deleted
}

func (r *runner) now() time.Duration { return time.Since(r.start) }

func (r *runner) readOnly(ctx context.Context, prefix string) error {
	listed, err := r.list(ctx, prefix)
	if err != nil {
		return err
	}
	var objs []object
	for _, o := range listed {
		if o.Size > 0 {
			objs = append(objs, object{key: o.Key, size: o.Size})
		}
	}
	if len(objs) == 0 {
		return &store.Error{Op: "bench", URL: r.st.URL(prefix), Kind: store.KindNotFound, Err: errors.New("no objects to read")}
	}
	if n := r.cfg.Objects; n > 0 && n < len(objs) {
		objs = objs[:n]
	}
	return r.sweep(ctx, func(int) []object { return objs })
}

// sweep measures each concurrency, or searches for the saturating one.
func (r *runner) sweep(ctx context.Context, objects func(c int) []object) error {
	if !r.cfg.Auto {
		for _, c := range r.cfg.Concurrency {
			if _, err := r.measure(ctx, c, objects(c)); err != nil {
				return err
			}
		}
		return nil
	}
	var prev Summary
	for c := 1; ; c *= 2 {
		cur, err := r.measure(ctx, c, objects(c))
		if err != nil {
			return err
		}
		if c > 1 && cur.SteadyMiBps < prev.SteadyMiBps*(1+r.cfg.AutoGain) {
			r.auto = append(r.auto, AutoResult{Kind: prev.Kind, ObjectSize: prev.ObjectSize, Concurrency: prev.Concurrency, SteadyMiBps: prev.SteadyMiBps, Saturated: true})
			return nil
		}
		if 2*c > r.cfg.AutoMax {
			r.auto = append(r.auto, AutoResult{Kind: cur.Kind, ObjectSize: cur.ObjectSize, Concurrency: c, SteadyMiBps: cur.SteadyMiBps})
			return nil
		}
		prev = cur
	}
}

// measure runs one cell: the puts, then the gets of what was put, then
// deletes it (unless kept or read-only). It returns the summary that
// decides the auto search: the gets', or the puts' when write-only.
func (r *runner) measure(ctx context.Context, c int, objs []object) (Summary, error) {
	cell := r.cell
	r.cell++
	var last Summary
	readable := make([]int, len(objs)) // indexes into objs
	for i := range readable {
		readable[i] = i
	}
	if !r.cfg.ReadOnly {
		items := make([]item, len(objs))
		for i, o := range objs {
			items[i] = item{object: i, key: o.key, size: o.size, off: 0, len: o.size}
		}
		s, recs, err := r.phase(ctx, Put, cell, c, items)
		if err != nil {
			return s, err
		}
		last = s
		readable = slices.DeleteFunc(readable, func(i int) bool { return !completed(recs, i) })
	}
	if !r.cfg.WriteOnly && len(readable) > 0 {
		var items []item
		for _, i := range readable {
			o := objs[i]
			step := o.size
			if r.cfg.RangeSize > 0 {
				step = r.cfg.RangeSize
			}
			for off := int64(0); off < o.size; off += step {
				items = append(items, item{object: i, key: o.key, size: o.size, off: off, len: min(step, o.size-off)})
			}
		}
		s, _, err := r.phase(ctx, Get, cell, c, items)
		if err != nil {
			return s, err
		}
		last = s
	}
	if !r.cfg.ReadOnly && !r.cfg.Keep {
		keys := make([]string, len(objs))
		for i, o := range objs {
			keys[i] = o.key
		}
		if err := r.delete(ctx, keys); err != nil {
			return last, err
		}
	}
	return last, nil
}

func completed(recs []Record, object int) bool {
	for _, rec := range recs {
		if rec.Object == object && rec.OK() {
			return true
		}
	}
	return false
}

type item struct {
	object         int
	key            string
	size, off, len int64
}

// phase runs items on c workers that share one queue, and summarizes it.
func (r *runner) phase(ctx context.Context, kind Kind, cell, c int, items []item) (Summary, []Record, error) {
	var bytes int64
	sizes := map[int]int64{}
	for _, it := range items {
		bytes += it.len
		sizes[it.object] = it.size
	}
	r.cfg.Observer.PhaseStart(PhaseInfo{Kind: kind, Cell: cell, ObjectSize: bytes / int64(max(len(sizes), 1)), Concurrency: c, Objects: len(sizes), Bytes: bytes})
	for len(r.bufs) < c {
		r.bufs = append(r.bufs, make([]byte, chunk))
	}
	perWorker := make([][]Record, c)
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	begin := r.now()
	for w := range c {
		g.Go(func() error {
			wk := &worker{r: r, id: w, cell: cell, conc: c, buf: r.bufs[w]}
			defer wk.flushGen()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(items)) {
					return nil
				}
				if err := wk.do(gctx, kind, items[i]); err != nil {
					perWorker[w] = wk.recs
					return err
				}
				perWorker[w] = wk.recs
			}
		})
	}
	err := g.Wait()
	end := r.now()
	var recs []Record
	for _, rs := range perWorker {
		recs = append(recs, rs...)
	}
	slices.SortFunc(recs, func(a, b Record) int { return cmp.Compare(a.Start, b.Start) })
	s := Analyze(recs, Span{begin, end})
	s.Kind, s.Cell, s.Concurrency = kind, cell, c
	if r.cfg.RangeSize > 0 && kind == Get {
		s.RangeSize = r.cfg.RangeSize
	}
	r.records = append(r.records, recs...)
	r.summaries = append(r.summaries, s)
	r.cfg.Observer.PhaseEnd(s, err)
	return s, recs, err
}

type worker struct {
	r          *runner
	id         int
	cell, conc int
	buf        []byte
	recs       []Record
	genBytes   int64
	genTime    time.Duration
}

func (w *worker) flushGen() {
	w.r.genMu.Lock()
	w.r.genBytes += w.genBytes
	w.r.genTime += w.genTime
	w.r.genMu.Unlock()
}

// do makes one request, retrying what is worth retrying. It returns an
// error only for what should stop the run.
func (w *worker) do(ctx context.Context, kind Kind, it item) error {
	for attempt := 1; ; attempt++ {
		rec := Record{
			Kind: kind, Cell: w.cell, Concurrency: w.conc, Worker: w.id,
			Object: it.object, Key: it.key, ObjectSize: it.size, Off: it.off, Len: it.len,
			Attempt: attempt,
		}
		var err error
		if kind == Put {
			err = w.put(ctx, &rec, it)
		} else {
			err = w.get(ctx, &rec, it)
		}
		rec.LastByte = w.r.now()
		if err != nil {
			rec.Err = oneLine(err)
		}
		w.recs = append(w.recs, rec)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch store.KindOf(err) {
		case store.KindNotFound, store.KindPermission, store.KindInvalid, store.KindCanceled:
			return err
		case store.KindRetryable:
			if w.r.retry.Again(err, attempt-1) {
				if err := w.r.retry.Wait(ctx, attempt); err != nil {
					return err
				}
				continue
			}
		}
		return nil // counted as an error; the run goes on
	}
}

func (w *worker) put(ctx context.Context, rec *Record, it item) error {
	rec.Start = w.r.now()
	w.r.track(it.key)
	// The progress display counts what the store took (a part once it
	// is uploaded), not what went into the writer's buffer.
	wr, err := w.r.st.NewWriter(ctx, it.key, store.WriteOptions{Size: it.size, Concurrency: w.r.cfg.PartConcurrency, Stored: w.r.cfg.Observer.Add})
	if err != nil {
		return err
	}
	rec.FirstByte = w.r.now()
	id := uint64(w.cell)<<32 | uint64(it.object)
	for off := int64(0); off < it.size; {
		n := min(it.size-off, int64(len(w.buf)))
		t0 := time.Now()
		w.r.payload.Fill(w.buf[:n], id, off)
		w.genTime += time.Since(t0)
		w.genBytes += n
		if _, err := wr.Write(w.buf[:n]); err != nil {
			_ = wr.Abort()
			return err
		}
		rec.Bytes += n
		off += n
	}
	return wr.Close()
}

func (w *worker) get(ctx context.Context, rec *Record, it item) error {
	rec.Start = w.r.now()
	rc, _, err := w.r.st.ReadRange(ctx, it.key, store.Range{Off: it.off, Len: it.len}, store.ReadOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	for {
		n, err := rc.Read(w.buf)
		if n > 0 {
			if rec.FirstByte == 0 {
				rec.FirstByte = w.r.now()
			}
			rec.Bytes += int64(n)
			w.r.cfg.Observer.Add(int64(n))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if rec.Bytes != it.len {
		return fmt.Errorf("%w: short body: %d of %d bytes", store.ErrRetryable, rec.Bytes, it.len)
	}
	return nil
}

func (r *runner) track(key string) {
	r.writtenMu.Lock()
	r.written[key] = true
	r.writtenMu.Unlock()
}

// delete removes keys this run wrote; a key that is already gone (its put
// failed before committing) is fine.
func (r *runner) delete(ctx context.Context, keys []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, k := range keys {
		g.Go(func() error {
			err := r.retry.Do(gctx, func() error { return r.st.Delete(gctx, k) })
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			r.writtenMu.Lock()
			delete(r.written, k)
			r.writtenMu.Unlock()
			return nil
		})
	}
	return g.Wait()
}

// cleanup deletes every key the run may have written, then anything still
// under its fresh prefix (an upload whose commit raced an error): nothing
// there can be anyone else's, as the prefix was empty and unique.
func (r *runner) cleanup(ctx context.Context, prefix string) error {
	r.writtenMu.Lock()
	keys := make([]string, 0, len(r.written))
	for k := range r.written {
		keys = append(keys, k)
	}
	r.writtenMu.Unlock()
	if err := r.delete(ctx, keys); err != nil {
		return err
	}
	left, err := r.list(ctx, prefix)
	if err != nil {
		return err
	}
	keys = keys[:0]
	for _, o := range left {
		keys = append(keys, o.Key)
	}
	return r.delete(ctx, keys)
}

// checkEmpty refuses a fresh prefix that holds objects: what a run
// deletes at its end must be its own.
func (r *runner) checkEmpty(ctx context.Context, prefix string) error {
	objs, err := r.list(ctx, prefix)
	if err != nil {
		return err
	}
	if len(objs) > 0 {
		return fmt.Errorf("refusing to write: %s already holds %d objects", r.st.URL(prefix), len(objs))
	}
	return nil
}

// cleanupAtEnd is cleanup deferred to a run's end, its failure joined to
// *err. The run's context may be why the run ends: it cleans up on a
// fresh one, bounded so an unreachable store cannot hang it.
func (r *runner) cleanupAtEnd(ctx context.Context, prefix string, err *error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if cerr := r.cleanup(cctx, prefix); cerr != nil {
		*err = errors.Join(*err, fmt.Errorf("cleaning up %s: %w", r.st.URL(prefix), cerr))
	}
}

func (r *runner) list(ctx context.Context, prefix string) ([]store.ObjectInfo, error) {
	var objs []store.ObjectInfo
	err := r.retry.Do(ctx, func() error {
		var err error
		objs, err = r.st.List(ctx, prefix)
		return err
	})
	return objs, err
}

func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
