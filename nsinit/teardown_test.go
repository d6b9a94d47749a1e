package nsinit

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/policy"
)

// With TeardownLater, Wait returns on the init's exit report, which comes once every
// other process of the sandbox is dead: a background sleeper of the command is gone
// from the host when Wait returns (checked at once), the exit status is the command's,
// and the init, still exiting then, is reaped in the background (its pid then gone).
func TestTeardownLater(t *testing.T) {
	ws := testWorkspace(t)
	link := filepath.Join(ws, "gosbx-nsinit-sleep-"+strconv.Itoa(os.Getpid()))
	if err := os.Symlink("/usr/bin/sleep", link); err != nil {
		t.Fatal(err)
	}
	var log eventLog
	c := Command(compile(t, policy.Options{Args: []string{"/bin/sh", "-c", `trap '' TERM; "$1" 100 </dev/null >/dev/null 2>&1 & exit 3`, "_", link}, Workspace: ws}, nil))
	c.Events = log.add
	c.TeardownLater = true
	err := c.Run()
	skipIfNoSandbox(t, err)
	left := procsByArgv0(link)
	t.Cleanup(func() {
		for _, p := range procsByArgv0(link) {
			unix.Kill(p, unix.SIGKILL)
		}
	})
	var ee *ExitError
	if !errors.As(err, &ee) || c.Result.ExitCode != 3 {
		t.Fatalf("Run: %v, want exit status 3", err)
	}
	if len(left) > 0 {
		t.Errorf("the command's background sleeper outlived Wait: pids %v", left)
	}
	ev := log.events()
	if len(ev) == 0 || ev[0].ChildPid <= 0 {
		t.Fatalf("no init pid in the events: %+v", ev)
	}
	for end := time.Now().Add(5 * time.Second); !gone(ev[0].ChildPid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the init %d was not reaped after Wait", ev[0].ChildPid)
		}
	}
}

// procsByArgv0 lists the host's processes whose argv[0] is argv0.
func procsByArgv0(argv0 string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.HasPrefix(string(b), argv0+"\x00") {
			pids = append(pids, pid)
		}
	}
	return pids
}
