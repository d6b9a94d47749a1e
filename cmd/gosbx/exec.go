package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/egress"
	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/internal/gostart"
	"github.com/gosbx/gosbx/internal/sigpipe"
	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/nsinit/cleanup"
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

const execExamples = `  # run a shell command with the current directory as the workspace
  gosbx exec -- sh -c 'make test'

  # a Go project offline: the toolchain and the module cache read-only, a 10 minute limit
  gosbx exec --workspace ~/src/app --ro /usr/local/go --ro "$(go env GOMODCACHE)" \
    --env GOMODCACHE="$(go env GOMODCACHE)" --env GOFLAGS=-mod=mod --timeout 10m -- /usr/local/go/bin/go test ./...

  # git identity from the real home, read-only (HOME inside is a private, empty tmpfs)
  gosbx exec --ro ~/.gitconfig -- git log -1

  # reach only PyPI, through gosbx's proxy; each connection reported on fd 3 (outside the workspace)
  gosbx exec --allow-host pypi.org --allow-host files.pythonhosted.org --status-fd 3 -- pip download requests 3>~/gosbx-status.json

  # a dev server inside, opened from the host's browser at http://127.0.0.1:8000
  gosbx exec --publish 8000:8000 -- python3 -m http.server 8000

  # allow the whole network
  gosbx exec --net host -- curl -sI https://example.com`

func newExecCmd() *cobra.Command {
	var b boundaryFlags
	var statusFd, sessionName string
	var detach, tty bool
	c := &cobra.Command{
		Use:   "exec [flags] -- CMD [ARGS...]",
		Short: "Run a command in a new sandbox",
		Long: `Run CMD in a new sandbox built from a policy (--policy; default "agent"). Under the
agent policy, inside: the system directories (/usr, /etc, and the /bin /lib /sbin links)
read-only; the workspace read-write at its own path (its .git read-only); private tmpfs
/tmp, /var/tmp, /run, /dev/shm and HOME; a fresh /proc and a minimal /dev; no network but
lo (--net proxy: and the --allow-host hosts through gosbx's proxy; --net host: the host's
network); a cleared environment (PATH, LANG, LC_*, TZ, TERM, USER,
LOGNAME, SHELL kept; HOME and TMPDIR private); every capability dropped; no_new_privs;
a seccomp filter (no mounts, namespaces, keyrings, bpf, io_uring, TIOCSTI; foreign ABIs
killed); a cgroup with the limits asked for (--memory, --pids, --cpus; the profile's
default of 8192 processes where the host allows). Run by root, CMD is uid 0 inside but
an unprivileged host id of its own outside (--id-range), and its files in the workspace
land owned by the workspace's owner. Flags add to the policy, or narrow it,
where the policy allows. 'gosbx doctor' says whether this host can build it.

Exit status: the command's own; 128+N if signal N killed it; 124 on --timeout; 125 if
the sandbox could not be built or the flags or policy are wrong (the command did not
run); 126 if CMD is not executable; 127 if CMD is not found.`,
		Example:               execExamples,
		DisableFlagsInUseLine: true,
		RunE: func(c *cobra.Command, args []string) error {
			var status *os.File
			if statusFd != "" {
				var err error
				if status, err = openStatusFd(statusFd); err != nil {
					return usageError{err}
				}
				// Closed here, not left to the *os.File's finalizer: run is called again in
				// one process (tests, and the fd number may be reused by then), and a
				// finalizer closing a reused number closes someone else's file.
				defer status.Close()
			}
			if sessionName != "" {
				return execInSession(c, sessionName, &b, args, status, detach, tty)
			}
			if detach || tty {
				// the trial's `exec --tty -- bash`: say how to get a session
				return usageError{fmt.Errorf("--detach and --tty need --session NAME: start one with `gosbx session start NAME` " +
					"(it takes exec's policy flags), then `gosbx exec --session NAME --tty -- CMD`, or `gosbx session attach NAME` for a shell")}
			}
			o, err := b.options(args)
			if err != nil {
				emitError(status, err)
				return err
			}
			return execute(o, status)
		},
	}
	f := c.Flags()
	f.SetInterspersed(false)
	b.register(f)
	f.StringVar(&sessionName, "session", "", "run CMD in the running session `NAME` (gosbx session start); only --env, --chdir, --timeout, --status-fd, --detach and --tty may be given with it")
	f.BoolVar(&detach, "detach", false, "with --session: start CMD as a job and print its id at once; its output goes to the job's log (gosbx job); "+
		"use it (or redirect) for a server: what CMD leaves running keeps the caller's stdout, and a reader of it waits for its end")
	f.BoolVar(&tty, "tty", false, "with --session: run CMD on a terminal of the sandbox's own (job control, Ctrl-C, window size), relayed to yours")
	f.StringVar(&statusFd, "status-fd", "", "write JSON status lines to file descriptor `N` (not one the command could write too: 0-2, the file of its stdio, a file in the workspace or a --rw tree)")
	return c
}

