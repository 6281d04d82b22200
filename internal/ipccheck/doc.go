// Package ipccheck checks Arrow IPC input from outside (a stage's
// standard input, an Arrow file, a Flight stream) before and after
// arrow-go reads it, so that a corrupt or hostile input is an error and
// not a panic or an allocation that ends the process.
package ipccheck
