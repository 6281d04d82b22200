package flightsvc

import (
	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/internal/size"
)

// ServerSettings are ServerOptions as sluice serve-flight's command line
// spells them: sizes as text (64MiB). A Go caller configuring a server
// from text (its own flags, a config file) wants the same checks; Options
// reads them, and its errors match ErrInvalid and name the flags
// (--memory, --piece-size), the terms the text was written in.
type ServerSettings struct {
	// Token is ServerOptions.Token. Serving beyond loopback without one
	// is the caller's to refuse or to fill with NewToken, as sluice
	// serve-flight does (and prints it).
	Token string
	// Memory is ServerOptions.Memory as a size, at least 1MiB.
	Memory string
	// Concurrency is ServerOptions.Concurrency, at least 1.
	Concurrency int
	// PieceSize is ServerOptions.PieceBytes as a size, at least 1B.
	PieceSize string
	// Catalog is ServerOptions.Catalog.
	Catalog string
}

// Bind defines sluice serve-flight's flags for the token, the streams'
// memory and concurrency and the endpoints' size on fs, bound to s's
// fields, with their defaults. They are defined here, beside the checks
// that name them, as plan.BindScan does a scan's; the address to listen
// on is the caller's.
func (s *ServerSettings) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&s.Token, "token", "", "bearer token to require (default: none on loopback, else generated)")
	fs.StringVar(&s.Memory, "memory", "64MiB", "memory each stream's scan holds: bytes fetched ahead of decoding and decoding's buffers (at least one row group's worth)")
	fs.IntVar(&s.Concurrency, "concurrency", 2, "row groups one stream decodes at once (an ordered stream holds at most that many ahead of the one due)")
	fs.StringVar(&s.PieceSize, "piece-size", "64MiB", "bytes read per endpoint a large file is cut into (whole row groups)")
	fs.StringVar(&s.Catalog, "catalog", "", "Iceberg REST catalog URI: a dataset NAMESPACE.TABLE no root holds is its table, served when its files are under a root")
}

// Options reads and checks s into the ServerOptions it asks for: the
// first mistake, in flag terms, or the options; the caller adds Mem and
// Metrics.
func (s ServerSettings) Options() (ServerOptions, error) {
	o := ServerOptions{Token: s.Token, Concurrency: s.Concurrency, Catalog: s.Catalog}
	var err error
	if o.Memory, err = size.Parse(s.Memory); err != nil {
		return o, invalidf("--memory: %v", err)
	}
	if o.Memory < 1<<20 {
		return o, invalidf("--memory %s: want at least 1MiB", s.Memory)
	}
	if s.Concurrency < 1 {
		return o, invalidf("--concurrency %d: want at least 1", s.Concurrency)
	}
	if o.PieceBytes, err = size.Parse(s.PieceSize); err != nil {
		return o, invalidf("--piece-size: %v", err)
	}
	if o.PieceBytes < 1 {
		return o, invalidf("--piece-size: want at least 1B")
	}
	return o, nil
}
