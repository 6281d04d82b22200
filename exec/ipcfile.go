package exec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/ipccheck"
)

// An Arrow IPC file is the stream format between a leading and a
// trailing magic, with a footer that lists where each dictionary and
// record batch message starts. arrow-go's FileReader trusts the footer
// (a corrupt one panics or allocates without bound), so a file is read
// here as the messages of a stream: the schema right after the leading
// magic, then the footer's blocks in its order, each through the same
// checked message reader as a stage's input.

var arrowMagic = []byte("ARROW1")

// fileMessages hands out a file's messages in reading order.
type fileMessages struct {
	*messageReader
	ra     io.ReaderAt
	blocks []ipccheck.Block
	next   int
}

func (f *fileMessages) Message() (*ipc.Message, error) {
	if f.next == len(f.blocks) {
		if f.msg != nil {
			f.msg.Release()
			f.msg = nil
		}
		return nil, io.EOF
	}
	b := f.blocks[f.next]
	f.next++
	f.r = io.NewSectionReader(f.ra, b.Off, b.Len)
	msg, err := f.messageReader.Message()
	if err == io.EOF || errors.Is(err, errNoEndMarker) {
		return nil, fmt.Errorf("arrow/ipc: no message at offset %d", b.Off)
	}
	return msg, err
}

// newFileMessages reads a file's footer and lists its messages: the
// schema, the dictionaries, the record batches.
func newFileMessages(ra io.ReaderAt, size int64, mem memory.Allocator) (*fileMessages, error) {
	const tail = 4 + 6 // footer length, magic
	if size < 8+tail {
		return nil, fmt.Errorf("%d bytes: too short for an Arrow IPC file", size)
	}
	head := make([]byte, 6)
	end := make([]byte, tail)
	if _, err := ra.ReadAt(head, 0); err != nil {
		return nil, err
	}
	if _, err := ra.ReadAt(end, size-tail); err != nil {
		return nil, err
	}
	if !bytes.Equal(head, arrowMagic) || !bytes.Equal(end[4:], arrowMagic) {
		return nil, errors.New("no ARROW1 magic at both ends")
	}
	footerLen := int64(int32(binary.LittleEndian.Uint32(end)))
	body := size - tail - 8 // between the leading magic (padded to 8) and the footer
	if footerLen <= 0 || footerLen > body {
		return nil, fmt.Errorf("footer of %d bytes in a file of %d", footerLen, size)
	}
	footer := make([]byte, footerLen)
	if _, err := ra.ReadAt(footer, size-tail-footerLen); err != nil {
		return nil, err
	}
	dicts, recs, err := ipccheck.FooterBlocks(footer, 8+body-footerLen)
	if err != nil {
		return nil, err
	}
	f := &fileMessages{messageReader: newMessageReader(nil, mem), ra: ra}
	// The schema message has no block of its own: it opens the stream.
	f.blocks = append(f.blocks, ipccheck.Block{Off: 8, Len: body - footerLen})
	f.blocks = append(f.blocks, dicts...)
	f.blocks = append(f.blocks, recs...)
	return f, nil
}
