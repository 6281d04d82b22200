package flightsvc

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-data/sluice/store"
)

func TestClientErrorClassifies(t *testing.T) {
	for _, c := range []struct {
		code codes.Code
		want error
	}{
		{codes.NotFound, store.ErrNotFound},
		{codes.PermissionDenied, store.ErrPermission},
		{codes.Unauthenticated, store.ErrPermission},
	} {
		if err := ClientError("grpc://h:1", status.Error(c.code, "x")); !errors.Is(err, c.want) {
			t.Errorf("%v: %v, want %v", c.code, err, c.want)
		}
	}
	err := ClientError("grpc://h:1", status.Error(codes.Unavailable, `connection error: desc = "transport: dial tcp 127.0.0.1:1: connect: connection refused"`))
	if want := "the Flight service at grpc://h:1 is unreachable: connection refused (is sluice serve"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("unavailable: %q, want %q...", err, want)
	}
	if err := status.Error(codes.InvalidArgument, "bad"); ClientError("grpc://h:1", err) != err {
		t.Error("InvalidArgument should be returned as it is")
	}
}

// An address without a port is a caller's mistake, not an unreachable
// service on port 443.
func TestDialWantsAPort(t *testing.T) {
	for _, addr := range []string{"grpc://127.0.0.1", "127.0.0.1", "grpc+tcp://h:"} {
		if _, err := Dial(addr, ""); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "HOST:PORT") {
			t.Errorf("Dial(%q): %v", addr, err)
		}
	}
	_, err := GetTo(context.Background(), "grpc://127.0.0.1", "x", GetToOptions{})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("GetTo without a port: %v", err)
	}
}
