// Command pool shows gosbx's warm path: sandboxes built ahead by an nsinit.Pool from one
// compiled policy, one per command, each used once. It runs every line of its standard
// input as a shell command in a fresh sandbox and prints what each printed.
//
//	printf 'ls\nid -u\n' | CGO_ENABLED=0 go run ./examples/pool /path/to/workspace
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
		fmt.Fprintln(os.Stderr, "usage: pool WORKSPACE < commands")
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
	// The template: the boundary for every command. Compile wants a command; each
	// pooled command brings its own process, which replaces it.
	template, err := policy.Compile(policy.Options{Workspace: os.Args[1], Args: []string{"true"}}, host)
	if err != nil {
		fmt.Fprintln(os.Stderr, "policy:", err)
		os.Exit(nsinit.ExitSetup)
	}
	pool, err := nsinit.NewPool(template, 2)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(nsinit.ExitSetup)
	}
	defer pool.Close()

	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		proc := *template.Process // a specs.Process: the template's environment and working directory
		proc.Args = []string{"sh", "-c", lines.Text()}
		cmd := pool.Command(&proc)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Timeout = time.Minute
		start := time.Now()
		err := cmd.Run()
		var setup *nsinit.SetupError
		var exitErr *nsinit.ExitError
		switch {
		case err == nil, errors.As(err, &exitErr):
			// cmd.Result is set once the command ran (it is nil when Start failed)
			fmt.Printf("$ %s  (exit %d, %v)\n%s", lines.Text(), cmd.Result.ExitCode, time.Since(start).Round(time.Microsecond), out.String())
		case errors.As(err, &setup):
			fmt.Fprintf(os.Stderr, "the sandbox could not be built (step %s): %v\n", setup.Step, setup.Err)
			os.Exit(nsinit.ExitSetup)
		default: // *nsinit.ExecError: not found, or not executable
			fmt.Printf("$ %s  (%v)\n", lines.Text(), err)
		}
	}
}
