package nsinit

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// SetupPids is what a sandbox's own tasks need of a pids limit before the command runs:
// the init's threads (its Go runtime, GOMAXPROCS=1), the holder and the command's first
// process. The launcher's threads are outside the group and do not count. Measured on
// Linux 6.18 (2 cores) as the group's pids.peak of sandboxes running /bin/true: 8-12
// over 60 launches; --pids 10 failed 2 launches in 10. The policy package refuses a
// smaller --pids up front (policy.MinPids).
const SetupPids = 16

// setupPidsError is the error of a setup stopped with the group's pids limit hit
// (pids.events "max", v1 and v2): a thread or process the sandbox itself needs was
// refused. how says how the init ended and what its runtime said, or "" when the
// init reported the failure itself.
func setupPidsError(spec *config.Config, how string) error {
	limit := "its pids limit"
	if r := spec.Linux.Resources; r != nil && r.Pids != nil && r.Pids.Limit != nil {
		limit = fmt.Sprintf("its pids limit (%d)", *r.Pids.Limit)
	}
	if how != "" {
		how = " (" + how + ")"
	}
	return fmt.Errorf("the sandbox's own setup was refused a thread or process by %s%s: the limit is below what the "+
		"sandbox itself needs, up to %d tasks (the init's threads, pid 1 of the commands, the command's first process) "+
		"before the command's own; raise it", limit, how, SetupPids)
}

// diedHow is how the init ended, and what it said on its fd 2 during setup.
func diedHow(ws unix.WaitStatus, stderr string) string {
	if stderr == "" {
		return describe(ws)
	}
	return describe(ws) + ": " + stderr
}

// maxSetupOutput bounds what is kept of the init's fd 2 during setup: a Go runtime
// crash report starts with its cause, and the stacks after it are not needed.
const maxSetupOutput = 16 << 10

// setupOutput is what the init wrote on its fd 2 (a pipe, stderrFd) while it built
// the sandbox: nothing, unless its Go runtime crashed.
type setupOutput struct {
	done chan struct{}
	buf  []byte
}

// readSetupOutput reads r until every writer is gone (the init restored the command's
// stderr, or every process of the sandbox ended), keeping maxSetupOutput bytes. A nil r
// (the raw init's launch: no Go runtime that could crash) is none: nil, whose summary
// is "".
func readSetupOutput(r *os.File) *setupOutput {
	if r == nil {
		return nil
	}
	o := &setupOutput{done: make(chan struct{})}
	go func() {
		defer close(o.done)
		defer r.Close()
		var b [4096]byte
		for {
			n, err := r.Read(b[:])
			if keep := min(n, maxSetupOutput-len(o.buf)); keep > 0 {
				o.buf = append(o.buf, b[:keep]...)
			}
			if err != nil {
				return
			}
		}
	}()
	return o
}

// summary is the first lines of the init's setup output (for a Go runtime crash, the
// lines before the stacks: "runtime: failed to create new OS thread …", "fatal error:
// newosproc"), joined with "; ", or "". Called once the sandbox's processes are killed,
// it waits for the pipe's end, at most a second (a writer that outlived them).
func (o *setupOutput) summary() string {
	if o == nil {
		return ""
	}
	select {
	case <-o.done:
	case <-time.After(time.Second):
		return ""
	}
	head, _, _ := bytes.Cut(o.buf, []byte("\n\n"))
	var lines []string
	for _, l := range strings.Split(string(head), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "[signal") && len(lines) < 4 {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}
