package nsinit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
