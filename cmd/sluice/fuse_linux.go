package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluice-data/sluice/internal/peercred"
)

// The exchange, over a SOCK_SEQPACKET socket named after the pipe, which
// the writer listens on from its start until it runs:
//
//	reader -> writer  fuseHello: who the reader is (fuseContext)
//	writer -> reader  fuseAnswer: the writer's plan, or why not
//	writer -> reader  fuseCancel: the writer was stopped (killed, Ctrl-C,
//	                  timeout), or a stage before it was: stop the run
//	reader -> writer  fuseStatus: the fused run's exit status, at its end
//
// The writer answers only once it knows its own plan (a stage in the
// middle first learns whether it fused the one before it), and gives it
// only before it starts its own run (see hold); then it waits for the
// status. A writer that is gone (its socket ends) stops the run as a
// cancel does.

type fuseHello struct {
	Context string `json:"context"`
}

type fuseAnswer struct {
	Plan *fusePlan `json:"plan,omitempty"`
	Why  string    `json:"why,omitempty"`
}

type fuseCancel struct {
	Cancel bool `json:"cancel"`
}

type fuseStatus struct {
	Code int `json:"code"`
}

// Packets' largest sizes: a plan is a pipeline's words; the rest are small.
const (
	maxPlanPacket  = 1 << 20
	maxSmallPacket = 4 << 10
)

// fuseName is the socket name for pipe f, the same at both of its ends;
// false when f is no pipe or fusing is off.
func fuseName(f any) (string, bool) {
	file, ok := f.(*os.File)
	if !ok || fuseMode(os.Getenv("SLUICE_PIPE")) != "fuse" {
		return "", false
	}
	return peercred.PipeName(file, "fuse")
}

