// Package ownmountns runs a test again in a mount namespace of its own whose mounts are
// private (mount_namespaces(7): no mount or unmount elsewhere on the host propagates
// into it). The soak tests compare the host's mount table before and after their
// launches; other packages' tests, other users and container runtimes mount and unmount
// in the host's namespace at any time, so the comparison is made where only the test's
// own launches can change it. For tests only; a new mount namespace needs CAP_SYS_ADMIN.
package ownmountns

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// env is set in the environment of a test run again by Rerun.
const env = "GOSBX_SOAK_OWN_MOUNT_NS"

// Active reports whether this process is a test run again by Rerun.
func Active() bool { return os.Getenv(env) != "" }

// Rerun runs the test named by t again in a child test process (this test binary, only
// that test, verbose) in a new mount namespace, with extraEnv ("KEY=value") added to the
// environment; it fails t when the child fails or did not run the test, skips t when the
// child skipped it, and logs the child's output. The child is given until 5 s before t's
// deadline, or 10 minutes.
func Rerun(t *testing.T, extraEnv ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	if d, ok := t.Deadline(); ok {
		cancel()
		ctx, cancel = context.WithDeadline(t.Context(), d.Add(-5*time.Second))
	}
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(append(os.Environ(), env+"=1"), extraEnv...)
	// Go makes / and everything under it MS_REC|MS_PRIVATE after the unshare(2).
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	t.Logf("%s in its own mount namespace:\n%s", t.Name(), out)
	if err != nil {
		t.Fatalf("%s in its own mount namespace: %v", t.Name(), err)
	}
	if strings.Contains(string(out), "--- SKIP: "+t.Name()) {
		t.Skip("skipped in its own mount namespace")
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s in its own mount namespace did not run", t.Name())
	}
}
