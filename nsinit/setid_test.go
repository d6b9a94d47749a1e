package nsinit

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/policy"
	"github.com/gosbx/gosbx/seccomp"
)

// notifyFilter is a program that can return SECCOMP_RET_USER_NOTIF.
var notifyFilter = seccomp.Program{
	{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF},
	{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
}

// With a filter that notifies, pid 1 makes its own procfs once the root is built,
// before it enters it (the host's /proc still in view), starts its one set-ID handler
// before the command is forked, and the process stage loads the filter with a listener, sends it
// to pid 1 and closes it, last before execve; without one, neither happens
// (TestStageOrder).
func TestSetIDStages(t *testing.T) {
	spec := stageSpec()
	spec.Linux.Filter = notifyFilter
	r := &recorder{spec: spec}
	s := &sandboxInit{sys: r}
	if _, _, err := runWithCwd(s, "/work"); err != nil {
		t.Fatal(err)
	}
	i := slices.Index(r.calls, "setIDProc")
	if i < 0 || r.calls[i-1] != "closeFds [7 8]" || !strings.HasPrefix(r.calls[i+1], "setUserCounts ") || r.calls[i+2] != "pivotRoot" {
		t.Errorf("setIDProc is not between the mount and pivot_root steps:\n%q", r.calls)
	}
	// the one handler thread: made during setup, once the root is entered and the
	// capabilities limited, before any command is forked
	h := slices.Index(r.calls, "startSetID")
	if h < 0 || h < slices.Index(r.calls, "limitCaps") || h > slices.Index(r.calls, "fork") {
		t.Errorf("startSetID is not between limitCaps and fork:\n%q", r.calls)
	}
	tail := []string{
		"  set no_new_privs",
		"  seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER|WAIT_KILLABLE_RECV)",
		"  send the seccomp listener to pid 1",
		"  close the seccomp listener",
		"  execve /usr/bin/sh",
		"send exec",
		"dropAllCaps",
	}
	if got := r.calls[len(r.calls)-len(tail):]; !slices.Equal(got, tail) {
		t.Errorf("process stage ends with\n%q\nwant\n%q", got, tail)
	}
}

// keptSys answers the listener's seccomp(2) call with descriptor 77 and records the
// arguments of every call.
type keptSys struct{ calls [][6]uintptr }

func (k *keptSys) do(op *procOp) (uintptr, unix.Errno) {
	k.calls = append(k.calls, op.a)
	if op.kind == opAbsCwd {
		return 1, 0 // p.cwd holds "/" already
	}
	if op.nr == unix.SYS_SECCOMP {
		return 77, 0
	}
	return 0, 0
}

// The listener the seccomp(2) call returns is what the plan sends (SCM_RIGHTS) on the
// child's end of the socket pair, and what it closes; the flags ask for a listener.
func TestSetIDPlanListener(t *testing.T) {
	spec := stageSpec()
	dir, err := openDevNull()
	if err != nil {
		t.Fatal(err)
	}
	p, err := planProcess(spec.Process, notifyFilter, dir, "/usr/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	defer p.closeListen()
	defer dir.Close()
	k := &keptSys{}
	p.cwd[0] = '/'
	if i, errno := runSteps(p, k); i >= 0 {
		t.Fatalf("runSteps failed at %d: %v", i, errno)
	}
	n := len(p.ops)
	seccompOp, send, closeOp := p.ops[n-4], p.ops[n-3], p.ops[n-2]
	if seccompOp.nr != unix.SYS_SECCOMP || seccompOp.kind != opKeepFd ||
		seccompOp.a[1] != unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV {
		t.Errorf("seccomp op %+v: want SECCOMP_FILTER_FLAG_NEW_LISTENER|WAIT_KILLABLE_RECV, its result kept", seccompOp)
	}
	if send.nr != unix.SYS_SENDMSG || send.a[0] != uintptr(p.listen[1]) || p.fdmsg.fd != 77 {
		t.Errorf("sendmsg on %d of fd %d: want fd 77 on the child's end %d", send.a[0], p.fdmsg.fd, p.listen[1])
	}
	if closeOp.nr != unix.SYS_CLOSE || k.calls[len(k.calls)-2][0] != 77 {
		t.Errorf("close op %+v called with %d: want close(77)", closeOp, k.calls[len(k.calls)-2][0])
	}
}

func openDevNull() (*os.File, error) { return os.Open(os.DevNull) }

// A pooled sandbox's command is served too (as root, whose filter notifies): chmod
// 4755 and chmod g+s succeed, and the host sees the modes without the bits.
func TestSetIDPooled(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a root caller's filter: run as root")
	}
	template, ws := poolTemplate(t, policy.Options{})
	if !template.Linux.Filter.Notifies() {
		t.Fatal("a root caller's filter does not notify")
	}
	p := newTestPool(t, template, 1)
	c := p.Command(poolProc(template, "sh", "-c", "umask 022; touch f && chmod 4755 f && mkdir d && chmod g+s d"))
	if err := runPooled(t, c); err != nil {
		t.Fatalf("Run = %v", err)
	}
	for name, want := range map[string]os.FileMode{"f": 0o755, "d": 0o755} {
		fi, err := os.Stat(filepath.Join(ws, name))
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid); m != want {
			t.Errorf("host: %s is %v, want %v", name, m, want)
		}
	}
}
