package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/sluice-data/sluice/sim"
)

// The scale model: from the records of a measured run, what W workers
// would get. Each worker is assumed to move what one measured worker
// moved (taken from the run with the most worker processes, so what
// scaling to that count cost is in the figure) and to make requests at the
// rate it made them, retries included. Nothing else is shared but the
// store's per-prefix request rates: W workers make W times the requests,
// spread evenly over the prefixes, and a prefix admits no more than its
// limit, which caps what it can move at limit x bytes per request.
//
// What it leaves out: any aggregate limit of the store or the network
// beyond the prefix rates (S3 publishes none; PyWren's runs scaled
// linearly to thousands of workers), S3 raising a prefix's rate under
// sustained load, and stragglers, which a larger run has more of.

// PredictConfig says what to predict.
type PredictConfig struct {
	// Workers are the worker counts to predict for.
	Workers []int
	// Prefixes is how many key prefixes the predicted run spreads its
	// requests over, evenly (default 1).
	Prefixes int
	// ReqWrite and ReqRead are the requests a second one prefix admits
	// (default S3's: sim.S3ReqWrite, sim.S3ReqRead).
	ReqWrite, ReqRead float64
	// PrefixDepth says what a prefix of a measured key is (see
	// sim.KeyPrefix), for the measured per-prefix rates.
	PrefixDepth int
}

// Measured is what the model takes from the records, per kind.
type Measured struct {
	Kind Kind `json:"kind"`
	// Processes is the worker processes of the runs used, Runs how many
	// runs (cells) there were.
	Processes int `json:"processes"`
	Runs      int `json:"runs"`
	// WorkerMiBps is one worker's share of the aggregate steady MiB/s
	// (median over the runs); WorkerReqps the requests a second that takes,
	// attempts that failed included; BytesPerRequest is the mean body of a
	// successful request.
	WorkerMiBps     float64 `json:"worker_mib_s"`
	WorkerReqps     float64 `json:"worker_requests_s"`
	BytesPerRequest float64 `json:"bytes_per_request"`
	// Prefixes is how many key prefixes the requests went to, and
	// BusiestPrefixReqps the most requests a second one of them was sent
	// (attempts that ended in the steady window, over its length),
	// BusiestPrefixOKps the most it admitted (successful requests).
	Prefixes           int     `json:"prefixes"`
	BusiestPrefixReqps float64 `json:"busiest_prefix_requests_s"`
	BusiestPrefixOKps  float64 `json:"busiest_prefix_admitted_s"`
	// SlowDowns counts attempts refused with a 503 SlowDown.
	SlowDowns int `json:"slowdowns"`
}

// Prediction is the model's answer for one worker count and kind.
type Prediction struct {
	Workers int  `json:"workers"`
	Kind    Kind `json:"kind"`
	// Unlimited is what the workers would move if nothing but their own
	// links bound them: Workers x the measured worker's MiB/s.
	UnlimitedMiBps float64 `json:"unlimited_mib_s"`
	// Reqps is all workers' requests a second, PrefixReqps one prefix's
	// share, Limit what one prefix admits.
	Reqps       float64 `json:"requests_s"`
	PrefixReqps float64 `json:"prefix_requests_s"`
	Limit       float64 `json:"limit_requests_s"`
	// Binds says the prefix limit caps the run; MiBps is the prediction:
	// Unlimited, or what the prefixes admit when they bind.
	Binds bool    `json:"binds"`
	MiBps float64 `json:"mib_s"`
	// PrefixesNeeded is the fewest prefixes that keep every one under its
	// limit; BindsFrom the worker count from which the configured
	// prefixes bind.
	PrefixesNeeded int `json:"prefixes_needed"`
	BindsFrom      int `json:"binds_from_workers"`
}

// Measure takes what the model needs from a run's records: of the runs
// (cells) with the most worker processes, those like the last one (same
// object size and concurrency), each kind's median per-worker rates.
func Measure(recs []Record, depth int) ([]Measured, error) {
	if len(recs) == 0 {
		return nil, errors.New("no records to model")
	}
	// Records made in this process say 0 processes: one.
	byCell := map[int][]Record{}
	procs := 1
	for _, r := range recs {
		byCell[r.Cell] = append(byCell[r.Cell], r)
		procs = max(procs, r.Processes)
	}
	var cells []int
	for c, rs := range byCell {
		if max(rs[0].Processes, 1) == procs {
			cells = append(cells, c)
		}
	}
	slices.Sort(cells)
	last := byCell[cells[len(cells)-1]][0]
	cells = slices.DeleteFunc(cells, func(c int) bool {
		r := byCell[c][0]
		return r.ObjectSize != last.ObjectSize || r.Concurrency != last.Concurrency
	})
	var out []Measured
	for _, kind := range []Kind{Put, Get} {
		m := Measured{Kind: kind, Processes: procs}
		var mibps, reqps, perReq []float64
		prefixes := map[string]bool{}
		for _, c := range cells {
			var of []Record
			for _, r := range byCell[c] {
				if r.Kind == kind {
					of = append(of, r)
				}
			}
			if len(of) == 0 {
				continue
			}
			m.Runs++
			s := analyzeKind(of, kind)
			if s.Requests == 0 || s.SteadyMiBps <= 0 {
				continue
			}
			bpr := float64(s.Bytes) / float64(s.Requests)
			worker := s.SteadyMiBps / float64(procs)
			mibps = append(mibps, worker)
			perReq = append(perReq, bpr)
			reqps = append(reqps, worker*mib/bpr*float64(len(of))/float64(s.Requests))
			// Attempts per prefix over the phase's wall time.
			// Per prefix over the steady window: attempts that ended in
			// it, and of them those admitted.
			count, ok := map[string]int{}, map[string]int{}
			win := s.Window
			for _, r := range of {
				p := sim.KeyPrefix(r.Key, depth)
				prefixes[p] = true
				if isSlowDown(r.Err) {
					m.SlowDowns++
				}
				if r.LastByte < win.Start || r.LastByte > win.End {
					continue
				}
				count[p]++
				if r.OK() {
					ok[p]++
				}
			}
			secs := max(win.Len().Seconds(), 1e-9)
			for p, n := range count {
				m.BusiestPrefixReqps = max(m.BusiestPrefixReqps, float64(n)/secs)
				m.BusiestPrefixOKps = max(m.BusiestPrefixOKps, float64(ok[p])/secs)
			}
		}
		if len(mibps) == 0 {
			continue
		}
		m.WorkerMiBps, m.WorkerReqps, m.BytesPerRequest = median(mibps), median(reqps), median(perReq)
		m.Prefixes = len(prefixes)
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("no successful requests to model")
	}
	return out, nil
}

