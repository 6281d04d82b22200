package store

import "testing"

func TestLoopbackEndpoint(t *testing.T) {
	cases := []struct {
		eps  []string
		want bool
	}{
		{[]string{"http://127.0.0.1:9000"}, true},
		{[]string{"", "http://localhost:9000"}, true},
		{[]string{"http://[::1]:9000"}, true},
		{[]string{"https://s3.eu-west-1.amazonaws.com", "http://127.0.0.1:1"}, false},
		{[]string{"http://10.0.0.5:9000"}, false},
		{[]string{"", ""}, false},
	}
	for _, c := range cases {
		if got := loopbackEndpoint(c.eps...); got != c.want {
			t.Errorf("loopbackEndpoint(%q) = %v, want %v", c.eps, got, c.want)
		}
	}
}