func openStatusFd(s string) (*os.File, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("--status-fd %q: want a file descriptor number", s)
	}
	fl, err := unix.FcntlInt(uintptr(n), unix.F_GETFL, 0)
	if errors.Is(err, unix.EBADF) {
		return nil, fmt.Errorf("--status-fd %d: file descriptor %d is not open in gosbx: the caller must open it for writing, %s: %w", n, n, statusFdExample(n), err)
	}
	if err != nil {
		return nil, fmt.Errorf("--status-fd %d: %w", n, err)
	}
	// A descriptor the caller did not pass may already be one the Go runtime opened for
	// itself (its cgroup CPU files, read-only; its poller, an anonymous inode): status
	// lines written there would be lost without a word.
	link, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(n))
	if acc := fl & unix.O_ACCMODE; (acc != unix.O_WRONLY && acc != unix.O_RDWR) || strings.HasPrefix(link, "anon_inode:") {
		return nil, fmt.Errorf("--status-fd %d: not a descriptor open for writing (%s); did the caller pass it? %s", n, link, statusFdExample(n))
	}
	if err := checkStatusShared(n); err != nil {
		return nil, err
	}
	unix.CloseOnExec(n)
	return os.NewFile(uintptr(n), "status"), nil
}

// forwardedSignals reach the command through the sandbox's init (nsinit's Cmd.Signal
// says how): those a process is sent to end it, to tell it something or to stop and
// continue it as a job, as docker run's --sig-proxy and tini forward every catchable
// signal. Not SIGPIPE: gosbx holds no pipe of the command's (its stdio are the
// caller's own descriptors), so one sent to gosbx is about gosbx's own writes. Not
// SIGCHLD or SIGURG, which are about gosbx's children and sockets (docs/decisions.md,
// "Stopped commands and job control").
var forwardedSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2,
	unix.SIGWINCH, unix.SIGALRM, unix.SIGCONT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU}

// isJobStop reports whether s is one of the job-control stops a terminal or a shell
// sends (SIGTSTP: Ctrl-Z; SIGTTIN, SIGTTOU: a background job's terminal access).
func isJobStop(s os.Signal) bool {
	return s == unix.SIGTSTP || s == unix.SIGTTIN || s == unix.SIGTTOU
}

// readSignals sends each signal caught on f (sigpipe.Catch) to sigc, in order, for as
// long as gosbx runs; it waits in the runtime's poller, on no thread of its own.
func readSignals(f *os.File, sigc chan<- os.Signal) {
	var buf [16]byte
	for {
		sigs, err := sigpipe.Read(f, buf[:])
		if err != nil {
			return
		}
		for _, s := range sigs {
			sigc <- s
		}
	}
}

// stopSelf stops gosbx as a job-control stop's default action would, once the sandbox
// was told to stop: SIGSTOP to itself, as dumb-init does (its handler has taken
// SIGTSTP, whose default action is gone while it is caught). The caller's shell sees
// gosbx stopped and takes its terminal back; SIGCONT (fg, bg) continues gosbx, which
// forwards it.
func stopSelf() { unix.Kill(os.Getpid(), unix.SIGSTOP) }

