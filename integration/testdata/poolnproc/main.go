// Command poolnproc runs one command in a sandbox of an nsinit.Pool whose template has
// a process limit (--pids), and prints the command's output and then the result's
// limits mechanism: "LIMITS <Result.Limits>". Used by integration/nproc_test.go to
// show that a pooled sandbox of an unprivileged caller on a host without a usable
// cgroup still has its process limit.
//
//	poolnproc WORKSPACE PIDS CMD [ARGS...]
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/policy"
)

func main() {
	nsinit.Init()
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: poolnproc WORKSPACE PIDS CMD [ARGS...]")
		os.Exit(2)
	}
	pids, err := strconv.ParseInt(os.Args[2], 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	host, err := policy.CurrentHost()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(nsinit.ExitSetup)
	}
	template, err := policy.Compile(policy.Options{Workspace: os.Args[1], Args: []string{"true"},
		Resources: policy.Resources{Pids: pids}}, host)
	if err != nil {
		fmt.Fprintln(os.Stderr, "policy:", err)
		os.Exit(nsinit.ExitSetup)
	}
	pool, err := nsinit.NewPool(template, 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(nsinit.ExitSetup)
	}
	defer pool.Close()
	proc := *template.Process
	proc.Args = os.Args[3:]
	cmd := pool.Command(&proc)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Timeout = time.Minute
	err = cmd.Run()
	var exitErr *nsinit.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		fmt.Fprintln(os.Stderr, "poolnproc:", err)
		os.Exit(nsinit.ExitSetup)
	}
	fmt.Printf("LIMITS %s\n", cmd.Result.Limits)
}
