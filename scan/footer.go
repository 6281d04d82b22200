package scan

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/sluice-data/sluice/store"
)

// footerGuess is how many bytes the first footer read asks for: enough
// for the footers of typical files (a few KiB to tens of KiB), at the
// price of one first-byte latency either way. A dataset whose footers are
// larger raises it (footerReader.guess) so later files again take one read.
const (
	footerGuess    = 64 << 10
	maxFooterGuess = 16 << 20
	// maxFooter bounds what a footer length field may claim before it is
	// believed: arrow-go would allocate it, and a corrupt field could ask
	// for 4 GiB.
	maxFooter = 256 << 20
	// wholeFile is the largest file whose footer read takes in the whole
	// file, so that its row groups need no request of their own: at an
	// object store's first-byte latency and per-stream rate (15ms, 90
	// MiB/s next to S3) a MiB more on one request costs less than a
	// second request would. A scan of a few small files is then one
	// listing and one read per file.
	wholeFile = 1 << 20
)

var (
	errEncrypted = errors.New("encrypted Parquet files are not supported")
)

// footerReader reads the footers of one dataset, adapting its first read
// to the largest footer it has seen.
type footerReader struct {
	st    *store.Store
	guess atomic.Int64

	reads, bytes atomic.Int64 // requests made and bytes received
	int96        bool         // also parse INT96 columns as binary (decodeMD)
	// keep is how many more bytes of whole small files reads may keep
	// for the scans (see wholeFile); kept is how many they kept.
	keep, kept atomic.Int64
	maxWhole   int64 // files up to this size are read whole (wholeFile)

	mu   sync.Mutex
	ttfb []time.Duration // of each read: request to first byte of body
}

// medianTTFB is the median first-byte latency of the footer reads, the
// link's latency as far as Open has seen it; zero when nothing was read.
func (r *footerReader) medianTTFB() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ttfb) == 0 {
		return 0
	}
	t := slices.Clone(r.ttfb)
	slices.Sort(t)
	return t[len(t)/2]
}

// minTTFB is the shortest first-byte latency of the footer reads: what
// the link itself takes, with less of the machine's scheduling in it than
// the median (on a loaded machine a local read waits milliseconds for a
// core); zero when nothing was read.
func (r *footerReader) minTTFB() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ttfb) == 0 {
		return 0
	}
	return slices.Min(r.ttfb)
}

func newFooterReader(st *store.Store) *footerReader {
	r := &footerReader{st: st}
	r.guess.Store(footerGuess)
	return r
}

// footer is a file's parsed metadata and the version it was read from.
type footer struct {
	md       *metadata.FileMetaData
	decodeMD *metadata.FileMetaData // see fileInfo.decodeMD
	info     store.ObjectInfo
	len      int64 // metadata bytes, plus the 8 of length and magic
	// data is the whole file when the read took it in (see wholeFile),
	// for the scans to decode from without another request; else nil.
	data []byte
}

// read fetches and parses the footer of key: one suffix read, and a second
// (pinned to the first's ETag) only when the footer is larger than it.
// size is the object's size as listed (0 if unknown): a small file is read
// whole, as long as the reader may keep more.
func (r *footerReader) read(ctx context.Context, key string, size int64) (footer, error) {
	n := r.guess.Load()
	whole := size > 0 && size <= max(n, r.maxWhole) && r.take(size)
	if whole {
		n = max(n, size)
	}
	tail, info, err := r.readRange(ctx, key, store.Suffix(n), store.ReadOptions{})
	if err != nil {
		if whole {
			r.keep.Add(size)
		}
		return footer{}, err
	}
	ft, err := r.parse(ctx, key, tail, info)
	switch {
	case whole && err == nil && info.Size == size && int64(len(tail)) == size:
		ft.data = tail
		r.kept.Add(size)
	case whole:
		r.keep.Add(size) // not kept after all: the file changed size, or is no Parquet file
	}
	return ft, err
}

// take reserves n bytes of what the reader may keep.
func (r *footerReader) take(n int64) bool {
	for {
		k := r.keep.Load()
		if k < n {
			return false
		}
		if r.keep.CompareAndSwap(k, k-n) {
			return true
		}
	}
}

