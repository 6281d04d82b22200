package fanout

import (
	"bufio"
	"hash"
	"hash/crc32"
	"io"
	"os"

	"github.com/sluice-data/sluice/internal/spillfile"
)

// spill keeps n byte streams written in turns (a map task's shuffle
// parts, a batch's share of each at a time) in one temporary file, so a
// map task holds none of its output in memory, and reads each back
// whole, one after another, to be written as one object.
type spill struct {
	f    *os.File
	buf  *bufio.Writer
	end  int64   // bytes written so far, buffered ones included
	segs [][]seg // each stream's runs of bytes in the file, in order
	crc  []hash.Hash32
	size []int64
}

type seg struct{ off, n int64 }

func newSpill(n int) (*spill, error) {
	f, err := spillfile.Create("", "sluice-shuffle-*")
	if err != nil {
		return nil, err
	}
	s := &spill{f: f, buf: bufio.NewWriterSize(f, 256<<10), segs: make([][]seg, n), crc: make([]hash.Hash32, n), size: make([]int64, n)}
	for i := range s.crc {
		s.crc[i] = crc32.New(castagnoli)
	}
	return s, nil
}

// writer appends to stream i.
func (s *spill) writer(i int) io.Writer { return spillWriter{s, i} }

type spillWriter struct {
	s *spill
	i int
}

func (w spillWriter) Write(p []byte) (int, error) {
	s := w.s
	n, err := s.buf.Write(p)
	segs := s.segs[w.i]
	if k := len(segs) - 1; k >= 0 && segs[k].off+segs[k].n == s.end {
		segs[k].n += int64(n)
	} else {
		s.segs[w.i] = append(segs, seg{s.end, int64(n)})
	}
	s.end += int64(n)
	s.size[w.i] += int64(n)
	s.crc[w.i].Write(p[:n])
	return n, err
}

// reader reads stream i back; call it once every stream is written.
func (s *spill) reader(i int) (io.Reader, error) {
	if err := s.buf.Flush(); err != nil {
		return nil, err
	}
	rs := make([]io.Reader, len(s.segs[i]))
	for k, sg := range s.segs[i] {
		rs[k] = io.NewSectionReader(s.f, sg.off, sg.n)
	}
	return io.MultiReader(rs...), nil
}

func (s *spill) close() { spillfile.Remove(s.f) }
