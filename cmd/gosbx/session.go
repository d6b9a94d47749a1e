package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/internal/session"
	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/policy"
)

func newSessionCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "session",
		Short: "Named sandboxes that run many commands: start, ls, stop",
		Long: `A session is one sandbox, built once by 'gosbx session start NAME' with the flags of
'gosbx exec', in which 'gosbx exec --session NAME -- CMD' runs any number of commands:
what one command leaves running in the background (a server, a tmux server) is there
for the next, on the same loopback, /tmp and HOME, as the same uid inside and on the
host. A detached supervisor owns the session; its control socket is in
$XDG_RUNTIME_DIR/gosbx (or /run/gosbx for root) and answers only its own uid.`,
	}
	c.AddCommand(newSessionStartCmd(), newSessionStopCmd(), newSessionKillCmd(), newSessionLsCmd(), newSessionAttachCmd())
	return c
}

func newSessionStartCmd() *cobra.Command {
	var b boundaryFlags
	var idle string
	var owner int
	c := &cobra.Command{
		Use:   "start NAME [flags]",
		Short: "Build a session's sandbox and return once it is ready",
		Long: `Build the sandbox of session NAME from the policy and flags, as 'gosbx exec' would,
and leave it running under a detached supervisor. --timeout is the session's whole
life; --idle-timeout ends it after that long without a command running and with no
process left in it. Exit 125, with nothing left behind, when it cannot be built.`,
		Args:                  cobra.ExactArgs(1),
		DisableFlagsInUseLine: true,
		RunE: func(c *cobra.Command, args []string) error {
			name := args[0]
			if err := session.CheckName(name); err != nil {
				return usageError{err}
			}
			idleTimeout, err := policy.ParseTimeout(idle)
			if err != nil {
				return usageError{fmt.Errorf("--idle-timeout %w", err)}
			}
			dir, err := session.Dir()
			if err != nil {
				return &setupFailure{step: "session", err: err}
			}
			sweepStale(dir)
			o, err := b.options([]string{"/bin/sh"})
			if err != nil {
				return err
			}
			host, err := policy.CurrentHost()
			if err != nil {
				return err
			}
			// as gosbx exec does: the cleanup earlier launches owe, unless the journal
			// directory lies in a tree this session will write
			ws := o.Workspace
			if ws == "" {
				ws, _ = os.Getwd()
			}
			completeJournals(append([]string{ws}, o.ReadWrite...))
			eff, err := policy.Effective(o, host)
			if err != nil {
				return &setupFailure{step: "policy", err: err}
			}
			// the protected paths as they are before the build: one that appears later
			// is refused at each request (its .git cannot be bound read-only any more)
			scanCwd := eff.Process.Cwd
			if scanCwd == "" {
				scanCwd = host.Cwd
			}
			scan, err := eff.ScanProtected(scanCwd, host)
			if err != nil {
				return &setupFailure{step: "policy", err: err}
			}
			spec, notes, err := policy.BuildNoted(eff, o.Args, host)
			if err == nil {
				err = checkRunDirHidden(spec)
			}
			if err != nil {
				return &setupFailure{step: "policy", err: err}
			}
			withHostsFile(spec) // after the check: one file of the runtime directory, read-only
			// the files the build's git guard read: a change refuses the session's
			// requests (attack review 30 F8); and the linked worktrees it saw: a new
			// one is taken as a new .git is (attack review 33 F2)
			if g, ok := spec.Guard.(*policy.SessionGuard); ok {
				g.CopyGitStamps(&scan)
			}
			if err := prepareCache(eff); err != nil {
				return &setupFailure{step: "cache", err: err}
			}
			profile := b.policy
			if profile == "" {
				profile = policy.DefaultProfile
			}
			net := eff.Network.Mode
			if net == "" {
				net = "none"
			}
			sd := &startData{Name: name, Dir: dir, Config: spec, IdleTimeout: idleTimeout, Lifetime: eff.Timeout(), Bounds: eff.Bounds(), NotFound: eff.NotFoundContext(host), Protected: scan, GitMode: eff.Filesystem.Git, Credentials: eff.Filesystem.Credentials, ToolchainAuto: toolchainAuto(eff),
				Policy: fmt.Sprintf("%s, workspace %s, net %s", profile, eff.Workspace.Path, net)}
			pidfd := -1
			if owner != 0 {
				// opened here, before the supervisor starts: a pid that ends meanwhile
				// and is reused cannot be mistaken for the owner
				if pidfd, err = unix.PidfdOpen(owner, 0); err != nil {
					return usageError{fmt.Errorf("--die-with-owner %d: %w", owner, err)}
				}
				defer unix.Close(pidfd)
				sd.DieWithOwner = true
			}
			if err := startSupervisor(sd, pidfd); err != nil {
				return sessionFailure{err}
			}
			warnLoopbackPorts(spec)
			for _, n := range notes {
				fmt.Fprintf(os.Stderr, "gosbx: note: %s\n", n)
			}
			return nil
		},
	}
	f := c.Flags()
	b.register(f)
	f.IntVar(&owner, "die-with-owner", 0, "end the session when process `PID` ends (an agent's server, a terminal's shell)")
	f.StringVar(&idle, "idle-timeout", "", "end the session after `DURATION` with no command running and no process left (0 = never)")
	return c
}

func newSessionStopCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "stop NAME",
		Short: "End a session: SIGTERM to its processes, SIGKILL after a grace period",
		Long: `End session NAME: SIGTERM to every process of its sandbox, SIGKILL to those left after
2 seconds; returns once every process, its cgroup and its runtime files are gone.
Exits 1 when no session NAME is running (nothing was stopped), 125 when it failed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return stopSession(args[0], false) },
	}
}

func newSessionKillCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "kill NAME",
		Short: "End a session at once: SIGKILL to its processes",
		Long: `End session NAME at once: every process of its sandbox is killed (no SIGTERM, no grace
period); returns once every process, its cgroup and its runtime files are gone.
Exits 1 when no session NAME is running (nothing was killed), 125 when it failed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return stopSession(args[0], true) },
	}
}

func newSessionAttachCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "attach NAME",
		Short: "An interactive shell in a session, on a terminal of its own (exec --session NAME --tty)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var b boundaryFlags
			return execInSession(c, args[0], &b, []string{"/bin/sh", "-c", `exec "${SHELL:-/bin/sh}"`}, nil, false, true)
		},
	}
}

// stopSession ends session name (stop: SIGTERM, grace, SIGKILL; kill: SIGKILL) and
// returns once its supervisor is gone.
func stopSession(name string, kill bool) error {
	if err := session.CheckName(name); err != nil {
		return usageError{err}
	}
	dir, err := session.Dir()
	if err != nil {
		return &opFailure{err}
	}
	sweepStale(dir)
	fd, err := session.Dial(session.FilesOf(dir, name).Sock)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ECONNREFUSED) {
			// nothing to stop: 1, as tmux kill-session and docker stop exit for a name
			// that is not running, so that a caller's cleanup tells it from a failure
			return &notRunning{noSession(dir, name, err)}
		}
		return &opFailure{noSession(dir, name, err)}
	}
	defer unix.Close(fd)
	procs := lockProcs(session.FilesOf(dir, name).Lock)
	body := session.EncodeUint(0)
	if kill {
		body = session.EncodeUint(1)
	}
	if err := session.WriteFrame(fd, session.ReqStop, body, nil); err != nil {
		return &opFailure{err}
	}
	kind, _, _, err := session.ReadFrame(fd, 0)
	if err != nil || kind != session.RepDone {
		return &opFailure{fmt.Errorf("session %q: its supervisor did not confirm the stop: %v", name, err)}
	}
	// The supervisor exits right after: wait for its end of the socket, and for it to
	// be gone.
	for {
		if _, _, _, err := session.ReadFrame(fd, 0); err != nil {
			break
		}
	}
	for i, p := range procs {
		waitProc(p, []string{supervisorCmdline, initCmdline}[i], 5*time.Second, false)
	}
	return nil
}

func newSessionLsCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "ls",
		Short: "List the caller's sessions: name, state, age, processes, memory, policy",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			dir, err := session.Dir()
			if err != nil {
				return &opFailure{err}
			}
			infos := sweepStale(dir)
			if asJSON {
				if infos == nil {
					infos = []session.Info{}
				}
				b, _ := json.MarshalIndent(infos, "", "  ")
				fmt.Fprintln(c.OutOrStdout(), string(b))
				return nil
			}
			w := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSTATE\tAGE\tPROCESSES\tMEMORY\tPOLICY")
			for _, in := range infos {
				fmt.Fprintf(w, "%s\t%s\t%v\t%d\t%.1fMiB\t%s\n", in.Name, in.State, time.Duration(in.AgeSeconds)*time.Second,
					in.Processes, float64(in.Memory)/(1<<20), in.Policy)
			}
			return w.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return c
}

// noSession explains a failed connection to the socket of session name in dir, with
// why its last supervisor ended when it recorded it (session.RecordEnd).
func noSession(dir, name string, err error) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ECONNREFUSED) {
		if why := session.EndedWhy(session.FilesOf(dir, name)); why != "" {
			return fmt.Errorf("no session %q is running (gosbx session ls); %s", name, why)
		}
		return fmt.Errorf("no session %q is running (gosbx session ls)", name)
	}
	return fmt.Errorf("session %q: %w", name, err)
}

