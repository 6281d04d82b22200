package arrowtest

// FailAfter is an io.Writer that takes N bytes, then fails every write
// with Err: a disk that fills up part way through a file.
type FailAfter struct {
	N   int
	Err error
}

func (f *FailAfter) Write(p []byte) (int, error) {
	if f.N < len(p) {
		return 0, f.Err
	}
	f.N -= len(p)
	return len(p), nil
}
