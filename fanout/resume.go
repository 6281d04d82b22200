package fanout

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluice-data/sluice/store"
)

// readSpec reads the spec of the job opts.Resume names, and its pin for
// the workers, once its signature shows a driver holding opts.Key wrote it.
func readSpec(ctx context.Context, opts Options) (*Spec, string, error) {
	url := opts.Resume
	if !IsJobURL(url) {
		return nil, "", fmt.Errorf("resume: %s is not a job's prefix (…/job-<12 hex digits>/; sluice jobs ls lists them)", url)
	}
	st, prefix, err := opts.open(ctx, url)
	if err != nil {
		return nil, "", fmt.Errorf("resume: %w", err)
	}
	defer closeStore(opts.Open, st)
	j := &job{st: st, prefix: prefix}
	var b []byte
	if err := j.do(ctx, func() (err error) { b, err = st.ReadAll(ctx, prefix+specKey); return err }); err != nil {
		return nil, "", fmt.Errorf("resume: %w", err)
	}
	var sig []byte
	if err := j.do(ctx, func() (err error) { sig, err = st.ReadAll(ctx, prefix+sigKey); return err }); err != nil && store.KindOf(err) != store.KindNotFound {
		return nil, "", fmt.Errorf("resume: %w", err)
	}
	if !hmac.Equal(sig, []byte(signSpec(opts.Key, b))) {
		return nil, "", fmt.Errorf("resume: %s is not signed with this driver's key: it was changed in the store, or its driver had another key (another user or machine, whose sluice can resume it)", st.URL(prefix+specKey))
	}
	spec, err := ParseSpec(b)
	if err != nil {
		return nil, "", fmt.Errorf("resume: %s: %w", st.URL(prefix+specKey), err)
	}
	// A spec copied from elsewhere would have its tasks write there.
	if same, err := sameURL(ctx, opts, spec.Job, st.URL(prefix)); err != nil || !same {
		return nil, "", fmt.Errorf("resume: the spec at %s is job %s's", url, spec.Job)
	}
	return spec, specSum(b), nil
}

// sameURL says whether a and b name the same place (a directory and its
// file:// URL do).
func sameURL(ctx context.Context, opts Options, a, b string) (bool, error) {
	st, prefix, err := opts.open(ctx, a)
	if err != nil {
		return false, err
	}
	defer closeStore(opts.Open, st)
	return strings.TrimSuffix(st.URL(prefix), "/") == strings.TrimSuffix(b, "/"), nil
}

// samePhases checks that planning the job again gives the phases its
// spec holds: the same pieces of the same files, so the outputs already
// committed are the outputs these phases would make.
func samePhases(spec, now []Phase) error {
	a, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	b, err := json.Marshal(now)
	if err != nil {
		return err
	}
	if string(a) != string(b) {
		return fmt.Errorf("its input changed since it started (the plan now cuts it into other phases or pieces): run it again as a new job")
	}
	return nil
}

// committedManifest is phase pi's manifest when the job wrote it, nil
// when it did not.
func (d *driver) committedManifest(pi int) (*Manifest, error) {
	var b []byte
	err := d.j.do(d.ctx, func() (err error) { b, err = d.j.st.ReadAll(d.ctx, d.j.prefix+manifestKey(pi)); return err })
	if store.KindOf(err) == store.KindNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseManifest(b, pi, d.spec.Phases[pi])
}