// sweepStale looks at every session of dir: a session whose supervisor is gone (its
// lock free: it crashed or was killed) has its leftovers removed (its runtime files,
// its cgroup, the cleanup its sandbox owed), and is said so on stderr; the others are
// asked for their Info.
func sweepStale(dir string) []session.Info {
	ents, _ := os.ReadDir(dir)
	var infos []session.Info
	swept := false
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok || session.CheckName(name) != nil {
			continue
		}
		files := session.FilesOf(dir, name)
		in, err := askInfo(files.Sock)
		if err == nil {
			infos = append(infos, in)
			continue
		}
		// Not answered: its supervisor may be exiting (killed), which frees its lock.
		if procs := lockProcs(files.Lock); len(procs) > 0 {
			waitProc(procs[0], supervisorCmdline, time.Second, false)
		}
		lock, err := session.Lock(files)
		if err == nil {
			// The supervisor is gone; its sandbox's init ends with it (the life pipe),
			// after its cleanup: waited for, and killed if it lingers.
			waitGone(lock, 5*time.Second)
			session.Remove(files)
			lock.Close()
			swept = true
			fmt.Fprintf(os.Stderr, "gosbx: session %s: its supervisor is gone; removed its leftovers\n", name)
			continue
		}
		if !errors.Is(err, session.ErrExists) {
			continue
		}
		infos = append(infos, session.Info{Name: name, State: "unreachable"})
	}
	sweepEnded(dir, ents, time.Now())
	if swept {
		// not skipped for a launch in progress elsewhere: the dead session's groups go now
		cgroup.CollectStaleWait(2 * time.Second)
		completeJournals(nil)
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	return infos
}

// endedKeep is how long a NAME.ended record of a name no session holds is kept: long
// enough for the clients of the session that ended to be told why, bounded so that a
// caller that uses a new name per conversation does not fill the runtime directory
// (new-user trial 2026-12-02 T12: one file per name ever used, kept forever).
const endedKeep = 24 * time.Hour

// sweepEnded removes, from the listing ents of the runtime directory dir, each
// NAME.ended (a regular file, of a valid name) older than endedKeep (its mtime: when
// its supervisor ended) whose name has no lock file, so no supervisor holds or is
// taking it. A supervisor that starts meanwhile removes the record itself; one that
// ends meanwhile writes a new file by rename, which a removal here could take: the
// next client of that name is then told only that no session runs. Best effort.
func sweepEnded(dir string, ents []os.DirEntry, now time.Time) {
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".ended")
		if !ok || session.CheckName(name) != nil || !e.Type().IsRegular() {
			continue
		}
		files := session.FilesOf(dir, name)
		if _, err := os.Lstat(files.Lock); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > endedKeep {
			os.Remove(files.Ended)
		}
	}
}

func askInfo(sock string) (session.Info, error) {
	var in session.Info
	fd, err := session.Dial(sock)
	if err != nil {
		return in, err
	}
	defer unix.Close(fd)
	if err := session.WriteFrame(fd, session.ReqInfo, nil, nil); err != nil {
		return in, err
	}
	kind, b, _, err := session.ReadFrame(fd, 0)
	if err != nil {
		return in, err
	}
	if kind != session.RepInfo {
		return in, io.ErrUnexpectedEOF
	}
	return in, json.Unmarshal(b, &in)
}

// sessionFailure is a session that could not be started, said as its supervisor said
// it: exit 125.
type sessionFailure struct{ err error }

func (e sessionFailure) Error() string { return e.err.Error() }
func (e sessionFailure) Unwrap() error { return e.err }
func (e sessionFailure) ExitCode() int { return 125 }

// waitGone waits for a dead supervisor's end (first in the lock file lf) and its
// init's (second): the init ends by itself once the life pipe closes, or is killed
// after d, through the pidfd its identity was checked on.
func waitGone(lf *os.File, d time.Duration) {
	procs := lockProcs(lf.Name())
	if len(procs) > 0 {
		waitProc(procs[0], supervisorCmdline, d, false) // its lock is free: it is exiting, if not gone
	}
	if len(procs) == 2 {
		waitProc(procs[1], initCmdline, d, true)
	}
}

// The command lines a supervisor and a sandbox's init start with (/proc/PID/cmdline).
const (
	supervisorCmdline = "gosbx\x00" + supervisorArg + "\x00"
	initCmdline       = nsinit.InitArg + "\x00"
)
