package intlist

import (
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		s     string
		least int
		want  []int
	}{
		{"1,2,4", 1, []int{1, 2, 4}},
		{" 8 , 16", 1, []int{8, 16}},
		{"0", 0, []int{0}},
		{"0", 1, nil},
		{"", 1, nil},
		{"1,,2", 1, nil},
		{"two", 1, nil},
		{"-1", 0, nil},
	} {
		got, ok := Parse(c.s, c.least)
		if !slices.Equal(got, c.want) || ok != (c.want != nil) {
			t.Errorf("Parse(%q, %d) = %v, %v; want %v", c.s, c.least, got, ok, c.want)
		}
	}
}
