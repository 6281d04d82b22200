//go:build !linux

package exec

import (
	"context"
	"os"

	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// Stages hand off through shared memory on Linux only; elsewhere every
// pipe carries the plain stream.

type handoffListener struct{}

func listenHandoff(*os.File) *handoffListener { return nil }

func (*handoffListener) await(context.Context, *os.File) (ipc.MessageReader, []byte, error) {
	return nil, nil, nil
}

type handoffWriter struct{}

func dialHandoff(*os.File) *handoffWriter { return nil }

func (*handoffWriter) write([][]byte) error { return nil }
func (*handoffWriter) end() error           { return nil }
func (*handoffWriter) close()               {}

// HandoffsTaken is how many of this process's inputs came through shared
// memory from the stage before: none here.
func HandoffsTaken() int64 { return 0 }