// fuseContext names what a fused stage must share with the one that runs
// it: the binary, the working directory, the environment, the global
// flags and standard error.
func fuseContext() string {
	h := sha256.New()
	if fi, err := os.Stat("/proc/self/exe"); err == nil {
		st := fi.Sys().(*syscall.Stat_t)
		fmt.Fprintf(h, "exe %d %d %d %d\n", st.Dev, st.Ino, fi.Size(), fi.ModTime().UnixNano())
	}
	wd, _ := os.Getwd()
	fmt.Fprintf(h, "cwd %q\n", wd)
	env := os.Environ()
	sort.Strings(env)
	for _, e := range env {
		// The shell's last argument, and what only says what happened.
		if !strings.HasPrefix(e, "_=") && !strings.HasPrefix(e, "SLUICE_PIPE_TRACE=") {
			fmt.Fprintf(h, "env %q\n", e)
		}
	}
	fmt.Fprintf(h, "globals %q\n", globals.args())
	var st unix.Stat_t
	if unix.Fstat(2, &st) == nil {
		fmt.Fprintf(h, "stderr %d %d %d\n", st.Dev, st.Ino, st.Rdev)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fuseOffer is a writer's side: it listens for the reader of its output
// and gives it its plan.
type fuseOffer struct {
	name     string // the stage's, for the trace
	ln       *net.UnixListener
	ready    chan struct{} // closed once plan is set
	answered chan struct{} // closed once a reader has been answered

	mu      sync.Mutex
	plan    *fusePlan
	why     string        // why plan is nil
	started bool          // this stage runs: too late to fuse
	stopped bool          // a stage before this one was stopped
	conn    *net.UnixConn // the reader that fused this stage
}

// offerFusion listens for a sluice stage reading stdout; nil when stdout
// is no pipe, fusing is off or the name is taken.
func offerFusion(name string, stdout any) *fuseOffer {
	sock, ok := fuseName(stdout)
	if !ok {
		return nil
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		return nil
	}
	o := &fuseOffer{name: name, ln: ln, ready: make(chan struct{}), answered: make(chan struct{})}
	go o.accept()
	return o
}

// setPlan says what this stage runs; nil: it cannot be fused, for why
// (or what the plan's unfusable says).
func (o *fuseOffer) setPlan(p *fusePlan, why string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	select {
	case <-o.ready:
		return
	default:
	}
	if why == "" {
		why = p.unfusable()
	}
	if o.why = why; why == "" {
		o.plan = p
	}
	close(o.ready)
}

// fuseWait bounds how long after its start a stage that could be fused
// waits for the reader of its output to ask before it runs: the stages of
// a shell's pipeline start together, and a reader that is a sluice stage
// asks as soon as it starts. After the wait the stage runs and no longer
// gives its plan (that would be its work done twice).
const (
	fuseWaitSluice   = 2 * time.Second        // the reader is a sluice stage: it will ask
	fuseWaitStarting = 200 * time.Millisecond // the shell has not yet made the reader a program
)

// hold waits, before this stage runs, for the reader of its output to ask
// for its plan, when that reader is or may be a sluice stage; true when
// the reader took it (this stage then does not run). Either way, no reader
// is given the plan after it; the socket stays, answering that it has
// started, so that a reader learns at once it is to read the pipe (and
// listens for the batches' hand-off before the first comes).
func (o *fuseOffer) hold(ctx context.Context, stdout any) bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	fusable := o.plan != nil
	o.mu.Unlock()
	for first := fusable; fusable; first = false {
		var wait time.Duration
		kind := pipeReader(stdout)
		if first && kind == readerOther {
			pipeTrace("%s: its reader is no sluice stage: runs at once", o.name)
		}
		// In slices, to see a reader that ends (or becomes another
		// program) before it asks.
		switch kind {
		case readerSluice:
			wait = min(25*time.Millisecond, time.Until(processStart.Add(fuseWaitSluice)))
		case readerStarting:
			wait = min(time.Millisecond, time.Until(processStart.Add(fuseWaitStarting)))
		}
		if wait <= 0 {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-o.answered:
			t.Stop()
			return o.start()
		case <-ctx.Done():
			t.Stop()
			return o.start()
		case <-t.C:
		}
	}
	return o.start()
}

// start ends the offer, unless a reader took the plan (true): this stage
// runs.
func (o *fuseOffer) start() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started = o.conn == nil
	return o.conn != nil
}

type readerKind int

const (
	readerOther    readerKind = iota // no sluice stage: do not wait
	readerSluice                     // a stage of this binary: it will ask
	readerStarting                   // a fork of the shell, not yet the program it runs
)

// pipeReader says who reads pipe f: it looks among the children of this
// process's parent (a shell's pipeline is its children) for one whose
// standard input is f.
func pipeReader(f any) readerKind {
	file, ok := f.(*os.File)
	if !ok {
		return readerOther
	}
	fi, err := file.Stat()
	if err != nil {
		return readerOther
	}
	target := fmt.Sprintf("pipe:[%d]", fi.Sys().(*syscall.Stat_t).Ino)
	self, _ := os.Readlink("/proc/self/exe")
	ppid := os.Getppid()
	parent, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", ppid))
	lists, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", ppid))
	for _, l := range lists {
		b, _ := os.ReadFile(l)
		for _, pid := range strings.Fields(string(b)) {
			if in, _ := os.Readlink("/proc/" + pid + "/fd/0"); in != target {
				continue
			}
			switch exe, _ := os.Readlink("/proc/" + pid + "/exe"); exe {
			case self:
				cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
				environ, _ := os.ReadFile("/proc/" + pid + "/environ")
				if asksForPlan(strings.Split(string(cmdline), "\x00"), strings.Split(string(environ), "\x00")) {
					return readerSluice
				}
				return readerOther
			case parent:
				return readerStarting
			default:
				return readerOther
			}
		}
	}
	return readerOther
}

func (o *fuseOffer) fused() bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.conn != nil
}

