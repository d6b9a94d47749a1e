// Command gosbx runs untrusted commands in a Linux sandbox: new namespaces, a fresh
// read-only root of positive bind mounts, one writable workspace, no capabilities.
//
// Exit status: the command's own; 128+S when a signal S killed it; 124 on timeout;
// 125 when the sandbox could not be built or the usage is wrong (the command did not
// run); 126 when the command is not executable; 127 when it is not found.
//
//go:debug updatemaxprocs=0
package main

// updatemaxprocs=0 (above): no goroutine of the runtime's that re-reads the CPU quota
// each second to change GOMAXPROCS (Go 1.25): a launch is milliseconds, and its start
// paid for that goroutine and a thread woken for it (docs/decisions.md "Speed,
// seventh attempt: the launcher's CPU").

import (
	"errors"
	"fmt"
	"os"

	"github.com/gosbx/gosbx/doctor"
	"github.com/gosbx/gosbx/nsinit"
)

func main() {
	nsinit.Init() // the re-executed init stage never returns from here
	if len(os.Args) > 1 && os.Args[1] == doctor.ProbeArg {
		os.Exit(doctor.Probe(os.Args[2:])) // gosbx doctor's probes, in a new namespace or a sandbox
	}
	if len(os.Args) > 1 && os.Args[1] == supervisorArg {
		os.Exit(superviseMain()) // a session's supervisor, started by gosbx session start
	}
	os.Exit(run(os.Args[1:]))
}

// usageError is bad command-line input: exit 125, nothing ran.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

// exitCoder is an error that carries its own exit status.
type exitCoder interface{ ExitCode() int }

func run(args []string) int {
	var err error
	if r, statusFd, cmd, ok := parseSessionExec(args); ok {
		err = runSessionExec(r, statusFd, cmd) // the warm path, without cobra
	} else {
		root := newRootCmd(args)
		root.SetArgs(args)
		err = root.Execute()
	}
	if err == nil {
		return 0
	}
	var st statusError
	if errors.As(err, &st) {
		return int(st)
	}
	fmt.Fprintln(os.Stderr, "gosbx: "+nsinit.ForCLI(err).Error())
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return nsinit.ExitSetup
}

// statusError carries the command's exit status out of cobra without a message.
type statusError int

func (s statusError) Error() string { return fmt.Sprintf("exit status %d", int(s)) }
