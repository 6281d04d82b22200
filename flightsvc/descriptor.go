package flightsvc

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/sluice-data/sluice/iceberg"
)

// Request is what a Flight descriptor asks the service for. As a CMD
// descriptor it is this JSON object:
//
//		{"dataset": "lineitem/", "columns": ["l_orderkey", "l_tax"], "filter": "l_tax > 0.05", "ordered": true}
//
//	  - dataset (required): a pattern under one of the service's roots, as
//	    scan.Open takes it: a prefix (every *.parquet object under it), one
//	    object, or a glob; or an Iceberg table, by its location (a prefix
//	    holding metadata/) or a metadata file (its snapshot then). A name
//	    ListFlights lists is such a pattern. The roots are tried in the
//	    order the service was given them; the first that has it serves it;
//	    then, with ServerOptions.Catalog, NAMESPACE.TABLE is the catalog's.
//	  - columns: the columns to read, in order; absent or null means all,
//	    [] means none (batches carry only a row count).
//	  - filter: a filter in sluice's expression language (package expr),
//	    see scan.Options.Filter.
//	  - ordered: true asks for FlightInfo.ordered: endpoints listed in
//	    dataset order and each endpoint's batches streamed in dataset
//	    order. false lets each endpoint stream its batches as they are
//	    decoded; every batch still carries its position in app_metadata.
//
// A PATH descriptor ["lineitem"] is the same as {"dataset": "lineitem",
// "ordered": true}.
type Request struct {
	Dataset string   `json:"dataset"`
	Columns []string `json:"columns,omitempty"`
	Filter  string   `json:"filter,omitempty"`
	Ordered bool     `json:"ordered,omitempty"`
}

// Descriptor is the CMD descriptor of a request.
func (r Request) Descriptor() *flight.FlightDescriptor {
	b, _ := json.Marshal(requestJSON(r))
	return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b}
}

// requestJSON keeps an empty, non-nil column list as [] on the wire.
type requestJSON struct {
	Dataset string   `json:"dataset"`
	Columns []string `json:"columns"`
	Filter  string   `json:"filter,omitempty"`
	Ordered bool     `json:"ordered,omitempty"`
}

// ParseDescriptor reads a CMD (JSON Request) or PATH descriptor.
func ParseDescriptor(d *flight.FlightDescriptor) (Request, error) {
	if d == nil {
		return Request{}, fmt.Errorf("no descriptor")
	}
	switch d.Type {
	case flight.DescriptorPATH:
		if len(d.Path) == 0 {
			return Request{}, fmt.Errorf("empty path descriptor")
		}
		return Request{Dataset: strings.Join(d.Path, "/"), Ordered: true}, nil
	case flight.DescriptorCMD:
		var r Request
		dec := json.NewDecoder(strings.NewReader(string(d.Cmd)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return Request{}, fmt.Errorf("command descriptor is not a request: %v (want {\"dataset\": ..., \"columns\": [...], \"filter\": ..., \"ordered\": true})", err)
		}
		if r.Dataset == "" {
			return Request{}, fmt.Errorf("command descriptor names no dataset")
		}
		return r, nil
	}
	return Request{}, fmt.Errorf("unsupported descriptor type %v", d.Type)
}

// ticket is what one endpoint's Ticket holds: the request, the root, the
// piece of work to read (row groups [Lo, Hi) of one file, by their
// indices in the file), and a hash of the schema the FlightInfo
// announced, which the piece must produce.
type ticket struct {
	V       int      `json:"v"`
	Root    int      `json:"root"`
	Dataset string   `json:"dataset"`
	Columns []string `json:"columns"`
	Filter  string   `json:"filter,omitempty"`
	Ordered bool     `json:"ordered,omitempty"`
	Part    int      `json:"part"`
	File    int      `json:"file"`
	Key     string   `json:"key"`
	Lo      int      `json:"rg_lo"`
	Hi      int      `json:"rg_hi"`
	Schema  string   `json:"schema"`
	// Table, for an endpoint of an Iceberg table, is its metadata file's
	// key in the root's store, and Task the data file to read, with its
	// deletes (the row group range is then unused).
	Table string        `json:"table,omitempty"`
	Task  *iceberg.Task `json:"task,omitempty"`
}

// ticketVersion 2 added the row group range: a version 1 ticket, which
// meant a whole file, is refused rather than guessed at.
const ticketVersion = 2

func (t ticket) encode() []byte {
	b, _ := json.Marshal(t)
	return b
}

func parseTicket(b []byte) (ticket, error) {
	var t ticket
	if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("not a sluice ticket: %v", err)
	}
	if t.V != ticketVersion {
		return t, fmt.Errorf("ticket version %d, want %d", t.V, ticketVersion)
	}
	if t.Table != "" {
		if t.Task == nil {
			return t, fmt.Errorf("ticket names table %s and no data file of it", t.Table)
		}
		return t, nil
	}
	if t.Lo < 0 || t.Hi <= t.Lo {
		return t, fmt.Errorf("ticket asks for row groups [%d, %d) of %s: not a range", t.Lo, t.Hi, t.Key)
	}
	return t, nil
}
