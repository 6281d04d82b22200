package store

import (
	"context"
	"errors"
	"strings"
)

// Objects are the objects a key names in a store, as Resolve finds them.
type Objects struct {
	// Root is the level the objects sit below: the prefix, the fixed
	// directory of a glob, or the directory of the one object named. A
	// copy keeps each object's path below it; partition directories are
	// read below it.
	Root string
	// One says the key named one object by its whole name; otherwise it
	// named a prefix or a glob, which may hold any number.
	One bool
	// List is the objects, in key order.
	List []ObjectInfo
}

// Resolve finds the objects key names in st. It has one meaning of each
// form of key, for every command and stage that takes URLs:
//
//   - a glob, when key has *, ? or [: the objects path.Match matches ('*'
//     and '?' stay within one path element); Root is the key up to the
//     last / before the first wildcard;
//   - a prefix, when key is empty or ends in /: every object whose key
//     starts with it, at any depth;
//   - otherwise the one object of that key, or, when there is none, the
//     prefix key+"/" (a directory or prefix written without its slash).
//     An object of that name wins over objects under key+"/"; key's
//     siblings (key-2, key.bak) are never included.
//
// Nothing there is an empty List and no error: what "nothing" means is
// the caller's (not found for cat, no dataset for scan). A caller that
// wants fewer objects (scan: only .parquet, no _SUCCESS) filters List.
// Resolve makes one listing and no HEAD; it does not retry (see the
// package documentation).
func Resolve(ctx context.Context, st *Store, key string) (Objects, error) {
	if IsGlob(key) {
		r := Objects{Root: key[:strings.LastIndex(key[:strings.IndexAny(key, "*?[")], "/")+1]}
		err := st.Glob(ctx, key, func(o ObjectInfo) error {
			r.List = append(r.List, o)
			return nil
		})
		return r, err
	}
	if key == "" || strings.HasSuffix(key, "/") {
		objs, err := st.List(ctx, key)
		return Objects{Root: key, List: objs}, err
	}
	// One listing of key answers both questions: the object key, if any,
	// comes first, and key+"/"... follow the siblings that sort before
	// "/" (key-2, key.bak). It stops past key+"/", so a large level of
	// siblings after it is not listed.
	dir := key + "/"
	var under []ObjectInfo
	var one *ObjectInfo
	err := st.Walk(ctx, key, func(o ObjectInfo) error {
		switch {
		case o.Key == key:
			one = &o
			return errStop
		case strings.HasPrefix(o.Key, dir):
			under = append(under, o)
		case o.Key > dir:
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return Objects{}, err
	}
	if one != nil {
		return Objects{Root: key[:strings.LastIndex(key, "/")+1], One: true, List: []ObjectInfo{*one}}, nil
	}
	return Objects{Root: dir, List: under}, nil
}

// ResolveURL opens the store of url with open (the part before any glob,
// see SplitGlob) and resolves the rest of it there; the store is open
// even when resolving fails, and is the caller's as open's stores are.
func ResolveURL(ctx context.Context, open Opener, url string) (*Store, Objects, error) {
	base, rest := SplitGlob(url)
	st, key, err := open(ctx, base)
	if err != nil {
		return nil, Objects{}, err
	}
	r, err := Resolve(ctx, st, key+rest)
	return st, r, err
}

// errStop ends a listing early.
var errStop = errors.New("stop listing")