func execute(o policy.Options, status *os.File) error {
	procs := launcherSched()
	// Catch forwarded signals before the sandbox exists, so none is lost or kills us.
	// Not with os/signal, whose locked thread and thread parked in signal_recv a launch
	// would pay for (docs/decisions.md, "Speed, seventh attempt: the launcher's
	// threads"): a handler writes them to a pipe, read in the runtime's poller. Never
	// undone: gosbx exits once execute returns; a signal after the exit status is known
	// is caught and dropped.
	caught := make([]unix.Signal, len(forwardedSignals))
	for i, s := range forwardedSignals {
		caught[i] = s.(unix.Signal)
	}
	sigf, err := sigpipe.Catch(caught...)
	if err != nil {
		sf := &setupFailure{"signals", err}
		emitError(status, sf)
		return sf
	}
	sigc := make(chan os.Signal, 16)
	go readSignals(sigf, sigc)
	host, err := policy.CurrentHost()
	if err != nil {
		return err
	}
	// The init is cloned now, from what the flags say of its clone, so that its Go
	// runtime starts while the journals and the policy step run; it gets the config
	// once built, or is killed and reaped (deferred) when the launch stops before, or
	// by Start when the built config needs another clone.
	// gosbx exec launches one sandbox and exits: the raw init, which shares this
	// process's memory and leaves it not dumpable, may set it up (where the build and
	// the config allow: nsinit.AllowRawInit)
	nsinit.AllowRawInit()
	pre := prestart(o, host)
	defer pre.Close()
	if fault.Check("prestart pid") != nil {
		// a test build says which init it cloned ahead, for the test to check it is gone
		fmt.Fprintf(os.Stderr, "gosbx: fault build: prestarted init %d\n", pre.Pid())
	}
	var statusMu sync.Mutex // the egress proxy's lines come from its goroutines
	emitLine := func(v any) {
		if status != nil {
			b, _ := json.Marshal(v)
			statusMu.Lock()
			status.Write(append(b, '\n'))
			statusMu.Unlock()
		}
	}
	emit := func(e nsinit.Event) { emitLine(e) }
	start := time.Now()
	// The cleanup that earlier launches owe and could not do (their launcher and init
	// killed): done before this launch looks at the workspace, which may be theirs.
	ws := o.Workspace
	if ws == "" {
		ws, _ = os.Getwd()
	}
	completeJournals(append([]string{ws}, o.ReadWrite...))
	eff, spec, notes, err := policyStep(o, host, sigc)
	if err != nil {
		var ss stoppedBySignal
		if errors.As(err, &ss) {
			emit(nsinit.Event{Error: err.Error(), Step: "policy", Status: 128 + int(ss.sig)})
			fmt.Fprintf(os.Stderr, "gosbx: %v\n", err)
			return statusError(128 + int(ss.sig))
		}
		emit(nsinit.Event{Error: err.Error(), Step: "policy", Status: nsinit.ExitSetup})
		return &nsinit.SetupError{Step: "policy", Err: err}
	}
	if err := checkRunDirHidden(spec); err != nil {
		emit(nsinit.Event{Error: err.Error(), Step: "policy", Status: nsinit.ExitSetup})
		return &nsinit.SetupError{Step: "policy", Err: err}
	}
	withHostsFile(spec) // after the check: one file of the runtime directory, read-only
	if err := prepareCache(eff); err != nil {
		emit(nsinit.Event{Error: err.Error(), Step: "cache", Status: nsinit.ExitSetup})
		return &nsinit.SetupError{Step: "cache", Err: err}
	}
	if note := goCacheNote(eff, spec.Process.Args, spec.Process.Env); note != "" {
		fmt.Fprintln(os.Stderr, note)
	}
	for _, n := range notes {
		fmt.Fprintf(os.Stderr, "gosbx: note: %s\n", n)
	}
	if status != nil {
		if err := checkStatusOutside(int(status.Fd()), spec); err != nil {
			emit(nsinit.Event{Error: err.Error(), Step: "status-fd", Status: nsinit.ExitSetup})
			return &nsinit.SetupError{Step: "status-fd", Err: err}
		}
	}
	cmd := nsinit.Command(spec)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The config carries the timeout (the policy's, or --timeout), which Cmd applies
	// from Start; --timeout bounds the whole launch, the policy step included, so what
	// the policy step took is taken off (Cmd keeps the shorter of the two).
	if spec.Timeout > 0 {
		cmd.Timeout = max(spec.Timeout-time.Since(start), time.Millisecond)
	}
	if status != nil {
		cmd.Events = emit
		cmd.NetEvents = func(e egress.Event) { emitLine(e) }
	}
	cmd.NetDenied = func(msg string) { fmt.Fprintf(os.Stderr, "gosbx: %s\n", msg) }
	cmd.NetWithheld = func(n int) { fmt.Fprintf(os.Stderr, "gosbx: %s\n", egress.WithheldText(n)) }
	cmd.TeardownLater = true // gosbx exits once Wait returns: the kernel reaps the init
	cmd.Prestarted = pre
	cmd.JournalsCompleted = true // completeJournals above
	if err := checkShadowed(spec, func() policy.NotFoundContext { return eff.NotFoundContext(host) }); err != nil {
		return err
	}
	if note := gitCommitLaunchNote(eff.Filesystem.Git, isTerminal(2)); note != "" {
		fmt.Fprintln(os.Stderr, note)
	}
	if err := cmd.Start(); err != nil {
		return withNotFoundHint(err, spec, eff.NotFoundContext(host))
	}
	if servesNetwork(spec) {
		runtime.GOMAXPROCS(procs)
	}
	warnDowngrades(cmd, spec)
	if note := cpusNote(spec); note != "" {
		fmt.Fprintln(os.Stderr, note)
	}
	warnLoopbackPorts(spec)
	go func() {
		for s := range sigc {
			cmd.Signal(s)
			if isJobStop(s) {
				stopSelf()
			}
		}
	}()
	err = cmd.Wait()
	var ee *nsinit.ExitError
	if err != nil && !errors.As(err, &ee) {
		return err
	}
	for _, p := range cmd.Result.Removed {
		if madeForMount(spec, p) {
			continue // a tmpfs mount point the launch made in a host tree, as expected
		}
		if note := policy.ReplaceRefNote(p); note != "" {
			fmt.Fprintln(os.Stderr, note)
			continue
		}
		fmt.Fprintf(os.Stderr, "gosbx: the command created (or replaced) %s, which would redirect git outside the sandbox; removed\n", policy.Shown(p))
	}
	for _, p := range cmd.Result.NotRemoved {
		fmt.Fprintln(os.Stderr, policy.NotRemovedNote(p, "the command"))
	}
	for _, n := range gitTreeNotes(eff, host, "the command") {
		fmt.Fprintln(os.Stderr, n)
	}
	if cmd.Result.TimedOut {
		fmt.Fprintf(os.Stderr, "gosbx: timed out after %v; the sandbox was killed\n", spec.Timeout)
	}
	if note := limitNote(spec, cmd.Result, false); note != "" {
		fmt.Fprintln(os.Stderr, note)
	}
	if note := leftNote(cmd.Result); note != "" && !cmd.Result.TimedOut {
		fmt.Fprintln(os.Stderr, note)
	}
	if cmd.Result.ExitCode != 0 {
		if !causeKnown(cmd.Result) {
			refused := func(d string) error { return eff.WorkspaceRefusal(d, host) }
			if note := enclosingNote(o.Workspace, ws, refused); note != "" {
				fmt.Fprintln(os.Stderr, note)
			}
			for _, note := range gitFailureNotes(spec, eff.Filesystem.Git, eff.Filesystem.Credentials, os.Getuid(), false) {
				fmt.Fprintln(os.Stderr, note)
			}
			if note := wsWriteNote(ws, host); note != "" {
				fmt.Fprintln(os.Stderr, note)
			}
			if note := unseenFirstNote(spec, toolchainAuto(eff)); note != "" {
				fmt.Fprintln(os.Stderr, note)
			}
		}
		return statusError(cmd.Result.ExitCode)
	}
	return nil
}

// madeForMount reports whether p is, or holds, the mount point of one of spec's tmpfs
// mounts: a directory the launch made in a host tree, removed after the run (the
// policy's cleanup entry), not something the command made.
func madeForMount(spec *config.Config, p string) bool {
	for _, m := range spec.Mounts {
		if m.Type == "tmpfs" && (m.Destination == p || strings.HasPrefix(m.Destination, p+"/")) {
			return true
		}
	}
	return false
}

// warnDowngrades says on stderr, one line each, where the sandbox runs with less than
// the best the policy allows, as it allows: a root caller's command as host uid 0 (a
// read-write bind that cannot be idmapped, root_identity_map: allow), and limits asked
// for with --limits best-effort that could not be applied. The status line has the same
// facts (identity-map, limits-note); a caller without --status-fd should not miss them.
// A profile's default limit not applied is no warning: it is applied where the host
// allows, as documented.
func warnDowngrades(cmd *nsinit.Cmd, spec *config.Config) {
	if why := cmd.IdentityMapNote(); why != "" {
		fmt.Fprintf(os.Stderr, "gosbx: warning: the command runs as host uid 0, not an id of its own: a read-write bind "+
			"cannot be idmapped (%s); files it makes there are root's. Set root_identity_map: deny in the policy to refuse instead\n", why)
	}
	if note := cmd.LimitsNote(); note != "" && len(spec.Limits.Required) > 0 {
		fmt.Fprintf(os.Stderr, "gosbx: warning: running without the limits asked for (%s), as best-effort allows: %s\n",
			strings.Join(spec.Limits.Required, ", "), note)
	}
}

// warnLoopbackPorts says on stderr when an allow pattern names a loopback address
// without a port (egress.LoopbackNote): the failure it leads to, a connection refused
// inside the sandbox, reaches no proxy that could report it.
func warnLoopbackPorts(spec *config.Config) {
	if spec.Egress == nil {
		return
	}
	if note := egress.LoopbackNote(spec.Egress.Allow); note != "" {
		fmt.Fprintf(os.Stderr, "gosbx: note: %s\n", note)
	}
}

// setupFailure is a launch stopped before the sandbox existed (a bad policy): exit 125.
type setupFailure struct {
	step string
	err  error
}

func (e *setupFailure) Error() string {
	return "sandbox setup failed at " + e.step + ": " + policy.Shown(e.err.Error())
}
func (e *setupFailure) Unwrap() error { return e.err }
func (e *setupFailure) ExitCode() int { return nsinit.ExitSetup }

// emitError writes the status line of a launch that failed before it started.
func emitError(status *os.File, err error) {
	if status == nil {
		return
	}
	step := "usage"
	var sf *setupFailure
	if errors.As(err, &sf) {
		step, err = sf.step, sf.err
	}
	b, _ := json.Marshal(nsinit.Event{Error: nsinit.ForCLI(err).Error(), Step: step, Status: nsinit.ExitSetup})
	status.Write(append(b, '\n'))
}

// stopSignals stop the launch when they arrive during the policy step (each one's
// default action ends a process); SIGWINCH and SIGCONT do not.
var stopSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGALRM}

