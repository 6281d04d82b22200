package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/zeebo/xxh3"
)

// sharedBuckets keeps the per-prefix token buckets in a file that every
// process naming it maps, each request taking the file's lock: worker
// processes of one machine then share a prefix's rate, as S3's clients
// all count against the same prefix. The file is a table of slots, each
// a prefix's hash (0: free), its tokens and when they were counted.
type sharedBuckets struct {
	f   *os.File
	mem []byte
}

const (
	sharedSlots = 1 << 14
	slotSize    = 24
	sharedSize  = sharedSlots * slotSize
)

var errSharedFull = errors.New("sim: the shared request buckets are full")

func openShared(path string) (*sharedBuckets, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sim: reqshare: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("sim: reqshare: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() < sharedSize {
		err = f.Truncate(sharedSize)
	}
	unlockFile(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("sim: reqshare: %w", err)
	}
	mem, err := mapFile(f, sharedSize)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("sim: reqshare: %w", err)
	}
	return &sharedBuckets{f: f, mem: mem}, nil
}

func (s *sharedBuckets) close() error {
	unmapFile(s.mem)
	return s.f.Close()
}

// take takes a token from the bucket of key (a prefix and its class),
// which refills at limit a second up to burst, and reports whether there
// was one.
func (s *sharedBuckets) take(key string, limit, burst float64, now time.Time) (bool, error) {
	h := xxh3.HashString(key) | 1
	if err := lockFile(s.f); err != nil {
		return false, err
	}
	defer unlockFile(s.f)
	le := binary.LittleEndian
	for i := range uint64(sharedSlots) {
		b := s.mem[((h+i)%sharedSlots)*slotSize:][:slotSize]
		switch le.Uint64(b) {
		case 0:
			le.PutUint64(b, h)
			le.PutUint64(b[8:], math.Float64bits(burst))
			le.PutUint64(b[16:], uint64(now.UnixNano()))
		case h:
		default:
			continue
		}
		tokens := math.Float64frombits(le.Uint64(b[8:]))
		if dt := now.UnixNano() - int64(le.Uint64(b[16:])); dt > 0 {
			tokens = math.Min(burst, tokens+float64(dt)/1e9*limit)
			le.PutUint64(b[16:], uint64(now.UnixNano()))
		}
		ok := tokens >= 1
		if ok {
			tokens--
		}
		le.PutUint64(b[8:], math.Float64bits(tokens))
		return ok, nil
	}
	return false, errSharedFull
}
