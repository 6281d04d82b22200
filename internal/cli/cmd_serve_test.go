package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/flightsvc"
	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/internal/arrowtest"
)

// startServe runs `sluice serve` until the test ends and returns its
// grpc:// address.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	lines := startDaemon(t, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	for _, l := range lines {
		if m := regexp.MustCompile(`grpc://[0-9.]+:[0-9]+`).FindString(l); m != "" {
			return m
		}
	}
	t.Fatalf("serve printed no address: %q", lines)
	return ""
}

// flightSum fetches a dataset with a plain arrow-go Flight client:
// GetFlightInfo, then every endpoint's DoGet in parallel, the batches put
// in dataset order by the position in their app_metadata.
func flightSum(t *testing.T, addr, cmd string) (arrowtest.Checksum, int) {
	t.Helper()
	client, err := flightsvc.Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	info, err := client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(cmd)})
	if err != nil {
		t.Fatal(err)
	}
	items := arrowtest.DoGets(t, client, info, func(_ *flight.FlightEndpoint, meta []byte) (collect.Pos, error) {
		return collect.UnmarshalPos(meta)
	})
	slices.SortFunc(items, func(a, b arrowtest.Got[collect.Pos]) int { return a.Key.Compare(b.Key) })
	var c arrowtest.Checksum
	for _, it := range items {
		c.Add(it.Rec)
		it.Rec.Release()
	}
	return c, len(info.Endpoint)
}