// stoppedBySignal is a launch stopped by a signal before the sandbox existed.
type stoppedBySignal struct{ sig unix.Signal }

func (e stoppedBySignal) Error() string {
	return "stopped by " + unix.SignalName(e.sig) + " during the policy step; the command did not run"
}

// policyStep is policy.Effective then policy.Build, bounded by the timeout (the policy's,
// or --timeout) and stopped by a signal of stopSignals from sigc: it reads files a
// sandbox could have written (repository metadata), and however bounded each read is,
// the launcher stays answerable while it runs. Build writes nothing, so a step abandoned
// leaves nothing behind (its goroutine ends with the process).
func policyStep(o policy.Options, host policy.Host, sigc <-chan os.Signal) (*policy.Policy, *config.Config, []string, error) {
	type built struct {
		eff   *policy.Policy
		spec  *config.Config
		notes []string
		err   error
	}
	done := make(chan built, 1)
	limit := make(chan time.Duration, 1)
	go func() {
		gostart.GrowStack() // grown once to what Effective and Build reach, not four times
		eff, err := policy.Effective(o, host)
		if err != nil {
			done <- built{err: err}
			return
		}
		limit <- eff.Timeout()
		if err := fault.Check("policy stall"); err != nil {
			// a policy step that never ends (fault injection test), said once the
			// signals are caught (before policyStep)
			fmt.Fprintln(os.Stderr, "gosbx: fault injected: the policy step stalls")
			select {}
		}
		if err := fault.Check("policy pause"); err != nil {
			// a policy step that waits for one byte on stdin (fault injection test): a
			// test acts on the prestarted init meanwhile, then lets the launch go on
			fmt.Fprintln(os.Stderr, "gosbx: fault injected: the policy step pauses")
			var b [1]byte
			os.Stdin.Read(b[:])
		}
		spec, notes, err := policy.BuildNoted(eff, o.Args, host)
		done <- built{eff, spec, notes, err}
	}()
	var expire <-chan time.Time
	var within time.Duration
	start := time.Now()
	for {
		select {
		case b := <-done:
			return b.eff, b.spec, b.notes, b.err
		case d := <-limit:
			if within = d; d > 0 {
				expire = time.After(d - time.Since(start))
			}
		case <-expire:
			return nil, nil, nil, fmt.Errorf("the policy step took longer than the %v wall-clock limit (--timeout); the command did not run", within)
		case sig := <-sigc:
			if s, ok := sig.(unix.Signal); ok && slices.Contains(stopSignals, sig) {
				return nil, nil, nil, stoppedBySignal{s}
			}
			if isJobStop(sig) {
				stopSelf() // no sandbox yet: only gosbx to stop
			}
		}
	}
}

