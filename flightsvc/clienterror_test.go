package flightsvc

import (
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