// TestServeGetEndToEnd serves a generated dataset and fetches it with a
// plain arrow-go Flight client (parallel DoGets) and with `sluice get`
// into every output format: all hold the same rows in the same order.
func TestServeGetEndToEnd(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if r := sluice(t, nil, "gen", "taxi", "--rows", "60000", "--files", "5", "--row-group-rows", "5000", "--out", filepath.Join(data, "taxi"), "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	addr := startServe(t, data)
	// The same data cut into an endpoint per few row groups: every
	// output holds the same rows in the same order.
	piecedAddr := startServe(t, data, "--piece-size", "1KiB")

	for _, c := range []struct {
		name, cmd string
		args      []string
	}{
		{"all", `{"dataset":"taxi/"}`, nil},
		{"projected and filtered", `{"dataset":"taxi/","columns":["fare_amount","passenger_count"],"filter":"passenger_count > 2"}`,
			[]string{"--columns", "fare_amount,passenger_count", "--filter", "passenger_count > 2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, endpoints := flightSum(t, addr, c.cmd)
			if endpoints != 5 || want.Rows == 0 {
				t.Fatalf("%d endpoints, %d rows", endpoints, want.Rows)
			}
			t.Logf("Flight client, %d parallel DoGets: %v", endpoints, want)
			pieced, piecedEndpoints := flightSum(t, piecedAddr, c.cmd)
			if piecedEndpoints <= endpoints || pieced != want {
				t.Fatalf("served in pieces: %d endpoints, %v; want more than %d, %v", piecedEndpoints, pieced, endpoints, want)
			}
			for _, o := range []struct {
				name   string
				format format.Format
				order  string
				addr   string
			}{
				{"out.arrow", format.IPCFile, "", addr},
				{"out.arrows", format.IPCStream, "dataset", addr},
				{"out.parquet", format.Parquet, "dataset", addr},
				{"-", format.IPCStream, "dataset", addr},
				{"out.arrow", format.IPCFile, "", piecedAddr},
				{"out.arrows", format.IPCStream, "dataset", piecedAddr},
				{"out.parquet", format.Parquet, "dataset", piecedAddr},
				{"-", format.IPCStream, "dataset", piecedAddr},
			} {
				args := append([]string{"get", o.addr, "taxi/", "-o", o.name}, c.args...)
				if o.order != "" {
					args = append(args, "--order", o.order)
				}
				out := filepath.Join(dir, o.name)
				if o.name != "-" {
					args[4] = out
				}
				r := sluice(t, nil, args...)
				if r.code != 0 {
					t.Fatalf("get -o %s: %+v", o.name, r)
				}
				b := []byte(r.stdout)
				if o.name != "-" {
					var err error
					if b, err = os.ReadFile(out); err != nil {
						t.Fatal(err)
					}
				}
				if got := arrowtest.ReadChecksum(t, b, o.format.Name()); got != want {
					t.Errorf("get %s -o %s: %v, Flight client %v", o.addr, o.name, got, want)
				}
			}
			// sluice scan of the same data: the IPC file by its footer, and
			// streams and Parquet with --order dataset.
			for _, o := range []struct {
				name   string
				format format.Format
			}{{"scan.arrow", format.IPCFile}, {"scan.arrows", format.IPCStream}, {"scan.parquet", format.Parquet}} {
				out := filepath.Join(dir, o.name)
				args := append([]string{"scan", filepath.Join(data, "taxi"), "-o", out, "--order", "dataset", "-q"}, c.args...)
				if r := sluice(t, nil, args...); r.code != 0 {
					t.Fatalf("scan -o %s: %+v", o.name, r)
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				if got := arrowtest.ReadChecksum(t, b, o.format.Name()); got != want {
					t.Errorf("scan -o %s: %v, Flight client %v", o.name, got, want)
				}
			}
		})
	}

	for _, a := range []string{addr, piecedAddr} {
		r := sluice(t, nil, "get", a, "taxi/", "--order", "arrival")
		if r.code != 0 || r.stdout != "60000 rows\n" {
			t.Fatalf("get %s without -o: %+v", a, r)
		}
	}
	assertCleanFailure(t, sluice(t, nil, "get", addr, "nosuch/"), exitNotFound, "nosuch")
	assertCleanFailure(t, sluice(t, nil, "get", addr, "taxi/", "--filter", "nope = 1"), exitUsage, "nope")
	assertCleanFailure(t, sluice(t, nil, "get", addr, "taxi/", "-o", filepath.Join(dir, "x.txt")), exitUsage, ".jsonl")
	assertCleanFailure(t, sluice(t, nil, "get", addr, "taxi/", "--order", "random"), exitUsage, "arrival or dataset")
	assertCleanFailure(t, sluice(t, nil, "scan", data, "--order", "random"), exitUsage, "arrival or dataset")
}

// TestGetFailureLeavesNothing: a file whose data is corrupt (its footer
// is fine, so the flight is planned) fails its endpoint mid-dataset; get
// exits non-zero, writes no output file and no stream end.
func TestGetFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if r := sluice(t, nil, "gen", "taxi", "--rows", "40000", "--files", "4", "--row-group-rows", "5000", "--out", filepath.Join(data, "taxi"), "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	bad := filepath.Join(data, "taxi", "part-00002.parquet")
	b, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	// Garble the data pages of the second half, keeping the footer.
	for i := len(b) / 2; i < len(b)-8*1024 && i < len(b)/2+8*1024; i++ {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := startServe(t, data)
	for _, o := range []string{"out.arrow", "out.parquet", "out.arrows"} {
		out := filepath.Join(dir, o)
		r := sluice(t, nil, "get", addr, "taxi/", "-o", out)
		if r.code != exitError {
			t.Errorf("get -o %s over a corrupt file: exit %d, want %d (%+v)", o, r.code, exitError, r)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("get -o %s failed but left the file behind (%v)", o, err)
		}
	}
	r := sluice(t, nil, "get", addr, "taxi/", "-o", "-")
	if r.code != exitError {
		t.Errorf("get -o - over a corrupt file: exit %d", r.code)
	}
	if bytes.HasSuffix([]byte(r.stdout), []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}) {
		t.Errorf("get -o - failed but ended its stream as if complete")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("failed gets left files: %v", entries)
	}
}

func TestServeGetHelp(t *testing.T) {
	assertExamples(t, "serve", "get")
	for _, size := range []string{"0", "lots"} {
		assertCleanFailure(t, sluice(t, nil, "serve", "--addr", "127.0.0.1:0", "--piece-size", size, t.TempDir()), exitUsage, "--piece-size")
	}
}

// TestServeToken: with --token, calls need it.
func TestServeToken(t *testing.T) {
	dir := t.TempDir()
	if r := sluice(t, nil, "gen", "taxi", "--rows", "1000", "--files", "1", "--out", filepath.Join(dir, "taxi"), "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	addr := startServe(t, dir, "--token", "s3cret")
	assertCleanFailure(t, sluice(t, nil, "get", addr, "taxi/"), exitPermission, "Unauthenticated")
	assertCleanFailure(t, sluice(t, []string{"SLUICE_TOKEN=nope"}, "get", addr, "taxi/"), exitPermission, "Unauthenticated")
	if r := sluice(t, []string{"SLUICE_TOKEN=s3cret"}, "get", addr, "taxi/"); r.code != 0 || r.stdout != "1000 rows\n" {
		t.Fatalf("get with the token: %+v", r)
	}
}
