// Package transfer moves whole objects at the speed of the link: between
// any two stores (Copy), and out of a store into a writer, in order (Cat).
// It also does the other whole-object chores of sluice's commands, each
// request retried: listing a level (List, WriteListing: sluice ls),
// deleting an object or a prefix (Remove: sluice rm), and finding and
// aborting the multipart uploads killed writers left (Uploads,
// AbortUpload: sluice uploads).
//
// Objects are read as parallel ranged GETs of Window bytes through
// package fetch, under its memory budget, and a copy writes each object
// through the destination's writer (multipart for a large one), several
// objects at once. Slow writes slow the reads rather than grow memory.
// A copied object becomes visible only once all of it is written, from
// one version of its source.
//
// It is not a sync tool (nothing is compared or skipped) and does not
// decode anything: for Arrow batches see packages scan and exec. What a
// URL names is store.Resolve's; Jobs turns that into destination names.
package transfer
