package fanout

import (
	"fmt"
	"slices"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/plan"
)

// broadcastJoins reads the right side of each join (and the pipeline of
// each let) the map tasks run
// once, here, and writes it to the job's store as an Arrow IPC stream; the
// plan the workers get reads that object instead, so every task reads
// the side's result rather than computing it again (its scan, filter,
// aggregation). The object's size, measured, decides: a side larger than
// Options.Broadcast is left for each task to read itself (and to spill
// past its memory). Right and full joins run at the driver, in one
// process: a broadcast would send their unmatched right rows from every
// task.
func (d *driver) broadcastJoins(p *plan.Plan, pl *cut) (*plan.Plan, error) {
	force := d.opts.Join == JoinBroadcast
	if d.opts.Broadcast < 0 && !force {
		return p, nil
	}
	mp := pl.phases[pl.mapPhase()]
	var sent *plan.Plan
	for i := mp.From; i < mp.To; i++ {
		var other *plan.Plan
		var with func(*plan.Plan) plan.Stage
		switch st := p.Stages[1+i].(type) {
		case *plan.Join:
			if !plan.PerBatch(st) {
				continue
			}
			other = st.Other
			with = func(o *plan.Plan) plan.Stage { c := *st; c.Other = o; return &c }
		case *plan.Let:
			other = st.Other
			with = func(o *plan.Plan) plan.Stage { c := *st; c.Other = o; return &c }
		default:
			continue
		}
		key := fmt.Sprintf("broadcast-%d.arrows", i)
		url := d.jobURL + key
		write, err := plan.Lookup("write").Build([]string{"--format", "arrows", url})
		if err != nil {
			return nil, err
		}
		side := &plan.Plan{Stages: append(slices.Clone(other.Stages), write)}
		pipe, err := exec.Compile(side, exec.Env{ScanStats: d.opts.Env.ScanStats, Link: d.opts.Env.Link})
		if err != nil {
			return nil, fmt.Errorf("%s (right side): %w", p.Stages[1+i].Name(), err)
		}
		if err := exec.Run(d.ctx, pipe, exec.Options{Open: d.opts.Open, Mem: d.opts.Mem, Workers: d.opts.Threads}); err != nil {
			return nil, fmt.Errorf("join (right side): %w", err)
		}
		info, err := d.j.st.Stat(d.ctx, d.j.prefix+key)
		if err != nil {
			return nil, fmt.Errorf("join (right side): %w", err)
		}
		if info.Size > d.opts.Broadcast && !force {
			d.logf("join %d: the right side is %d bytes, more than --broadcast %d: each map task reads it itself", i, info.Size, d.opts.Broadcast)
			continue
		}
		scan, err := plan.Lookup("scan").Build([]string{url})
		if err != nil {
			return nil, err
		}
		if sent == nil {
			sent = &plan.Plan{Stages: slices.Clone(p.Stages)}
		}
		sent.Stages[1+i] = with(&plan.Plan{Stages: []plan.Stage{scan}})
		d.logf("%s %d: the right side broadcast, %d bytes written once for every map task", p.Stages[1+i].Name(), i, info.Size)
	}
	if sent == nil {
		return p, nil
	}
	return sent, nil
}
