// Command rawsetid is a library program that launches one sandbox whose seccomp filter
// sends the set-ID calls to the sandbox's init (seccomp.NoSetIDRules, as a root
// caller's filter does), from any caller: run as uid 65534 it lets the tests prove the
// raw init's set-ID handler (nsinit/rawsetid.go) before root callers take the raw init.
// Without -go it calls nsinit.AllowRawInit, so that the launch takes the raw init where
// the build allows it; with -plain the policy's own filter (no set-ID rules) stays, for
// a measure of what the listener costs. The command's first line must be "READY": this program then
// prints "dumpable N" (prctl PR_GET_DUMPABLE of this process while the command runs:
// 0 when the raw init, which shares its memory, set up the sandbox), then the
// command's further output, then "exit N". The command's stdin is this program's.
//
//	rawsetid [-go] [-plain] WORKSPACE [--ro DIR] -- CMD [ARGS...]
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/policy"
	"github.com/gosbx/gosbx/seccomp"
)

func main() {
	nsinit.Init()
	args := os.Args[1:]
	goInit, plain := false, false
	for len(args) > 0 && (args[0] == "-go" || args[0] == "-plain") {
		goInit, plain = goInit || args[0] == "-go", plain || args[0] == "-plain"
		args = args[1:]
	}
	if !goInit {
		nsinit.AllowRawInit()
	}
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: rawsetid [-go] WORKSPACE [--ro DIR] -- CMD [ARGS...]")
		os.Exit(2)
	}
	opts := policy.Options{Workspace: args[0]}
	args = args[1:]
	for len(args) > 1 && args[0] == "--ro" {
		opts.ReadOnly = append(opts.ReadOnly, args[1])
		args = args[2:]
	}
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintln(os.Stderr, "rawsetid: want -- CMD")
		os.Exit(2)
	}
	opts.Args = args[1:]
	exit := func(err error) {
		fmt.Fprintln(os.Stderr, "rawsetid:", err)
		os.Exit(nsinit.ExitSetup)
	}
	host, err := policy.CurrentHost()
	if err != nil {
		exit(err)
	}
	spec, err := policy.Compile(opts, host)
	if err != nil {
		exit(err)
	}
	if !plain {
		// a root caller's filter (the set-ID rules first), whoever runs this
		src, err := policy.CallerSeccomp(policy.NetworkSeccomp(nil, policy.NetNone), 0).Spec()
		if err != nil {
			exit(err)
		}
		if spec.Linux.Filter, err = seccomp.Compile(src); err != nil {
			exit(err)
		}
		if !spec.Linux.Filter.Notifies() {
			exit(fmt.Errorf("the filter does not notify"))
		}
	}
	cmd := nsinit.Command(spec)
	out, pw, err := os.Pipe()
	if err != nil {
		exit(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, pw, os.Stderr
	cmd.Timeout = 2 * time.Minute
	if err := cmd.Start(); err != nil {
		exit(err)
	}
	pw.Close()
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); err != nil || line != "READY\n" {
		fmt.Fprintf(os.Stderr, "rawsetid: no READY: %q %v\n", line, err)
	}
	d, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	fmt.Printf("dumpable %d\n", d)
	io.Copy(os.Stdout, r)
	code := -1
	if err := cmd.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "rawsetid:", err)
	}
	if cmd.Result != nil {
		code = cmd.Result.ExitCode
	}
	fmt.Printf("exit %d\n", code)
}
