package nsinit

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/gosbx/gosbx/internal/shown"
)

// Exit statuses of `gosbx exec`, as README.md's table ("Exit status"; and timeout(1),
// env(1)).
const (
	ExitTimeout       = 124 // wall-clock timeout: the whole sandbox was killed
	ExitSetup         = 125 // the sandbox could not be built: the command did NOT run
	ExitNotExecutable = 126 // the command was found but could not be executed
	ExitNotFound      = 127 // the command was not found
	ExitKilled        = 137 // 128+SIGKILL
)

// Result is what happened to a command that ran.
type Result struct {
	ExitCode int            // exit status, or 128+Signal when killed by a signal, or ExitTimeout
	Signal   syscall.Signal // the signal that killed the command, 0 if it exited
	TimedOut bool           // the wall-clock timeout expired and the sandbox was killed
	Wall     time.Duration  // from the clone of the init to the end of the sandbox
	// Removed are the paths the after-run cleanup (the config's Cleanup entries: what
	// the command created that must not outlive it) removed.
	Removed []string
	// NotRemoved are those that could not be removed, each "path: cause": what the
	// command planted there outlives the sandbox; remove it by hand.
	NotRemoved []string

	// Limits is how resource limits were applied: "cgroup-v2", "cgroup-v1", "rlimit" (the
	// process limit as RLIMIT_NPROC, no cgroup: a root caller's default on its own host
	// id, or any caller's where no cgroup can be had, in the sandbox's own user
	// namespace; so no usage figures, no PidsPeak, and a hit of the limit is not
	// known), or "none".
	Limits string
	// CPUs lists the CPUs the sandbox ran on for its CPU limit ("0", "1,3"): ceil of
	// the limit in cores, chosen from the caller's own affinity mask; "" when the
	// limit covered the whole mask or there was none.
	CPUs string
	// OOMKilled: the memory limit's OOM killer killed a process of the sandbox.
	OOMKilled bool
	// LimitHit names the limit that was hit: "memory" or "pids"; "" if none.
	LimitHit string
	// MemoryPeak is the highest memory use, bytes (0 when unknown).
	MemoryPeak int64
	// CPUUser and CPUSystem are the CPU time the sandbox used.
	CPUUser, CPUSystem time.Duration
	// PidsPeak is the most processes at once, where the kernel reports it (cgroup v2).
	PidsPeak int64

	// HostUID is the host uid (and gid) the command ran as when the caller was root:
	// one of the config's id range (RootID), held by this sandbox alone; -1
	// when the launch kept the spec's own mapping.
	HostUID int64
	// IdentityMap says why a root caller's command ran as host uid 0 after all: the
	// policy allowed it (RootID.AllowHostRoot) and a read-write bind could not be
	// idmapped. "" otherwise.
	IdentityMap string

	// LeftRunning is how many processes other than the command were still running in
	// the sandbox when the command exited (background jobs, a tmux server), all killed
	// with it; 0 for a session's command, whose sandbox lives on. LeftNames are up to 3
	// of their names (comm(5): the sandbox chose them, quote before printing).
	LeftRunning int
	LeftNames   []string
}

// Success reports whether the command exited with status 0.
func (r *Result) Success() bool { return r.ExitCode == 0 && !r.TimedOut }

// SetupError means the sandbox could not be built and the command never ran. Step
// names the setup step ("clone", "mount", "pivot_root", "drop capabilities", …). Err
// keeps its types across the process boundary: a failure in the init stage unwraps to
// its errno (errors.Is(err, unix.EPERM)), and a mount failure is a *mounts.Error
// (errors.As), as on the side that failed.
type SetupError struct {
	Step string
	Err  error
	// Hint says what usually fixes this failure (Hint(Step, Err), set by Start), or "".
	Hint string
	// CLIHint is Hint as gosbx's command line says it, where Hint names library fields
	// (policy.Resources.CgroupParent): by its flags and policy-file keys only; "" when
	// Hint serves both. ForCLI puts it in Hint's place.
	CLIHint string
}

// ForCLI returns err with the *SetupError in its chain, if any, saying CLIHint in
// place of Hint where it has one: what a command-line front end prints.
func ForCLI(err error) error {
	var se *SetupError
	if errors.As(err, &se) && se.CLIHint != "" {
		se.Hint, se.CLIHint = se.CLIHint, ""
	}
	return err
}

func (e *SetupError) Error() string {
	return "sandbox setup failed at " + e.Step + ": " + e.cause()
}

// cause is Err's text (shown.Text: a path in it the sandbox chose prints no line or
// terminal escape of its own), with the hint.
func (e *SetupError) cause() string {
	if e.Hint == "" {
		return shown.Text(e.Err.Error())
	}
	return shown.Text(e.Err.Error()) + " (" + e.Hint + ")"
}
func (e *SetupError) Unwrap() error { return e.Err }

// ExitCode is ExitSetup.
func (e *SetupError) ExitCode() int { return ExitSetup }

// ExecError means the sandbox was built but execve(2) of the command failed, so the
// command never ran: not found (ExitCode 127) or not executable (126).
type ExecError struct {
	Path  string
	Errno syscall.Errno
}

func (e *ExecError) Error() string { return fmt.Sprintf("execute %s: %v", e.Path, e.Errno) }
func (e *ExecError) Unwrap() error { return e.Errno }

// ExitCode is 127 for a command not found, 126 otherwise.
func (e *ExecError) ExitCode() int {
	if e.Errno == syscall.ENOENT || e.Errno == syscall.ENOTDIR {
		return ExitNotFound
	}
	return ExitNotExecutable
}

// StartUnknownError is Start's error for a command of a Session whose init ended
// (its socket to this process at end of file) after the command was sent and before
// the init reported its exec or an error: the init forks the command before it reports,
// so the command may have run. ExitCode is ExitKilled, as a command killed: never
// ExitSetup ("did not run"), which a caller may retry.
type StartUnknownError struct{}

func (e *StartUnknownError) Error() string {
	return "the session ended before the command's exec was reported; the command may have started: taken as killed"
}

// ExitCode is ExitKilled.
func (e *StartUnknownError) ExitCode() int { return ExitKilled }

// ExitError means the command ran and did not succeed: it exited non-zero, was killed
// by a signal, or timed out.
type ExitError struct{ *Result }

// Error says how the command ended, and which limit acted when one did (LimitHit), as
// gosbx exec's stderr line does: "killed by the memory limit (the OOM killer's
// SIGKILL)" rather than "killed by signal killed".
func (e *ExitError) Error() string {
	switch {
	case e.TimedOut:
		return fmt.Sprintf("timed out after %v", e.Wall.Round(time.Millisecond))
	case e.Signal == syscall.SIGKILL && e.LimitHit == "memory":
		return "killed by the memory limit (the OOM killer's SIGKILL)"
	case e.Signal != 0:
		return "killed by signal " + e.Signal.String()
	case e.LimitHit == "memory":
		return fmt.Sprintf("exit status %d (the memory limit killed a process of the sandbox: the OOM killer)", e.Result.ExitCode)
	case e.LimitHit == "pids":
		return fmt.Sprintf("exit status %d (the pids limit refused a fork)", e.Result.ExitCode)
	}
	return fmt.Sprintf("exit status %d", e.Result.ExitCode)
}
