package store

import (
	"context"
	"strings"
)

// Level is what a key names at one level of a store's names, as a listing
// (sluice ls, the aws CLI's ls) shows it.
type Level struct {
	// Dir is the level the key names; names are shown relative to it, so
	// that a directory and a bucket prefix with the same objects list
	// alike.
	Dir string
	// Prefixes are the names one level down that hold objects, each
	// ending in /, in key order; none when the listing is recursive or of
	// a glob.
	Prefixes []string
	// Objects are the objects at the level (every one below it when
	// recursive), in key order.
	Objects []ObjectInfo
}

// ListLevel lists key in st a level at a time: a glob's matches (as
// Resolve finds them); a key ending in / or empty, the names directly
// under it; a prefix written without its slash, the directory it names as
// cp and cat take it, unless an object has that name, when (as the aws
// CLI does) the names at key's level that start with it. Recursive lists
// every object below instead of the next level's prefixes. It makes
// several requests and does not retry: retry it as a whole, so that a
// throttled page never leaves a partial listing.
func ListLevel(ctx context.Context, st *Store, key string, recursive bool) (Level, error) {
	if IsGlob(key) {
		r, err := Resolve(ctx, st, key)
		return Level{Dir: r.Root, Objects: r.List}, err
	}
	objs, err := st.List(ctx, key)
	if err != nil {
		return Level{}, err
	}
	dir, match := key, key
	if key != "" && !strings.HasSuffix(key, "/") {
		exact, under := false, false
		for _, o := range objs {
			exact = exact || o.Key == key
			under = under || strings.HasPrefix(o.Key, key+"/")
		}
		if under && !exact {
			dir, match = key+"/", key+"/"
		} else {
			dir = key[:strings.LastIndex(key, "/")+1]
		}
	}
	l := Level{Dir: dir}
	for _, o := range objs {
		if !strings.HasPrefix(o.Key, match) {
			continue
		}
		rel := o.Key[len(dir):]
		if i := strings.IndexByte(rel, '/'); i >= 0 && !recursive {
			// Keys under one prefix are contiguous in key order.
			if p := rel[:i+1]; len(l.Prefixes) == 0 || l.Prefixes[len(l.Prefixes)-1] != p {
				l.Prefixes = append(l.Prefixes, p)
			}
			continue
		}
		l.Objects = append(l.Objects, o)
	}
	return l, nil
}
