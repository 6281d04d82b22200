package flightsvc

import (
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
)

// FuzzParseDescriptor: whatever a Flight client sends as a command, the
// server gets a request naming a dataset or an error, never a panic, and
// a request it accepts survives its own encoding.
func FuzzParseDescriptor(f *testing.F) {
	for _, s := range []string{
		`{"dataset":"taxi/"}`,
		`{"dataset":"lineitem","columns":["l_shipdate"],"filter":"l_quantity < 10","ordered":true}`,
		`{"dataset":""}`, `{"dataset":"x","extra":1}`, `[]`, `{`, ``, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, cmd []byte) {
		r, err := ParseDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd})
		if err != nil {
			return
		}
		if r.Dataset == "" {
			t.Fatalf("%q: accepted with no dataset", cmd)
		}
		again, err := ParseDescriptor(r.Descriptor())
		if err != nil || !reflect.DeepEqual(normal(again), normal(r)) {
			t.Fatalf("%q: %+v encodes to a request read back as %+v, %v", cmd, r, again, err)
		}
	})
}

// normal treats no columns and an empty column list alike.
func normal(r Request) Request {
	if len(r.Columns) == 0 {
		r.Columns = nil
	}
	return r
}

// FuzzParseTicket: a ticket from a client is a valid row group range of
// the current version or an error, and an accepted one round-trips.
func FuzzParseTicket(f *testing.F) {
	good := ticket{V: ticketVersion, Dataset: "taxi/", Columns: []string{"a"}, Key: "taxi/p-0.parquet", Lo: 2, Hi: 5, Schema: "abc"}
	f.Add(good.encode())
	for _, s := range []string{`{"v":1,"rg_lo":0,"rg_hi":1}`, `{"v":2,"rg_lo":3,"rg_hi":3}`, `{"v":2,"rg_lo":-1,"rg_hi":2}`, `{}`, `x`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tk, err := parseTicket(b)
		if err != nil {
			return
		}
		if tk.V != ticketVersion || tk.Lo < 0 || tk.Hi <= tk.Lo {
			t.Fatalf("%q: accepted %+v", b, tk)
		}
		again, err := parseTicket(tk.encode())
		if err != nil || !reflect.DeepEqual(again, tk) {
			t.Fatalf("%q: %+v read back as %+v, %v", b, tk, again, err)
		}
	})
}
