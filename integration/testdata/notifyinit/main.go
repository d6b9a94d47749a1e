// Command notifyinit is a program that links nsinit and, like some of its dependencies
// might, asks os/signal for SIGUSR1, SIGUSR2 and SIGWINCH in a package init: the
// sandbox's init stage is this program again, so the init runs that init() too. It
// runs one command in a sandbox, waits for its line "READY", sends it those three
// signals through Cmd.Signal (to the sandbox's init, which forwards them), and prints
// the command's output. Used by integration/signals_test.go (review8 F3: the signals
// went to this program's channel in the init, not to the command).
//
//	notifyinit WORKSPACE CMD [ARGS...]
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/policy"
)

func init() {
	signal.Notify(make(chan os.Signal, 8), syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
}

func main() {
	nsinit.Init()
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: notifyinit WORKSPACE CMD [ARGS...]")
		os.Exit(2)
	}
	host, err := policy.CurrentHost()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(nsinit.ExitSetup)
	}
	spec, err := policy.Compile(policy.Options{Workspace: os.Args[1], Args: os.Args[2:]}, host)
	if err != nil {
		fmt.Fprintln(os.Stderr, "policy:", err)
		os.Exit(nsinit.ExitSetup)
	}
	cmd := nsinit.Command(spec)
	out, pw, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(nsinit.ExitSetup)
	}
	cmd.Stdout, cmd.Stderr = pw, os.Stderr
	cmd.Timeout = time.Minute
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "notifyinit:", err)
		os.Exit(nsinit.ExitSetup)
	}
	pw.Close()
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); err != nil || line != "READY\n" {
		fmt.Fprintf(os.Stderr, "notifyinit: no READY: %q %v\n", line, err)
	}
	for _, s := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH} {
		cmd.Signal(s)
	}
	rest, _ := io.ReadAll(r)
	os.Stdout.Write(rest)
	cmd.Wait()
}
