// Package pipeio is the hand-off between adjacent sluice stages: when both
// ends of a pipe are sluice stages that allow it, the writer puts each
// Arrow IPC message in a memory file shared with the reader and sends
// only its place, over a Unix socket named after the pipe; the reader's
// batches are then the writer's bytes, not copies out of a pipe into
// fresh pages. Any other reader gets the plain stream, because the writer
// switches only to a reader that connected to it, and a reader only
// connects to a writer that listens. Linux only; elsewhere Listen and
// Dial return nil and every pipe carries the plain stream.
//
// Nothing here runs unless a caller asks: package exec hands off only when
// its Options say so, which the sluice command does for its stages
// (SLUICE_PIPE=plain turns it off). A library reading or writing a pipe
// with exec opens no socket and maps no memory.
//
// # Protocol
//
// Every stream starts plain, in the pipe. The writer listens on the
// abstract socket Name(f), SOCK_SEQPACKET, before it writes its first
// byte; the reader dials it once it has read a byte. So a reader finds
// a sluice writer listening whatever order the two started in, and no
// end ever waits for the other: a reader that finds nothing listening
// (any other writer) reads the pipe, and a writer that no one dialed
// (any other reader) writes the pipe.
//
// At each message boundary after the first, the writer takes a
// connection if one is waiting (without waiting for one), sends the
// hello on it, writes SwitchMarker to the pipe, and waits for the
// reader's answer. The reader reads the plain messages before the
// marker, then takes the hello and answers "OK", after which both go on
// through the socket, or "NO" (or closes the socket), after which both
// go on in the pipe, after the marker: the two ends agree on where each
// message is. Every message the writer starts once the reader's dial,
// made right after its first read, is queued is handed off: which ones
// go plain depends only on how far the reader has read, as what sits in
// a pipe's buffer does, and a stream of more than the pipe's buffer is
// always handed off, whichever process ran first. Only the first connection is taken. A stream that ends
// before any is taken ends in the pipe (its end-of-stream marker there);
// a reader that dialed closes its connection then, and the writer stops
// listening at its end.
//
// The socket carries packets, from the writer:
//
//	hello  "SLUICE1\x00" + size (8 bytes, little-endian), with the memory file (SCM_RIGHTS)
//	'M' + offset (8) + length (8)   a message: the IPC stream's bytes for it
//	'E'                             the end-of-stream marker
//
// and from the reader: "OK" or "NO" (hello taken or not), 'T' (a message
// taken, for flow control: the writer keeps at most 8 MiB of messages
// untaken, but always two), 'F' + offset (8) (the memory of the message at
// offset is no longer referenced: the writer may reuse it). The writer
// never writes a range the reader has not freed. Ranges freed above the
// first KeepResident bytes of the file are punched out, so that memory a
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