func (o *fuseOffer) accept() {
	for {
		c, err := o.ln.AcceptUnix()
		if err != nil {
			return
		}
		// One at a time: only one reader is meant to ask, and one of
		// another user is turned away before it is read.
		o.answer(c)
	}
}

// answer takes one reader's hello and gives it the plan, or says why not.
func (o *fuseOffer) answer(c *net.UnixConn) {
	if peercred.SameUser(c) != nil {
		c.Close()
		return
	}
	hello, err := readPacket[fuseHello](c, 5*time.Second, maxSmallPacket)
	if err != nil {
		c.Close()
		return
	}
	<-o.ready
	o.mu.Lock()
	var a fuseAnswer
	switch {
	case o.plan == nil:
		a.Why = o.why
	case o.stopped:
		a.Why = "a stage before this one was stopped"
	case o.started:
		a.Why = "this stage has started"
	case o.conn != nil:
		a.Why = "another stage fused this one"
	case hello.Context != fuseContext():
		a.Why = "the stages differ in binary, directory, environment, global flags or standard error"
	default:
		a.Plan = o.plan
		o.conn = c
	}
	select {
	case <-o.answered:
	default:
		close(o.answered)
	}
	o.mu.Unlock()
	if err := writePacket(c, a); err != nil || a.Plan == nil {
		c.Close()
	}
}

// stopReader tells the stage that fused this one to stop its run; one
// that asks later is turned away.
func (o *fuseOffer) stopReader() {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.stopped = true
	c := o.conn
	o.mu.Unlock()
	if c != nil {
		_ = writePacket(c, fuseCancel{Cancel: true})
	}
}

// wait waits for the status of the stage that fused this one; stopped
// meanwhile (Ctrl-C, a timeout), it stops that stage and takes its status:
// interrupted too (Ctrl-C reaches the whole pipeline), that stage speaks
// for both; else this one says it was interrupted.
func (o *fuseOffer) wait(ctx context.Context) error {
	r := make(chan fuseStatus, 1)
	go func() {
		st, err := readPacket[fuseStatus](o.conn, 0, maxSmallPacket)
		if err != nil {
			close(r)
			return
		}
		r <- st
	}()
	var st fuseStatus
	var ok bool
	select {
	case st, ok = <-r:
	case <-ctx.Done():
		o.stopReader()
		select {
		case st, ok = <-r:
		case <-time.After(5 * time.Second):
		}
		if !ok || st.Code != exitInterrupt {
			return ctx.Err() // stopped alone: this stage says so
		}
	}
	if !ok {
		// The reader is gone without a word (killed): as a writer whose
		// pipe's reader is gone, end quietly; its own exit tells.
		return nil
	}
	return fusedExit{st.Code}
}

// close stops listening; a reader that fused this stage keeps its socket
// until this process ends.
func (o *fuseOffer) close() {
	if o == nil {
		return
	}
	o.setPlan(nil, "this stage has ended")
	o.mu.Lock()
	o.started = true
	o.mu.Unlock()
	o.ln.Close()
}

// fuseUpstream is a reader's side once it fused the stage before it.
type fuseUpstream struct {
	conn *net.UnixConn
	plan *fusePlan
	done atomic.Bool // the status is sent: the socket's end is no stop
}

// errUpstreamStopped ends a run whose stages before this one were stopped.
var errUpstreamStopped = errors.New("a stage before this one was stopped (killed, interrupted or timed out); this stage ran it")

// watch stops the run (cancel) when the stage before this one says stop
// or is gone, and passes the word on to a stage that fused this one.
func (u *fuseUpstream) watch(cancel context.CancelCauseFunc, offer *fuseOffer) {
	if u == nil {
		return
	}
	go func() {
		for {
			c, err := readPacket[fuseCancel](u.conn, 0, maxSmallPacket)
			if u.done.Load() {
				return
			}
			if err != nil || c.Cancel {
				cancel(errUpstreamStopped)
				offer.stopReader()
				return
			}
		}
	}()
}

