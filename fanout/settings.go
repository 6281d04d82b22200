package fanout

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/internal/size"
)

// Settings are a fan-out's sizes and choices as sluice run's flags spell
// them: sizes as text (64MiB), the join by name. A Go caller taking them
// as text (its own flags, a config file) wants the same reading; Apply
// reads them into Options, and its errors name the flags (--spread,
// --broadcast), the terms the person wrote in.
type Settings struct {
	// Spread is Options.Spread (--spread).
	Spread int
	// PieceSize is Options.PieceBytes as a size, at least 1B (--piece-size).
	PieceSize string
	// Memory, when set, is Options.Memory as a size above zero (--memory).
	Memory string
	// Broadcast is Options.Broadcast as a size; 0 is never (--broadcast).
	Broadcast string
	// Join is Options.Join, named: JoinAuto, JoinBroadcast or
	// JoinPartitioned (--join).
	Join string
}

// Bind defines sluice run's flags for a fan-out's sizes and join on fs,
// bound to s's fields, with their defaults. They are defined here,
// beside the checks that name them, so that every command that takes
// them defines them once, as plan.BindScan does a scan's.
func (s *Settings) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&s.Memory, "memory", "", "memory each process (each worker with --workers) holds, Go heap included; sorts, joins and aggregations spill past it (default: RAM/4, 256MiB at least; sluice help fanout)")
	fs.StringVar(&s.PieceSize, "piece-size", "64MiB", "bytes of row groups per map task (larger files are cut)")
	fs.IntVar(&s.Spread, "spread", 0, "key prefixes a phase's objects are spread over, for S3's per-prefix request rates (0: by tasks, up to 256)")
	fs.StringVar(&s.Broadcast, "broadcast", "256MiB", "with --workers: the largest join right side read once and written for every map task (0: none)")
	fs.StringVar(&s.Join, "join", JoinAuto, "with --workers: broadcast, partitioned (both sides shuffled) or auto (sluice help fanout)")
}

// Apply reads s into o: the first mistake, in flag terms, or nil.
func (s Settings) Apply(o *Options) error {
	if err := checkSpread(s.Spread); err != nil {
		return err
	}
	piece, err := size.Parse(s.PieceSize)
	if err != nil || piece < 1 {
		return fmt.Errorf("--piece-size %q: want a size such as 64MiB", s.PieceSize)
	}
	o.Spread, o.PieceBytes = s.Spread, piece
	if s.Memory != "" {
		if o.Memory, err = s.MemoryBytes(); err != nil {
			return err
		}
	}
	if o.Broadcast, err = size.Parse(s.Broadcast); err != nil || o.Broadcast < 0 {
		return fmt.Errorf("--broadcast %q: a size such as 64MiB, or 0 for never", s.Broadcast)
	}
	if o.Broadcast == 0 {
		o.Broadcast = -1
	}
	if s.Join == "" {
		return joinError(s.Join) // a name is wanted; Options take "" for auto
	}
	if err := checkJoin(s.Join); err != nil {
		return err
	}
	o.Join = s.Join
	return nil
}

// MemoryBytes reads Memory: 0 when it is unset, else a size above zero.
// It is the budget of a run in one process (exec.Options.Memory) as Apply
// makes it a fan-out's, so that both read --memory alike.
func (s Settings) MemoryBytes() (int64, error) {
	if s.Memory == "" {
		return 0, nil
	}
	m, err := size.Parse(s.Memory)
	if err != nil || m <= 0 {
		return 0, fmt.Errorf("--memory %q: a size such as 512MiB", s.Memory)
	}
	return m, nil
}

// Validate refuses the options Run would otherwise take for others: a
// Spread past MaxSpread (it would be cut to it) or below zero (taken for
// the default), a Join it does not know (taken for JoinAuto). Run calls
// it, its error then matching exec.ErrInvalid.
func (o Options) Validate() error {
	if err := checkSpread(o.Spread); err != nil {
		return err
	}
	if o.Join != "" {
		return checkJoin(o.Join)
	}
	return nil
}

func checkSpread(n int) error {
	if n < 0 || n > MaxSpread {
		return fmt.Errorf("--spread %d: want 0 (one prefix a task) to %d", n, MaxSpread)
	}
	return nil
}

func checkJoin(j string) error {
	switch j {
	case JoinAuto, JoinBroadcast, JoinPartitioned:
		return nil
	}
	return joinError(j)
}

func joinError(j string) error { return fmt.Errorf("--join %q: auto, broadcast or partitioned", j) }
