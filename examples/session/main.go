// Command session shows an nsinit.Session: one sandbox, built once from a compiled
// policy, that runs every line of standard input as a shell command, one after the
// other, in the same namespaces: what a line starts in the background is there for the
// next (a server on the sandbox's loopback, a file in its /tmp).
//
//	printf 'python3 -m http.server 8000 >/dev/null 2>&1 &\nsleep 1; curl -sI localhost:8000\n' |
//		CGO_ENABLED=0 go run ./examples/session /path/to/workspace
//
// Build it with CGO_ENABLED=0 (README, Library): the sandbox's init is this program
// re-executed, and a cgo build cannot set every thread's capabilities.
package main

import (
	"bufio"
	"bytes"
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
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: session WORKSPACE < commands")
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
	// The session's boundary; Compile wants a command, each line brings its own.
	cfg, err := policy.Compile(policy.Options{Workspace: os.Args[1], Args: []string{"sh"}}, host)
	if err != nil {
		fmt.Fprintln(os.Stderr, "policy:", err)
		os.Exit(nsinit.ExitSetup)
	}
	sess, err := nsinit.NewSession(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // a *nsinit.SetupError: nothing was left behind
		os.Exit(nsinit.ExitSetup)
	}
	// Everything the lines started ends here: SIGTERM, then SIGKILL after a second.
	defer sess.Close(time.Second)

	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		proc := *cfg.Process // the session's environment, working directory and user
		proc.Args = []string{"sh", "-c", lines.Text()}
		cmd := sess.Command(&proc)
		// the output is held until the line ends, so that it follows its own header (as
		// examples/pool prints it)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Timeout = time.Minute // this command's process group, not the session
		err := cmd.Run()
		var exitErr *nsinit.ExitError
		switch {
		case err == nil, errors.As(err, &exitErr):
			fmt.Printf("$ %s  (exit %d)\n%s", lines.Text(), cmd.Result.ExitCode, out.String())
		default:
			fmt.Printf("$ %s  (not run: %v)\n%s", lines.Text(), err, out.String()) // *SetupError, *ExecError
		}
	}
}