// completeJournals completes the after-run cleanup of earlier launches of this user
// whose launcher and sandbox are gone (cleanup.CompleteJournals), and says what it did
// and what it could not. writable are the trees this launch's sandbox will write, as
// the caller named them (the workspace, --rw): nothing is done when the journal
// directory lies in one (the launch is refused later, in nsinit, once the policy has
// named every writable tree).
func completeJournals(writable []string) {
	removed, failed, err := cleanup.CompleteJournals(writable)
	if err != nil && cleanup.CheckOutside(writable) != nil {
		return // CompleteJournals checks first and did nothing; the launch is refused later
	}
	for _, p := range removed {
		fmt.Fprintf(os.Stderr, "gosbx: an earlier sandbox's command created %s, and its launcher was killed before removing it; removed\n", policy.Shown(p))
	}
	for _, f := range failed {
		fmt.Fprintf(os.Stderr, "gosbx: WARNING: could not complete an earlier sandbox's cleanup: %s\n", policy.Shown(f))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gosbx: WARNING: could not complete earlier sandboxes' cleanup: %v\n", err)
	}
}

// notFound is a command the sandbox could not find (exit 127) that the host has: its
// message says where, and what bind would show it.
type notFound struct {
	err  *nsinit.ExecError
	hint string
}

func (e *notFound) Error() string { return e.hint }
func (e *notFound) Unwrap() error { return e.err }
func (e *notFound) ExitCode() int { return e.err.ExitCode() }

