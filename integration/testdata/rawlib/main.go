// Command rawlib is a library program that launches several sandboxes in one process,
// the way an agent server linking nsinit does: three one after another, then eight at
// once, each `sh -c 'echo N'` with its Stdout and Stderr both this program's stdout
// (the os/exec 2>&1 idiom); the first with the two swapped, printing "swapped" on its
// stdout (this program's stderr) and "1" on its stderr. With -allow it calls nsinit.AllowRawInit first. It prints
// each command's output, "dumpable-during N" (prctl PR_GET_DUMPABLE of this process
// while the first command runs), "concurrent: ok" or "concurrent: ERROR" (a launch made
// while the first command runs) and "dumpable N" (at the end). Used by
// integration/rawinit_test.go (review11 F1, F2: once a program had taken the raw init,
// every launch after the first failed at "clone"; stdio on another of 0-2 was refused).
//
//	rawlib [-allow] WORKSPACE
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/policy"
)

func main() {
	nsinit.Init()
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "-allow" {
		nsinit.AllowRawInit()
		args = args[1:]
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: rawlib [-allow] WORKSPACE")
		os.Exit(2)
	}
	host, err := policy.CurrentHost()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(nsinit.ExitSetup)
	}
	failed := false
	var mu sync.Mutex
	run := func(n int) {
		spec, err := policy.Compile(policy.Options{Workspace: args[0], Args: []string{"/bin/sh", "-c", "echo " + strconv.Itoa(n)}}, host)
		if err == nil {
			cmd := nsinit.Command(spec)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
			cmd.Timeout = time.Minute
			err = cmd.Run()
		}
		if err != nil {
			mu.Lock()
			failed = true
			mu.Unlock()
			fmt.Fprintf(os.Stderr, "launch %d: %v\n", n, err)
		}
	}
	// the first launch, with the process's dumpable flag read while its command runs
	// (after Start: the sandbox's setup is done)
	spec, err := policy.Compile(policy.Options{Workspace: args[0], Args: []string{"/bin/sh", "-c", "echo swapped; echo 1 >&2; read x; exit 0"}}, host)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(nsinit.ExitSetup)
	}
	first := nsinit.Command(spec)
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	first.Stdin = stdinR
	first.Stdout, first.Stderr = os.Stderr, os.Stdout // swapped: its "1" comes on stdout
	first.Timeout = time.Minute
	if err := first.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "launch 1:", err)
		os.Exit(1)
	}
	during, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	// one more launch while the first runs: the Go init's, or an error that says the
	// raw init runs
	if spec, err := policy.Compile(policy.Options{Workspace: args[0], Args: []string{"/bin/true"}}, host); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(nsinit.ExitSetup)
	} else if err := nsinit.Command(spec).Run(); err != nil {
		fmt.Printf("concurrent: %v\n", strings.ReplaceAll(err.Error(), "\n", " "))
	} else {
		fmt.Println("concurrent: ok")
	}
	stdinR.Close()
	stdin.Close()
	if err := first.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "launch 1:", err)
		failed = true
	}
	fmt.Printf("dumpable-during %d\n", during)
	for n := 2; n <= 3; n++ {
		run(n)
	}
	var wg sync.WaitGroup
	for n := 4; n <= 11; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(n)
		}()
	}
	wg.Wait()
	d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("dumpable %d\n", d)
	if failed {
		os.Exit(1)
	}
}
