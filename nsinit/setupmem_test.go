package nsinit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gosbx/gosbx/policy"
)

// The policy package refuses a memory limit below what the init needs, and its floor is
// this package's measured one.
func TestMinMemoryIsSetupMemory(t *testing.T) {
	if policy.MinMemory != SetupMemory {
		t.Errorf("policy.MinMemory %d, nsinit.SetupMemory %d", policy.MinMemory, SetupMemory)
	}
}

// An init killed by the sandbox's own memory limit before the command started is named
// as such (step "memory", the limit, what the sandbox needs), not "the init stage died
// during setup: signal: killed" (a new user's --memory 1M). The library takes a spec's
// limit as it is, so a 64 KiB one reaches the kernel here.
func TestSetupOOMNamed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a memory limit needs a cgroup: root on this host")
	}
	ws := testWorkspace(t)
	for i := 0; i < 3; i++ {
		spec := compile(t, policy.Options{Args: []string{"true"}, Workspace: ws, Resources: policy.Resources{Memory: "64M"}}, nil)
		small := int64(64 << 10)
		spec.Linux.Resources.Memory.Limit = &small
		err := Command(spec).Run()
		skipIfNoSandbox(t, err)
		var se *SetupError
		var ee *ExitError
		switch {
		case errors.As(err, &se):
			if se.Step != "memory" || !strings.Contains(se.Error(), "memory limit (65536 bytes)") || !strings.Contains(se.Error(), "MiB") {
				t.Errorf("setup killed by a 64 KiB limit: %v (step %q); want step memory naming the limit and the need", err, se.Step)
			}
		case errors.As(err, &ee) && ee.Result.OOMKilled:
			// the init survived its setup; the command was killed instead, and says so
		default:
			t.Errorf("a 64 KiB limit: %v (%T)", err, err)
		}
	}
}

// The policy package refuses a pids limit below what the sandbox's setup needs, and its
// floor is this package's.
func TestMinPidsIsSetupPids(t *testing.T) {
	if policy.MinPids != SetupPids {
		t.Errorf("policy.MinPids %d, nsinit.SetupPids %d", policy.MinPids, SetupPids)
	}
}

// A setup stopped by the sandbox's own pids limit is named as such (step "pids", the
// limit, what the sandbox needs), and the init's Go runtime crash report (a new user's
// --pids 8: "failed to create new OS thread", ~150 lines of stacks) does not reach the
// command's stderr. A library config's limit below SetupPids is refused before the
// clone (with 2 or 4 reaching the kernel, the init sometimes forked the command and
// then died on a thread it could not create, its crash report on the command's stderr).
func TestSetupPidsNamed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a pids limit needs a cgroup: root on this host")
	}
	ws := testWorkspace(t)
	for _, small := range []int64{2, 4, 8, 15, 2, 4, 8, 15} {
		spec := compile(t, policy.Options{Args: []string{"true"}, Workspace: ws, Resources: policy.Resources{Pids: 64}}, nil)
		spec.Linux.Resources.Pids.Limit = &small
		var stderr bytes.Buffer
		c := Command(spec)
		c.Stderr = &stderr
		err := c.Run()
		skipIfNoSandbox(t, err)
		var se *SetupError
		if !errors.As(err, &se) || se.Step != "pids" || !strings.Contains(se.Error(), fmt.Sprintf("pids limit (%d)", small)) ||
			!strings.Contains(se.Error(), "up to 16 tasks") {
			t.Errorf("setup under a pids limit of %d: %v (%T); want step pids naming the limit and the need", small, err, err)
		}
		if strings.Contains(stderr.String(), "goroutine") || strings.Contains(stderr.String(), "runtime") {
			t.Errorf("the init's crash report reached the command's stderr:\n%.2000s", stderr.String())
		}
	}
}