// withNotFoundHint gives a command of spec not found inside (execve ENOENT: not on
// PATH, or a symlink target or #! interpreter missing) the host's view of it
// (policy.NotFoundHint, from the policy and host c was taken from); the exit status
// stays 127. A session's supervisor gives its commands the same.
func withNotFoundHint(err error, spec *config.Config, c policy.NotFoundContext) error {
	var ee *nsinit.ExecError
	if !errors.As(err, &ee) || ee.ExitCode() != nsinit.ExitNotFound || spec.Process == nil || len(spec.Process.Args) == 0 {
		return err
	}
	if hint := c.NotFoundHint(spec, spec.Process.Args[0], ee.Path); hint != "" {
		return &notFound{ee, hint}
	}
	return err
}

// shadowed is a command refused before it starts, exit 127 as for one not found: the
// sandbox's PATH lookup would skip the file the host's finds first and run another
// (policy.Shadowed). Refused rather than run with a note: a note a caller's tool
// never shows is the silent run of another interpreter again, without its packages,
// with exit 0 (trial finding F1); 127 is what the same file named by its path gives.
type shadowed struct{ hint string }

func (e *shadowed) Error() string { return e.hint }
func (e *shadowed) ExitCode() int { return nsinit.ExitNotFound }

// checkShadowed is nil, or a *shadowed for spec's command; c is read only then.
func checkShadowed(spec *config.Config, c func() policy.NotFoundContext) error {
	if spec.Process == nil || len(spec.Process.Args) == 0 {
		return nil
	}
	name := spec.Process.Args[0]
	skipped, runs := policy.Shadowed(spec, name)
	if skipped == "" {
		return nil
	}
	return &shadowed{c().ShadowedHint(spec, name, skipped, runs)}
}
