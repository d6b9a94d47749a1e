// Command run shows gosbx's library API: it links nsinit, compiles the default policy
// for a workspace, runs one command in a sandbox and prints what happened.
//
//	CGO_ENABLED=0 go run ./examples/run /path/to/workspace sh -c 'echo hello > greeting; ls'
//
// Build it with CGO_ENABLED=0 (README, Library): the sandbox's init is this program
// re-executed, and a cgo build cannot set every thread's capabilities.
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/nsinit/cleanup"
	"github.com/gosbx/gosbx/policy"
)

func main() {
	nsinit.Init() // must come first: this binary is re-executed as the sandbox's init
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: run WORKSPACE CMD [ARGS...]")
		os.Exit(2)
	}
	host, err := policy.CurrentHost()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(nsinit.ExitSetup)
	}
	// Launches killed before their after-run cleanup (a .git/commondir their command
	// planted, which Compile would refuse) are completed first; the argument is every
	// tree this launch lets the sandbox write (the workspace, Options.ReadWrite).
	if _, failed, err := cleanup.CompleteJournals([]string{os.Args[1]}); err != nil || len(failed) > 0 {
		fmt.Fprintln(os.Stderr, "earlier launches' cleanup:", failed, err) // Start refuses what is unsafe
	}
	cfg, err := policy.Compile(policy.Options{Workspace: os.Args[1], Args: os.Args[2:]}, host) // a *config.Config
	if err != nil {
		fmt.Fprintln(os.Stderr, "policy:", err)
		os.Exit(nsinit.ExitSetup)
	}
	cmd := nsinit.Command(cfg)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Timeout = time.Minute
	err = cmd.Run()
	var setup *nsinit.SetupError
	var notRun *nsinit.ExecError
	switch {
	case errors.As(err, &setup):
		fmt.Fprintf(os.Stderr, "the sandbox could not be built (step %s): %v\n", setup.Step, setup.Err)
		os.Exit(nsinit.ExitSetup)
	case errors.As(err, &notRun):
		fmt.Fprintln(os.Stderr, "the command did not start:", notRun)
		os.Exit(notRun.ExitCode())
	}
	r := cmd.Result
	fmt.Fprintf(os.Stderr, "exit code %d, signal %d, timed out %v, wall %v\n", r.ExitCode, r.Signal, r.TimedOut, r.Wall.Round(time.Millisecond))
	os.Exit(r.ExitCode)
}
