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
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluice-data/sluice/internal/peercred"
)

// The exchange, over a SOCK_SEQPACKET socket named after the pipe, which
// the writer listens on from its start:
//
//	reader -> writer  fuseHello: who the reader is (fuseContext)
//	writer -> reader  fuseAnswer: the writer's plan, or why not
//	reader -> writer  fuseStatus: the fused run's exit status, at its end
//
// The writer answers only once it knows its own plan (a stage in the
// middle first learns whether it fused the one before it), and gives its
// plan only if it has written nothing yet; from then on its own output
// fails (errFused) and it waits for the status.

type fuseHello struct {
	Context string `json:"context"`
}

type fuseAnswer struct {
	Plan *fusePlan `json:"plan,omitempty"`
	Why  string    `json:"why,omitempty"`
}

type fuseStatus struct {
	Code int `json:"code"`
}

// fuseName is the socket name for pipe f, the same at both of its ends;
// false when f is no pipe or fusing is off.
func fuseName(f any) (string, bool) {
	file, ok := f.(*os.File)
	if !ok || fuseMode(os.Getenv("SLUICE_PIPE")) != "fuse" {
		return "", false
	}
	fi, err := file.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return "", false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("@sluice-fuse-%x-%x", st.Dev, st.Ino), true
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
		if !strings.HasPrefix(e, "_=") { // the shell's last argument
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

	mu     sync.Mutex
	plan   *fusePlan
	why    string             // why plan is nil
	cancel context.CancelFunc // ends this stage's own run
	wrote  bool               // output started: too late to fuse
	conn   *net.UnixConn      // the reader that fused this stage
	closed bool
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

// setPlan says what this stage runs (nil: it cannot be fused) and how to
// stop its own run should a reader take the plan.
func (o *fuseOffer) setPlan(p *fusePlan, cancel context.CancelFunc) {
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
	if o.why = p.unfusable(); o.why == "" {
		o.plan = p
	}
	o.cancel = cancel
	close(o.ready)
}

// fuseWait bounds how long after its start a stage that could be fused
// waits for the reader of its output to ask before it runs, while that
// reader may yet turn out to be a sluice stage: the stages of a shell's
// pipeline start together, and a run begun and then given away is work
// done twice. A reader known to be sluice gets fuseWaitSluice.
const (
	fuseWait       = 50 * time.Millisecond
	fuseWaitSluice = 250 * time.Millisecond
)

// hold waits, before this stage runs, for the reader of its output to ask
// for its plan, when that reader is or may be a sluice stage; true when
// the reader took it (this stage then does not run).
func (o *fuseOffer) hold(ctx context.Context, stdout any) bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	fusable := o.plan != nil
	o.mu.Unlock()
	if !fusable {
		return false
	}
	for first := true; ; first = false {
		var wait time.Duration
		kind := pipeReader(stdout)
		if first && kind == readerOther {
			pipeTrace("%s: its reader is no sluice stage: runs at once", o.name)
		}
		switch kind {
		case readerSluice:
			wait = time.Until(processStart.Add(fuseWaitSluice))
		case readerStarting:
			wait = min(time.Millisecond, time.Until(processStart.Add(fuseWait)))
		}
		if wait <= 0 {
			return o.fused()
		}
		t := time.NewTimer(wait)
		select {
		case <-o.answered:
			t.Stop()
			return o.fused()
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

type readerKind int

const (
	readerOther    readerKind = iota // no sluice stage: do not wait
	readerSluice                     // this binary: it will ask
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
				return readerSluice
			case parent:
				return readerStarting
			default:
				return readerOther
			}
		}
	}
	return readerOther
}

// claim is asked before this stage's first output: false once a reader
// fused it.
func (o *fuseOffer) claim() error {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conn != nil {
		return errFused
	}
	o.wrote = true
	return nil
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
		go o.answer(c)
	}
}

// answer takes one reader's hello and gives it the plan, or says why not.
func (o *fuseOffer) answer(c *net.UnixConn) {
	hello, err := readPacket[fuseHello](c, 5*time.Second)
	if err != nil || peercred.SameUser(c) != nil {
		c.Close()
		return
	}
	<-o.ready
	o.mu.Lock()
	var a fuseAnswer
	switch {
	case o.closed:
		a.Why = "this stage has ended"
	case o.plan == nil:
		a.Why = o.why
	case o.wrote:
		a.Why = "this stage has started its output"
	case o.conn != nil:
		a.Why = "another stage fused this one"
	case hello.Context != fuseContext():
		a.Why = "the stages differ in binary, directory, environment, global flags or standard error"
	default:
		a.Plan = o.plan
		o.conn = c
		o.cancel()
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

// wait waits for the status of the stage that fused this one.
func (o *fuseOffer) wait(ctx context.Context) error {
	type result struct {
		st  fuseStatus
		err error
	}
	r := make(chan result, 1)
	go func() {
		st, err := readPacket[fuseStatus](o.conn, 0)
		r <- result{st, err}
	}()
	var res result
	select {
	case res = <-r:
	case <-ctx.Done():
		// Interrupted, the stage running this one is too (a shell's
		// Ctrl-C reaches the whole pipeline) and says so itself.
		select {
		case res = <-r:
		case <-time.After(2 * time.Second):
			return ctx.Err()
		}
	}
	if res.err != nil {
		return errors.New("the next stage, which ran this one, ended without a status")
	}
	return fusedExit{res.st.Code}
}

// close stops listening; a reader that fused this stage keeps its socket.
func (o *fuseOffer) close() {
	if o == nil {
		return
	}
	o.setPlan(nil, nil)
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.ln.Close()
	if o.conn != nil {
		o.conn.Close()
	}
}

// fuseUpstream is a reader's side once it fused the stage before it.
type fuseUpstream struct {
	conn *net.UnixConn
	plan *fusePlan
}

// report tells the fused stage how the run ended.
func (u *fuseUpstream) report(code int) {
	if u == nil {
		return
	}
	_ = writePacket(u.conn, fuseStatus{Code: code})
	u.conn.Close()
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
		a, err := readPacket[fuseAnswer](c, 0)
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

const maxFusePacket = 1 << 20

func writePacket(c *net.UnixConn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = c.Write(b)
	return err
}

// readPacket reads one packet as a T; with a timeout, a peer that says
// nothing in time fails it.
func readPacket[T any](c *net.UnixConn, timeout time.Duration) (T, error) {
	var v T
	if timeout > 0 {
		c.SetReadDeadline(time.Now().Add(timeout))
		defer c.SetReadDeadline(time.Time{})
	}
	b := make([]byte, maxFusePacket)
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
