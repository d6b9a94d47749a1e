package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/policy"
)

const execExamples = `  # run a shell command with the current directory as the workspace
  gosbx exec -- sh -c 'make test'

  # a Go project offline: the toolchain and the module cache read-only, a 10 minute limit
  gosbx exec --workspace ~/src/app --ro /usr/local/go --ro "$(go env GOMODCACHE)" \
    --env GOMODCACHE="$(go env GOMODCACHE)" --env GOFLAGS=-mod=mod --timeout 10m -- /usr/local/go/bin/go test ./...

  # git identity from the real home, read-only (HOME inside is a private, empty tmpfs)
  gosbx exec --ro ~/.gitconfig -- git log -1

  # allow the network, and report progress as JSON lines on fd 3
  gosbx exec --net host --status-fd 3 -- curl -sI https://example.com 3>status.json`

func newExecCmd() *cobra.Command {
	var o policy.Options
	var timeout, statusFd string
	c := &cobra.Command{
		Use:   "exec [flags] -- CMD [ARGS...]",
		Short: "Run a command in a new sandbox",
		Long: `Run CMD in a new sandbox. Inside: the system directories (/usr, /etc, and the
/bin /lib /sbin links) read-only; the workspace read-write at its own path (its .git
read-only); private tmpfs /tmp, /var/tmp, /run, /dev/shm and HOME; a fresh /proc and a
minimal /dev; no network but lo (unless --net host); a cleared environment (PATH, LANG,
LC_*, TZ, TERM kept; HOME and TMPDIR private); every capability dropped; no_new_privs.

Exit status: the command's own; 128+N if signal N killed it; 124 on --timeout; 125 if
the sandbox could not be built or the flags are wrong (the command did not run); 126 if
CMD is not executable; 127 if CMD is not found.`,
		Example:               execExamples,
		DisableFlagsInUseLine: true,
		RunE: func(c *cobra.Command, args []string) error {
			o.Args = args
			var err error
			if o.Timeout, err = parseTimeout(timeout); err != nil {
				return usageError{err}
			}
			var status *os.File
			if statusFd != "" {
				if status, err = openStatusFd(statusFd); err != nil {
					return usageError{err}
				}
			}
			return execute(o, status)
		},
	}
	f := c.Flags()
	f.SetInterspersed(false)
	f.StringVar(&o.Workspace, "workspace", "", "the read-write `DIR`, bound at its own path (default: the current directory)")
	f.StringVar(&o.Chdir, "chdir", "", "working `DIR` inside (a relative DIR is taken from the workspace); default: the current directory if inside the workspace, else the workspace")
	f.StringArrayVar(&o.ReadOnly, "ro", nil, "bind `PATH` read-only at the same path (repeatable; relative to the current directory)")
	f.StringArrayVar(&o.ReadWrite, "rw", nil, "bind `PATH` read-write at the same path (repeatable; relative to the current directory)")
	f.StringArrayVar(&o.Env, "env", nil, "set `KEY=VALUE` inside (repeatable)")
	f.StringArrayVar(&o.PassEnv, "pass-env", nil, "pass the caller's variable `KEY` through (repeatable)")
	f.StringVar(&o.Net, "net", policy.NetNone, "network `MODE`: none (a new namespace with only lo) or host")
	f.StringVar(&timeout, "timeout", "", "kill the whole sandbox after `DURATION` (e.g. 30s, 5m; a bare number is seconds; 0 = none); exit 124")
	f.StringVar(&statusFd, "status-fd", "", "write JSON status lines to file descriptor `N`")
	f.StringVar(&o.Hostname, "hostname", "", "hostname `NAME` inside (default \"gosbx\")")
	return c
}

// parseTimeout reads --timeout: a Go duration ("30s", "5m") or a number of seconds;
// 0 means no timeout (as timeout(1)). Anything that does not fit a time.Duration, or a
// positive value that rounds to nothing, is refused rather than silently unlimited.
func parseTimeout(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	bad := fmt.Errorf("--timeout %q: want 0 or a positive duration such as 30s or 5m (at most %v)", s, time.Duration(math.MaxInt64))
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(n) || n < 0 || n*float64(time.Second) >= math.MaxInt64 {
			return 0, bad
		}
		d := time.Duration(n * float64(time.Second))
		if n > 0 && d <= 0 {
			return 0, bad
		}
		return d, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, bad
	}
	return d, nil
}

func openStatusFd(s string) (*os.File, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("--status-fd %q: want a file descriptor number", s)
	}
	if _, err := unix.FcntlInt(uintptr(n), unix.F_GETFD, 0); err != nil {
		return nil, fmt.Errorf("--status-fd %d: %w", n, err)
	}
	unix.CloseOnExec(n)
	return os.NewFile(uintptr(n), "status"), nil
}

// forwardedSignals reach the command through the sandbox's init.
var forwardedSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH}

func execute(o policy.Options, status *os.File) error {
	host, err := policy.CurrentHost()
	if err != nil {
		return err
	}
	emit := func(e nsinit.Event) {
		if status != nil {
			b, _ := json.Marshal(e)
			status.Write(append(b, '\n'))
		}
	}
	spec, err := policy.Compile(o, host)
	if err != nil {
		emit(nsinit.Event{Error: err.Error(), Step: "policy", Status: nsinit.ExitSetup})
		return &nsinit.SetupError{Step: "policy", Err: err}
	}
	cmd := nsinit.Command(spec)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Timeout = o.Timeout
	if status != nil {
		cmd.Events = emit
	}
	// Catch forwarded signals before the sandbox exists, so none is lost or kills us.
	sigc := make(chan os.Signal, 16)
	signal.Notify(sigc, forwardedSignals...)
	defer signal.Stop(sigc)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		for s := range sigc {
			cmd.Signal(s)
		}
	}()
	err = cmd.Wait()
	var ee *nsinit.ExitError
	if err != nil && !errors.As(err, &ee) {
		return err
	}
	if cmd.Result.TimedOut {
		fmt.Fprintf(os.Stderr, "gosbx: timed out after %v; the sandbox was killed\n", o.Timeout)
	}
	if cmd.Result.ExitCode != 0 {
		return statusError(cmd.Result.ExitCode)
	}
	return nil
}
