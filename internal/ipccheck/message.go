package ipccheck

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// MaxMetadata bounds a message's metadata: a flatbuffer of a few hundred
// bytes a column; a length beyond this is a corrupt stream, not a wide
// schema.
const MaxMetadata = 64 << 20

// MessageMetadata checks a message's metadata and returns it as a buffer
// with the body length it gives.
func MessageMetadata(meta []byte) (*memory.Buffer, int64, error) {
	if err := Metadata(meta); err != nil {
		return nil, 0, err
	}
	metaBuf := memory.NewBufferBytes(meta)
	n, err := bodyLength(metaBuf)
	if err != nil {
		return nil, 0, err
	}
	return metaBuf, n, nil
}

// bodyLength is the body length a message's metadata gives.
func bodyLength(meta *memory.Buffer) (n int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("arrow/ipc: invalid message metadata: %v", r)
		}
	}()
	msg := ipc.NewMessage(meta, memory.NewBufferBytes(nil))
	defer msg.Release()
	n = msg.BodyLen()
	if n < 0 || n > int64(^uint(0)>>1) {
		return 0, fmt.Errorf("arrow/ipc: invalid message body length %d", n)
	}
	return n, nil
}
