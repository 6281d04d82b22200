package expr

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLiteralLike checks the matcher of patterns without _ against the
// regular expression the pattern means, over every short string of a
// small alphabet and many random patterns (prefixes, suffixes, parts
// that overlap or repeat).
func TestLiteralLike(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var words []string
	var grow func(string)
	grow = func(s string) {
		words = append(words, s)
		if len(s) < 6 {
			for _, c := range []string{"a", "b", "é"} {
				grow(s + c)
			}
		}
	}
	grow("")
	checks, matches := 0, 0
	for range 400 {
		var p strings.Builder
		for range r.IntN(7) {
			p.WriteString([]string{"a", "b", "%", "é", "ab"}[r.IntN(5)])
		}
		pattern := p.String()
		fast, slow := literalLike(pattern), likeRegexp(pattern)
		for _, w := range words {
			got, want := fast(w), slow.MatchString(w)
			if got != want {
				t.Fatalf("%q like %q: %v, want %v", w, pattern, got, want)
			}
			checks++
			if want {
				matches++
			}
		}
	}
	if matches == 0 || matches == checks {
		t.Fatalf("%d of %d matched: the cases do not tell matchers apart", matches, checks)
	}
	for _, c := range []struct {
		s, p string
		want bool
	}{
		{"a", "a%a", false},
		{"aa", "a%a", true},
		{"xspecial requestsy", "%special%requests%", true},
		{"requests special", "%special%requests%", false},
		{"", "%", true},
		{"", "", true},
		{"x", "", false},
	} {
		if got := likeMatcher(c.p)(c.s); got != c.want {
			t.Errorf("%q like %q: %v, want %v", c.s, c.p, got, c.want)
		}
	}
}