func isSlowDown(err string) bool {
	return strings.Contains(err, "503") || strings.Contains(strings.ToLower(err), "slowdown")
}

// Predict applies the model to what Measure found.
func Predict(ms []Measured, cfg PredictConfig) []Prediction {
	prefixes := float64(max(cfg.Prefixes, 1))
	var out []Prediction
	for _, w := range cfg.Workers {
		for _, m := range ms {
			limit := cfg.ReqRead
			if limit == 0 {
				limit = sim.S3ReqRead
			}
			if m.Kind == Put {
				if limit = cfg.ReqWrite; limit == 0 {
					limit = sim.S3ReqWrite
				}
			}
			p := Prediction{Workers: w, Kind: m.Kind, Limit: limit,
				UnlimitedMiBps: float64(w) * m.WorkerMiBps, Reqps: float64(w) * m.WorkerReqps}
			p.PrefixReqps = p.Reqps / prefixes
			p.MiBps = p.UnlimitedMiBps
			if p.PrefixReqps > limit {
				p.Binds = true
				// Admitted requests over all made: the share that moves
				// bytes (a refused request moves none).
				p.MiBps = p.UnlimitedMiBps * limit / p.PrefixReqps
			}
			p.PrefixesNeeded = max(1, int(math.Ceil(p.Reqps/limit)))
			if m.WorkerReqps > 0 {
				p.BindsFrom = int(math.Floor(limit*prefixes/m.WorkerReqps)) + 1
			}
			out = append(out, p)
		}
	}
	return out
}

// WritePrediction prints what was measured and what is predicted.
func WritePrediction(w io.Writer, ms []Measured, cfg PredictConfig, ps []Prediction) error {
	for _, m := range ms {
		fmt.Fprintf(w, "measured %s: %d run(s) of %d worker process(es): a worker %.1f MiB/s, %.1f requests/s of %s; %d prefix(es), the busiest sent %.1f requests/s and admitted %.1f; %d SlowDown(s)\n",
			m.Kind, m.Runs, m.Processes, m.WorkerMiBps, m.WorkerReqps, humanSize(int64(m.BytesPerRequest)), m.Prefixes,
			m.BusiestPrefixReqps, m.BusiestPrefixOKps, m.SlowDowns)
	}
	fmt.Fprintf(w, "model: linear in workers; per prefix at most %s writes/s and %s reads/s; the predicted run spreads requests evenly over %d prefix(es)\n\n",
		fmtRate(orDefault(cfg.ReqWrite, sim.S3ReqWrite)), fmtRate(orDefault(cfg.ReqRead, sim.S3ReqRead)), max(cfg.Prefixes, 1))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workers\top\tunlimited MiB/s\trequests/s\tper prefix\tlimit\tbinds\tpredicted MiB/s\tGB/s\tprefixes needed\tbinds from workers\t")
	for _, p := range ps {
		binds := "no"
		if p.Binds {
			binds = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%.0f\t%.0f\t%s\t%s\t%.0f\t%.1f\t%d\t%d\t\n", p.Workers, p.Kind, p.UnlimitedMiBps, p.Reqps,
			p.PrefixReqps, fmtRate(p.Limit), binds, p.MiBps, p.MiBps*mib/1e9, p.PrefixesNeeded, p.BindsFrom)
	}
	return tw.Flush()
}

func orDefault(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

func fmtRate(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") }

// PredictionDocument is a prediction as one JSON document: what was
// measured, per kind, and what is predicted for each worker count.
type PredictionDocument struct {
	Measured    []Measured   `json:"measured"`
	Predictions []Prediction `json:"predictions"`
}

// PredictFrom is the scale model over a measured run's records: it reads
// them from the file named records (JSON lines or CSV, as RecordFormat
// tells by its name), applies the model for cfg and writes what was
// measured and what is predicted to w, as a table (WritePrediction) or,
// asJSON, as one PredictionDocument.
func PredictFrom(w io.Writer, records string, cfg PredictConfig, asJSON bool) error {
	format, err := RecordFormat(records)
	if err != nil {
		return err
	}
	f, err := os.Open(records)
	if err != nil {
		return err
	}
	defer f.Close()
	recs, err := ReadRecords(f, format)
	if err != nil {
		return fmt.Errorf("%s: %w", records, err)
	}
	ms, err := Measure(recs, cfg.PrefixDepth)
	if err != nil {
		return fmt.Errorf("%s: %w", records, err)
	}
	ps := Predict(ms, cfg)
	if asJSON {
		return writeJSON(w, PredictionDocument{ms, ps})
	}
	return WritePrediction(w, ms, cfg, ps)
}
