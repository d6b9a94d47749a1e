package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scopeSeq numbers the scopes of this test process.
var scopeSeq atomic.Int64

// cgroupScope is a set of cgroup v1 groups made for one gosbx run (one in each
// hierarchy gosbx makes its groups in), under this test process's own groups: the run
// starts in them, so the groups of its sandboxes are made beneath them and nowhere else.
// What a run left behind is then told from what other launches on the host (other
// packages' tests, other callers) make and sweep beside it at the same time.
type cgroupScope struct {
	dirs []string
}

// newCgroupScope makes the scope's groups, named test-scope-<pid>-<n> (never gosbx-…,
// which any launch's sweep would take for an ownerless sandbox group and empty), and
// removes them at the end of the test. nil on a host without cgroup v1 hierarchies
// (a cgroup2-only host), or when not root.
func newCgroupScope(t *testing.T) *cgroupScope {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("test-scope-%d-%d", os.Getpid(), scopeSeq.Add(1))
	s := &cgroupScope{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, ctrl := range strings.Split(f[1], ",") {
			switch ctrl {
			case "memory", "pids", "cpu", "cpuacct": // the hierarchies gosbx uses (cgroup/v1.go)
			default:
				continue
			}
			d := filepath.Join("/sys/fs/cgroup", ctrl, f[2], name)
			if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
				t.Fatalf("cgroup scope: %v", err)
			}
			s.dirs = append(s.dirs, d)
		}
	}
	if len(s.dirs) == 0 {
		return nil
	}
	t.Cleanup(func() {
		for _, d := range s.dirs {
			removeGroupTree(d)
		}
	})
	return s
}

// wrap makes cmd start in the scope: a root shell writes its own pid to each group's
// cgroup.procs, then execs what cmd ran (setpriv drops to the caller after that), so
// cmd.Process.Pid stays the gosbx process's.
func (s *cgroupScope) wrap(cmd *exec.Cmd) {
	if s == nil {
		return
	}
	args := []string{"/bin/sh", "-c", `while [ "$1" != -- ]; do echo $$ > "$1/cgroup.procs" || exit 125; shift; done; shift; exec "$@"`, "sh"}
	args = append(append(append(args, s.dirs...), "--", cmd.Path), cmd.Args[1:]...)
	cmd.Path, cmd.Args = "/bin/sh", args
}

// leftovers lists the groups left inside the scope: any is one the run made and did
// not remove (no other launch makes groups there).
func (s *cgroupScope) leftovers() []string {
	if s == nil {
		return nil
	}
	var left []string
	for _, d := range s.dirs {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if e.IsDir() {
				left = append(left, filepath.Join(d, e.Name()))
			}
		}
	}
	return left
}

// removeGroupTree removes the group d and the groups under it, deepest first,
// retrying while the last processes leave (v1 refuses to remove a group with one).
func removeGroupTree(d string) {
	ents, _ := os.ReadDir(d)
	for _, e := range ents {
		if e.IsDir() {
			removeGroupTree(filepath.Join(d, e.Name()))
		}
	}
	for i := 0; i < 100; i++ {
		if err := os.Remove(d); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
