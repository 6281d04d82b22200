// Package collect is sluice's one way of putting parallel work back in
// order. It hands the batches of many parallel producers to one
// consumer: in arrival order (the fastest, each batch tagged with its
// place in the dataset), in dataset order with a bounded reorder window,
// or as an Arrow IPC file written in arrival order whose footer lists
// the batches in dataset order (a Sink: every output format is package
// format's). It sits below exec, whose parallel stages map a stream's
// batches through Map, and below package flightsvc, whose client
// collects a flight's endpoints with Collect.
//
// # Parts and positions
//
// The work is cut into parts (a file, a range of row groups, a Flight
// endpoint, one batch of a stream for Map), numbered from 0 in dataset
// order. Each part is produced by
// one producer, which hands its batches over in the part's own dataset
// order. A batch's Pos is its part and its scan.Position; Pos.Compare is
// dataset order. Collect runs the producers, Options.Parallel parts at a
// time, taking parts in order. Start and Map do the same for items of
// any kind (a Flow of what a stage made of each batch, say).
//
// # Orders and memory
//
//   - Arrival: a batch is delivered as soon as it is produced. At most
//     Options.Parallel-1 batches (at least one) wait for the consumer; a
//     producer whose batch finds the queue full waits. With P producers
//     at most two batches per producer are alive (queued, in a
//     producer's hands, or the consumer's), whatever a straggler does.
//   - Dataset: batches are delivered in Pos order. The first part not yet
//     delivered (the head) always streams straight through; batches of
//     later parts wait in a window of Options.Window batches (and
//     Options.WindowBytes bytes). A producer ahead of a full window waits,
//     so a straggler stalls the others instead of growing memory: at most
//     Window + 2 (the head's) batches are queued, plus one in each
//     producer's hands.
//   - An Arrow IPC file Sink (package format): the file keeps its list
//     of record batch blocks in the footer. The sink writes batches as
//     they arrive and, on Close, writes a footer listing them in Pos
//     order (Pos.OrderKey), so every Arrow reader sees dataset order and
//     nothing is buffered.
//
// # Errors and ownership
//
// The first error of any producer ends the stream: Next returns false
// and Err returns it; the other producers are cancelled and everything
// they had queued is released. The consumer owns every batch Next
// delivers and releases it; a producer hands ownership to emit, which
// releases the batch itself when it cannot take it. Close cancels the
// producers and waits for them, so a consumer that stops early leaks no
// goroutine and no memory. An empty stream (no parts, or parts with no
// batches) is a valid result: consumers write the schema and no batch.
//
// # What it is not
//
// Not a scheduler of I/O (package fetch) nor a query engine (package
// exec): it moves finished batches and keeps their order.
package collect
