package netaddr

import "testing"

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8815": true,
		"127.1.2.3:0":    true,
		"[::1]:9000":     true,
		"localhost:80":   true,
		"0.0.0.0:8815":   false,
		":8815":          false,
		"[::]:9000":      false,
		"10.0.0.5:1":     false,
		"example.com:80": false,
	} {
		got, err := IsLoopback(addr)
		if err != nil || got != want {
			t.Errorf("IsLoopback(%q) = %v, %v; want %v", addr, got, err, want)
		}
	}
	for _, bad := range []string{"127.0.0.1", "nonsense", ""} {
		if _, err := IsLoopback(bad); err == nil {
			t.Errorf("IsLoopback(%q): no error", bad)
		}
	}
}
