package nsinit

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/policy"
)

// A prestarted init whose clone parameters are the config's runs the command (the
// first event names its pid); one whose are not is killed and reaped by Start, and the
// command runs in the namespaces its config asks for (the host's network here).
func TestPrestartTakenOrNot(t *testing.T) {
	ws := testWorkspace(t)
	hostNS, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"/bin/sh", "-c", "readlink /proc/self/ns/net; exit 5"}
	own := compile(t, policy.Options{Args: args, Workspace: ws}, nil)
	for _, net := range []string{"", policy.NetHost} {
		spec := compile(t, policy.Options{Args: args, Workspace: ws, Net: net}, nil)
		var out bytes.Buffer
		pre, err := Prestart(own, nil, &out, nil)
		skipIfNoSandbox(t, err)
		if err != nil {
			t.Fatalf("Prestart: %v", err)
		}
		pid := pre.Pid()
		var log eventLog
		c := Command(spec)
		c.Stdout, c.Events, c.Prestarted = &out, log.add, pre
		if err := c.Start(); err != nil {
			t.Fatalf("net %q: Start: %v", net, err)
		}
		ev := log.events()
		taken := ev[0].ChildPid == pid
		if taken != (net == "") {
			t.Errorf("net %q: the init %d, the prestarted one %d: taken %v", net, ev[0].ChildPid, pid, taken)
		}
		if !taken && !gone(pid) {
			t.Errorf("net %q: the prestarted init %d not taken, and not reaped by Start", net, pid)
		}
		if c.Prestarted != nil || pre.Pid() != 0 {
			t.Errorf("net %q: Start left the prestarted init to its caller", net)
		}
		var ee *ExitError
		if err := c.Wait(); !errors.As(err, &ee) || c.Result.ExitCode != 5 {
			t.Fatalf("net %q: Wait: %v", net, err)
		}
		if ns := strings.TrimSpace(out.String()); (ns == hostNS) != (net == policy.NetHost) {
			t.Errorf("net %q: the command's net namespace %s, the host's %s", net, ns, hostNS)
		}
		pre.Close() // nothing to do once taken or closed
	}
}

// Close kills and reaps a prestarted init no Cmd took, and lets go of its host id.
func TestPrestartClose(t *testing.T) {
	ws := testWorkspace(t)
	spec := compile(t, policy.Options{Args: []string{"/bin/true"}, Workspace: ws}, nil)
	pre, err := Prestart(spec, nil, nil, nil)
	skipIfNoSandbox(t, err)
	if err != nil {
		t.Fatalf("Prestart: %v", err)
	}
	pid := pre.Pid()
	var lock string
	if pre.hid != nil {
		lock = filepath.Join(hostIDDir, strconv.Itoa(int(pre.hid.id)))
		if _, err := os.Stat(lock); err != nil {
			t.Fatalf("the host id's lock file: %v", err)
		}
	}
	if pid <= 0 || gone(pid) {
		t.Fatalf("no prestarted init: pid %d", pid)
	}
	pre.Close()
	if !gone(pid) {
		t.Errorf("the prestarted init %d outlived Close", pid)
	}
	if lock != "" {
		if _, err := os.Stat(lock); err == nil {
			t.Errorf("the host id's lock file %s outlived Close", lock)
		}
	}
	if pre.Pid() != 0 {
		t.Errorf("Pid after Close: %d", pre.Pid())
	}
	pre.Close()
}

// One Prestarted given to two Cmds is the first's alone: the second draws a sandbox id
// of its own (its cgroup, its host id's holder) and clones its own init; one given to
// a Cmd after Close is not used either.
func TestPrestartOneCmd(t *testing.T) {
	ws := testWorkspace(t)
	spec := compile(t, policy.Options{Args: []string{"/bin/true"}, Workspace: ws}, nil)
	pre, err := Prestart(spec, nil, nil, nil)
	skipIfNoSandbox(t, err)
	if err != nil {
		t.Fatalf("Prestart: %v", err)
	}
	defer pre.Close()
	pid := pre.Pid()
	var logA, logB eventLog
	a, b := Command(spec), Command(spec)
	a.Events, b.Events = logA.add, logB.add
	a.Prestarted, b.Prestarted = pre, pre
	if err := a.Start(); err != nil {
		t.Fatalf("A: Start: %v", err)
	}
	if err := b.Run(); err != nil {
		t.Fatalf("B: Run: %v", err)
	}
	if err := a.Wait(); err != nil {
		t.Fatalf("A: Wait: %v", err)
	}
	if logA.events()[0].ChildPid != pid {
		t.Errorf("A did not take the prestarted init %d", pid)
	}
	if logB.events()[0].ChildPid == pid {
		t.Errorf("B ran in A's prestarted init %d", pid)
	}
	if a.own.id != pre.id || b.own.id == pre.id || b.own.id == "" {
		t.Errorf("sandbox ids: prestarted %s, A %s, B %s (B must have its own)", pre.id, a.own.id, b.own.id)
	}
	closed, err := Prestart(spec, nil, nil, nil)
	if err != nil {
		t.Fatalf("Prestart: %v", err)
	}
	closed.Close()
	c := Command(spec)
	c.Prestarted = closed
	if err := c.Run(); err != nil {
		t.Fatalf("C: Run: %v", err)
	}
	if c.own.id == closed.id || c.own.id == "" {
		t.Errorf("a closed Prestarted handed its sandbox id %s to a Cmd (%s)", closed.id, c.own.id)
	}
}

// A launch that fails after it took the prestarted init's host id (a --publish port
// in use here) kills and reaps that init before the id is free: whoever next takes
// the id's lock finds no process running as it.
func TestPrestartFailedLaunchFreesIDAfterInit(t *testing.T) {
	ws := testWorkspace(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	args := []string{"/bin/true"}
	guess := compile(t, policy.Options{Args: args, Workspace: ws}, nil)
	spec := compile(t, policy.Options{Args: args, Workspace: ws, Publish: []string{"127.0.0.1:" + strconv.Itoa(port) + ":80"}}, nil)
	for i := 0; i < 5; i++ {
		pre, err := Prestart(guess, nil, nil, nil)
		skipIfNoSandbox(t, err)
		if err != nil {
			t.Fatalf("Prestart: %v", err)
		}
		if pre.hid == nil {
			pre.Close()
			t.Skip("no host id: not a root caller")
		}
		pid, id := pre.Pid(), pre.hid.id
		lock, err := os.Open(filepath.Join(hostIDDir, strconv.Itoa(int(id))))
		if err != nil {
			t.Fatal(err)
		}
		freed := make(chan bool)
		go func() {
			flockRetry(int(lock.Fd()), unix.LOCK_EX) // the id is free
			freed <- !gone(pid)
		}()
		c := Command(spec)
		c.Prestarted = pre
		var se *SetupError
		if err := c.Start(); !errors.As(err, &se) || se.Step != "publish" {
			t.Fatalf("Start with port %d in use: %v", port, err)
		}
		if <-freed {
			t.Fatalf("the host id %d was free while the prestarted init %d still lived", id, pid)
		}
		lock.Close()
	}
}
