// Package arrowfile writes Arrow IPC files whose record batches are
// stored in the order they are written but listed in the footer in an
// order given by a key, so a producer that finishes batches out of order
// can write each as it comes and still have every Arrow reader (which
// reads the batches the footer lists, in its order) see them in key
// order. It is the mechanism under package format's Arrow IPC file
// writer; it knows nothing of datasets, stores or pipelines.
package arrowfile
