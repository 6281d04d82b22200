package scan

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// Piece is row groups [Lo, Hi) of one file of a dataset: File is its
// index in the dataset's Files, Lo and Hi row group indices in the file.
// A Flight endpoint and a map task of package fanout each read one.
type Piece struct{ File, Lo, Hi int }

// Pieces cuts the row groups a scan reads (Dataset.Plan, in dataset
// order) into pieces of whole files, or of contiguous row groups of a
// file of at least twice size bytes: n = bytes/size pieces of about equal
// bytes, so each holds size to twice size give or take a row group (one
// is never split). A range may span row groups pruned by statistics; the
// piece's scan prunes them again.
func Pieces(plan []RowGroup, size int64) []Piece {
	var out []Piece
	for len(plan) > 0 {
		n := 1
		for n < len(plan) && plan[n].File == plan[0].File {
			n++
		}
		groups := plan[:n]
		plan = plan[n:]
		var total int64
		for _, g := range groups {
			total += g.Bytes
		}
		parts := max(total/size, 1)
		lo, k, cum := 0, int64(1), int64(0)
		for i, g := range groups {
			cum += g.Bytes
			// Cut once the piece reaches its share of the file; the last
			// piece takes what is left.
			if i == len(groups)-1 || (k < parts && cum*parts >= k*total) {
				out = append(out, Piece{g.File, groups[lo].Index, g.Index + 1})
				lo = i + 1
				k++
			}
		}
	}
	return out
}

// PiecePattern is a pattern naming exactly the file key of the dataset
// pattern prefix+dataset, read with the same partition root the whole
// dataset is read with (so its key=value columns are the same): a glob
// whose fixed directory is that root and which matches key alone. Open
// with it and Options.RowGroups to read a piece while reading one footer
// instead of the dataset's.
func PiecePattern(prefix, dataset, key string) (string, error) {
	full := prefix + dataset
	var root string
	switch i := strings.IndexAny(full, "*?["); {
	case i >= 0:
		root = full[:strings.LastIndex(full[:i], "/")+1]
	case full == key:
		root = full[:strings.LastIndex(full, "/")+1]
	case full == "" || strings.HasSuffix(full, "/"):
		root = full
	default:
		root = full + "/"
	}
	if !strings.HasPrefix(key, prefix) || !strings.HasPrefix(key, root) || key == root {
		return "", fmt.Errorf("file %q is not in dataset %q", key, dataset)
	}
	if full == key && !strings.ContainsAny(key, `*?[\`) {
		// A dataset of one file is its own name, with the same root:
		// no glob, so a store that cannot list (HTTP) reads it too.
		return key, nil
	}
	rel := key[len(root):]
	r, n := utf8.DecodeRuneInString(rel)
	var b strings.Builder
	b.WriteString(root)
	b.WriteString(`[\`)
	b.WriteRune(r)
	b.WriteString(`]`)
	for _, c := range rel[n:] {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	p := b.String()
	if ok, err := path.Match(p, key); err != nil || !ok {
		return "", fmt.Errorf("cannot name %q alone (pattern %q)", key, p)
	}
	return p, nil
}