// parse finds and parses the footer at the end of tail, the last bytes of
// the object, reading the metadata again when tail does not hold all of it.
func (r *footerReader) parse(ctx context.Context, key string, tail []byte, info store.ObjectInfo) (footer, error) {
	var err error
	size := info.Size
	if size < int64(len(tail)) {
		size = int64(len(tail))
	}
	if size < 12 {
		return footer{}, fmt.Errorf("%w: only %d bytes", ErrNotParquet, size)
	}
	if int64(len(tail)) < 8 {
		return footer{}, fmt.Errorf("short read of the footer: %d bytes", len(tail))
	}
	end := tail[len(tail)-8:]
	switch string(end[4:]) {
	case "PAR1":
	case "PARE":
		return footer{}, errEncrypted
	default:
		return footer{}, fmt.Errorf("%w (no PAR1 magic at the end)", ErrNotParquet)
	}
	flen := int64(binary.LittleEndian.Uint32(end[:4]))
	if flen+8 > size {
		return footer{}, fmt.Errorf("corrupt footer: metadata length %d does not fit in the file (%d bytes)", flen, size)
	}
	if flen > maxFooter {
		return footer{}, fmt.Errorf("footer of %d bytes is too large (at most %d)", flen, maxFooter)
	}
	var meta []byte
	if have := int64(len(tail)) - 8; flen <= have {
		meta = tail[have-flen : have]
	} else {
		meta, _, err = r.readRange(ctx, key, store.Range{Off: size - 8 - flen, Len: flen}, store.ReadOptions{IfMatch: info.ETag})
		if err != nil {
			return footer{}, err
		}
		if int64(len(meta)) != flen {
			return footer{}, fmt.Errorf("short read of the footer: %d of %d bytes", len(meta), flen)
		}
		for {
			g := r.guess.Load()
			want := min(nextPow2(flen+8), maxFooterGuess)
			if want <= g || r.guess.CompareAndSwap(g, want) {
				break
			}
		}
	}
	md, err := parseMetadata(meta)
	if err != nil {
		return footer{}, err
	}
	md.SetSourceFileSize(size)
	if md.IsSetEncryptionAlgorithm() {
		return footer{}, errEncrypted
	}
	if err := checkMetadata(md); err != nil {
		return footer{}, err
	}
	ft := footer{md: md, info: info, len: flen + 8}
	if r.int96 && hasInt96(md) {
		if fixed, changed, err := rewriteLegacy(meta); err == nil && changed {
			meta = fixed
		}
		if ft.decodeMD, err = int96Footer(meta); err != nil {
			return footer{}, err
		}
		ft.decodeMD.SetSourceFileSize(size)
	}
	return ft, nil
}

// readOnce is one request for a range (see readRange).
func (r *footerReader) readOnce(ctx context.Context, key string, rg store.Range, opts store.ReadOptions) ([]byte, store.ObjectInfo, error) {
	r.reads.Add(1)
	want := rg.Len
	if rg.Off < 0 {
		want = -rg.Off
	}
	// The buffer is made, and the first read kept short, so that the
	// first-byte latency measured is the link's, not the time to clear
	// and fill a megabyte (which decides whether the store is local).
	buf := make([]byte, 0, max(want, 0))
	start := time.Now()
	rc, info, err := r.st.ReadRange(ctx, key, rg, opts)
	if err != nil {
		return nil, info, err
	}
	defer rc.Close()
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := cap(buf)
		if len(buf) == 0 {
			end = min(end, 4<<10)
		}
		m, err := rc.Read(buf[len(buf):end])
		if m > 0 && len(buf) == 0 {
			d := time.Since(start)
			r.mu.Lock()
			r.ttfb = append(r.ttfb, d)
			r.mu.Unlock()
		}
		buf = buf[:len(buf)+m]
		r.bytes.Add(int64(m))
		if err == io.EOF {
			return buf, info, nil
		}
		if err != nil {
			return nil, info, err
		}
	}
}

func nextPow2(n int64) int64 {
	p := int64(1)
	for p < n {
		p <<= 1
	}
	return p
}

// parseMetadata parses footer bytes, turning a panic of the decoder on
// corrupt input into an error. A footer arrow-go refuses or would misread
// is rewritten into the equivalent it reads (legacy.go) and parsed again.
func parseMetadata(b []byte) (*metadata.FileMetaData, error) {
	md, err := parseRaw(b)
	if err == nil && !legacySchema(md.Schema.Root()) {
		return md, nil
	}
	fixed, changed, rerr := rewriteLegacy(b)
	if rerr != nil || !changed {
		if err == nil {
			return md, nil
		}
		return nil, err
	}
	return parseRaw(fixed)
}

func parseRaw(b []byte) (md *metadata.FileMetaData, err error) {
	defer func() {
		if r := recover(); r != nil {
			md, err = nil, fmt.Errorf("corrupt footer: %v", r)
		}
	}()
	md, err = metadata.NewFileMetaData(b, nil)
	if err != nil {
		return nil, fmt.Errorf("corrupt footer: %v", err)
	}
	return md, nil
}

// checkMetadata catches metadata that would make arrow-go index out of
// range later: every row group must describe every leaf column.
func checkMetadata(md *metadata.FileMetaData) error {
	n := md.Schema.NumColumns()
	for i, rg := range md.RowGroups {
		if rg == nil || len(rg.Columns) != n {
			got := 0
			if rg != nil {
				got = len(rg.Columns)
			}
			return fmt.Errorf("corrupt footer: row group %d has %d column chunks, the schema %d leaf columns", i, got, n)
		}
		for j, c := range rg.Columns {
			if c == nil || c.MetaData == nil {
				return fmt.Errorf("corrupt footer: row group %d, column %d has no metadata", i, j)
			}
		}
		if rg.NumRows < 0 {
			return fmt.Errorf("corrupt footer: row group %d has %d rows", i, rg.NumRows)
		}
	}
	return nil
}
