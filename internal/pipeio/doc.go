// Package pipeio is the hand-off between adjacent sluice stages: when both
// ends of a pipe are sluice stages that allow it, the writer puts each
// Arrow IPC message in a memory file shared with the reader and sends
// only its place, over a Unix socket named after the pipe; the reader's
// batches are then the writer's bytes, not copies out of a pipe into
// fresh pages. Any other reader gets the plain stream, because the writer
// only hands off to a reader that is listening on that socket when the
// first message is ready. Linux only; elsewhere Listen and Dial return
// nil and every pipe carries the plain stream.
//
// Nothing here runs unless a caller asks: package exec hands off only when
// its Options say so, which the sluice command does for its stages
// (SLUICE_PIPE=plain turns it off). A library reading a pipe with exec
// opens no socket and maps no memory.
//
// # Protocol
//
// The socket carries packets (SOCK_SEQPACKET), from the writer:
//
//	hello  "SLUICE1\x00" + size (8 bytes, little-endian), with the memory file (SCM_RIGHTS)
//	'M' + offset (8) + length (8)   a message: the IPC stream's bytes for it
//	'E'                             the end-of-stream marker
//
// and from the reader: "OK" (hello taken), 'T' (a message taken, for flow
// control), 'F' + offset (8) (the memory of the message at offset is no
// longer referenced: the writer may reuse it). The writer never writes a
// range the reader has not freed. Ranges freed above the first
// KeepResident bytes of the file are punched out, so that memory a
// reader held at its peak (a sort holds all its input) goes back to the
// system instead of staying with the file.
//
// # Trust
//
// Both ends check that the peer of the socket runs as the same user
// (SO_PEERCRED): the socket's name is public, but only a process that
// could already read this user's pipes may connect. The reader maps the
// file read-only and takes it only when it is sealed against shrinking
// (F_SEAL_SHRINK), so no access within its size can fault. It copies
// each message's metadata out of shared memory before checking it (the
// flatbuffer, its offsets and the body length), so the layout arrow-go
// decodes is the one that was checked. What the writer can still change
// after that is the body's bytes: values, offsets inside variable-length
// arrays and dictionary indices. Those are checked when a batch is read
// (package ipccheck), but a writer that rewrites them after the check can
// make the reader see other values, or fail where a bounds check catches
// an offset moved past its buffer (a panic of the reading stage, not a
// read outside its memory); a writer is the same
// user's own process, which could as well have sent those values, so this
// is the boundary: a hand-off is trusted as the user's own pipe is, and
// never offered across users.
package pipeio
