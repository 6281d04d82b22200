// Package netaddr says what a listen address reaches: the servers sluice
// starts (serve-flight, serve-s3) bind to loopback unless told otherwise,
// and ask for a token or warn when they are not.
package netaddr

import "net"

// IsLoopback says whether addr (host:port) listens on loopback only:
// localhost, or a loopback IP such as 127.0.0.1 or ::1. A host that is
// empty (every interface), a name other than localhost, or any other IP
// is not; a malformed addr is an error.
func IsLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
