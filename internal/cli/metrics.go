package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/fanout/jobmetrics"
	"github.com/sluice-data/sluice/internal/metricsrv"
)

// addMetricsFlag adds --metrics-addr; rule says which addresses it takes.
func addMetricsFlag(f *pflag.FlagSet, addr *string, what, rule string) {
	f.StringVar(addr, "metrics-addr", "", "serve Prometheus metrics ("+what+") at http://HOST:PORT/metrics "+
		"(port 0: a free one; "+rule+"; docs/metrics.md)")
}

// startMetrics, given an address, serves a new registry's metrics there
// (behind token, when set) and says where on w; the command's collectors
// join the registry it returns, or, to be there by the time a scraper
// reads where, register's. Without an address it serves nothing and
// returns a nil registry. An address other than loopback is taken when
// remote is set, refused with remoteHint otherwise.
func startMetrics(w io.Writer, name, addr string, remote bool, token, remoteHint string, register func(prometheus.Registerer) error) (prometheus.Registerer, func(), error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	reg := metricsrv.NewRegistry()
	if register != nil {
		if err := register(reg); err != nil {
			return nil, nil, err
		}
	}
	s, err := metricsrv.Start(addr, reg, metricsrv.Options{Remote: remote, Token: token})
	switch {
	case errors.Is(err, metricsrv.ErrNotLoopback):
		return nil, nil, usagef("%s: %v: %s", name, err, remoteHint)
	case errors.Is(err, metricsrv.ErrAddr):
		return nil, nil, usagef("%s: %v", name, err)
	case err != nil:
		return nil, nil, fmt.Errorf("%s: metrics: %w", name, err)
	}
	fmt.Fprintf(w, "sluice %s: Prometheus metrics at %s\n", name, s.URL)
	switch {
	case token != "":
		fmt.Fprintln(w, "  scrapes need the same bearer token")
	case !s.Loopback:
		fmt.Fprintf(os.Stderr, "sluice %s: warning: the metrics at %s are reachable from other machines\n", name, addr)
	}
	return reg, func() { s.Close() }, nil
}

// withJobMetrics, given an address, serves the metrics of the job run
// drives (package jobmetrics, fed by o.Progress) while it runs.
func withJobMetrics(addr string, o *fanout.Options, run func() error) error {
	var job *jobmetrics.Job
	_, stop, err := startMetrics(os.Stderr, "run", addr, false, "", "the driver serves them on loopback only", func(reg prometheus.Registerer) error {
		m, err := jobmetrics.New(reg)
		if err == nil {
			job = m.Observe(o)
		}
		return err
	})
	if err != nil {
		return err
	}
	defer stop()
	err = run()
	if job != nil {
		job.Done(err)
	}
	return err
}
