package store

import (
	"context"
	"errors"
	"sync"
)

// Opener opens the store a URL names and gives the URL's key in it, as
// Open does. Callers that open stores their own way (with endpoints,
// credentials or a link model of their own) pass one to the code that
// takes URLs; a store an Opener returns is its caller's to close.
type Opener func(ctx context.Context, url string) (*Store, string, error)

// Set opens each store once, however many URLs name it, and closes them
// all at the end: a command or a pipeline names the same bucket many
// times, and each store holds connections (and, for mem://, the objects).
// It is safe for concurrent use.
type Set struct {
	open Opener
	mu   sync.Mutex
	byID map[string]*Store
}

// NewSet is a set that opens stores with open.
func NewSet(open Opener) *Set {
	return &Set{open: open, byID: map[string]*Store{}}
}

// Open opens url with the set's opener, or gives the store already open
// at the same base; the store is the set's, closed by Close.
func (s *Set) Open(ctx context.Context, url string) (*Store, string, error) {
	return s.add(ctx, "", s.open, url)
}

// With is an Opener whose stores open with open and are shared, under
// the name id, with every other URL that With(id, ...) opens; they close
// with the set. Stores opened differently (through another link model,
// say) must not be shared, so id names how.
func (s *Set) With(id string, open Opener) Opener {
	return func(ctx context.Context, url string) (*Store, string, error) {
		return s.add(ctx, id+"|", open, url)
	}
}

// add opens url and keeps the store, or, when one with the same base is
// open already, closes the new one and gives the old: the base is known
// only once the URL is opened (a path, a region, a bucket).
func (s *Set) add(ctx context.Context, id string, open Opener, url string) (*Store, string, error) {
	st, key, err := open(ctx, url)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id += st.URL("")
	if have, ok := s.byID[id]; ok {
		st.Close()
		return have, key, nil
	}
	s.byID[id] = st
	return st, key, nil
}

// Close closes every store of the set and forgets them.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for id, st := range s.byID {
		errs = append(errs, st.Close())
		delete(s.byID, id)
	}
	return errors.Join(errs...)
}