// report tells the fused stage how the run ended, and waits for it to
// hang up: closing a Unix socket with a packet unread (a cancel sent as
// the run ended) resets it, and the peer would lose the status.
func (u *fuseUpstream) report(code int) {
	if u == nil {
		return
	}
	u.done.Store(true)
	if writePacket(u.conn, fuseStatus{Code: code}) == nil {
		u.conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		b := make([]byte, maxSmallPacket)
		for {
			if n, err := u.conn.Read(b); err != nil || n == 0 {
				break
			}
		}
	}
	u.conn.Close()
}

// asksForPlan says whether a process of this binary with args and env is
// a stage that asks the stage writing its input for its plan: one that
// reads a stream (a word of args names one), not profiled, with fusing on.
func asksForPlan(args, env []string) bool {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "SLUICE_PIPE="); ok && fuseMode(v) != "fuse" {
			return false
		}
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--cpuprofile") }) {
		return false
	}
	// The command is the first word that is no global flag or its value.
	for i := 1; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if slices.Contains([]string{"--endpoint", "--region", "--sim"}, a) {
				i++
			}
			continue
		}
		d := stageDefByName(a)
		return d != nil && d.cli && (d.kind == kindStage || d.kind == kindSink)
	}
	return false
}

// requestFusion asks the stage writing stdin for its plan: nil when stdin
// is no pipe, the writer is no sluice stage (it writes before anything
// listens), or it declines.
func requestFusion(ctx context.Context, name string, stdin any) *fuseUpstream {
	sock, ok := fuseName(stdin)
	if !ok {
		return nil
	}
	rc, err := stdin.(*os.File).SyscallConn()
	if err != nil {
		return nil
	}
	addr := &net.UnixAddr{Name: sock, Net: "unixpacket"}
	var c *net.UnixConn
	// The writer may not be listening yet: it started at the same time.
	// Try until it is, or until the pipe has bytes or its end for us.
	for tries := 0; ; tries++ {
		wait := time.Millisecond // the writer waits fuseWait for us at most
		if tries > 100 {
			wait = 50 * time.Millisecond
		}
		if c, err = net.DialUnix("unixpacket", nil, addr); err == nil {
			break
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || ctx.Err() != nil {
			return nil
		}
		readable := true
		_ = rc.Control(func(fd uintptr) {
			ts := unix.NsecToTimespec(int64(wait))
			n, err := unix.Ppoll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, &ts, nil)
			readable = n != 0 || err != nil && err != unix.EINTR
		})
		if readable {
			return nil
		}
	}
	if peercred.SameUser(c) != nil || writePacket(c, fuseHello{Context: fuseContext()}) != nil {
		c.Close()
		return nil
	}
	answer := make(chan fuseAnswer, 1)
	go func() {
		a, err := readPacket[fuseAnswer](c, 0, maxPlanPacket)
		if err != nil {
			a = fuseAnswer{Why: err.Error()}
		}
		answer <- a
	}()
	select {
	case <-ctx.Done():
		c.Close()
		return nil
	case a := <-answer:
		if a.Plan.unfusable() != "" {
			pipeTrace("%s: not fused with the stage before it: %s", name, a.Why)
			c.Close()
			return nil
		}
		return &fuseUpstream{conn: c, plan: a.Plan}
	}
}

func writePacket(c *net.UnixConn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = c.Write(b)
	return err
}

// readPacket reads one packet of at most max bytes as a T; with a
// timeout, a peer that says nothing in time fails it.
func readPacket[T any](c *net.UnixConn, timeout time.Duration, max int) (T, error) {
	var v T
	if timeout > 0 {
		c.SetReadDeadline(time.Now().Add(timeout))
		defer c.SetReadDeadline(time.Time{})
	}
	b := make([]byte, max)
	n, err := c.Read(b)
	if err != nil {
		return v, err
	}
	if n == 0 {
		return v, io.EOF
	}
	err = json.Unmarshal(b[:n], &v)
	return v, err
}
