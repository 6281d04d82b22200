package freelist

import (
	"runtime"
	"testing"
)

func TestListKeepsAcrossCollections(t *testing.T) {
	var l List[[]byte]
	a := l.Get()
	*a = make([]byte, 1<<20)
	b := l.Get()
	if a == b {
		t.Fatal("Get handed out one value twice")
	}
	l.Put(a)
	runtime.GC()
	runtime.GC()
	if c := l.Get(); c != a || len(*c) != 1<<20 {
		t.Fatal("a value put back did not survive two collections")
	}
	if d := l.Get(); d == a || d == b {
		t.Fatal("Get of an empty list returned a value in use")
	}
}
