package fanout

import (
	"regexp"
	"strings"
	"testing"
)

// TestIsToken: isToken accepts what ^[a-z0-9-]{1,64}$ does.
func TestIsToken(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
	cases := []string{"", "a", "a-1", "A", "a_b", "a.b", "é", " a", "a\n", "--", strings.Repeat("x", 64), strings.Repeat("x", 65), "abc/../x", "0"}
	for _, s := range cases {
		if got, want := isToken(s), re.MatchString(s); got != want {
			t.Errorf("isToken(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzIsToken(f *testing.F) {
	re := regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
	f.Add("attempt-1")
	f.Add("Bad Token")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isToken(s), re.MatchString(s); got != want {
			t.Fatalf("isToken(%q) = %v, want %v", s, got, want)
		}
	})
}
