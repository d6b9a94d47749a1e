package integration

import (
	"os/exec"
	"strings"
	"testing"
)

// vsockProbe binds a vsock stream socket on VMADDR_CID_ANY and a free port, and makes
// a socketpair of the same family, and prints what each gave.
const vsockProbe = `
import errno, socket
try:
    s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    s.bind((socket.VMADDR_CID_ANY, socket.VMADDR_PORT_ANY))
    print("BIND ok", s.getsockname()[1])
except OSError as e:
    print("BIND", errno.errorcode.get(e.errno, e.errno))
try:
    socket.socketpair(socket.AF_VSOCK, socket.SOCK_STREAM)
    print("PAIR ok")
except OSError as e:
    print("PAIR", errno.errorcode.get(e.errno, e.errno))
`

// AF_VSOCK is not confined by a network namespace: under --net none (the default) the
// filter refuses it, and every other family a network namespace does not confine, with
// EAFNOSUPPORT; with --net host it works as on the host. The probe first runs on the
// host, so the test fails if the filter's rule is removed (and is skipped on a host
// without vsock). From an attack review (issue 15, item 5).
func TestVsockRefusedWithoutHostNetwork(t *testing.T) {
	requireBinary(t)
	out, err := exec.Command(python, "-c", vsockProbe).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "BIND ok") {
		t.Skipf("vsock does not work on this host, nothing to refuse: %v %s", err, out)
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.run("--", python, "-c", vsockProbe)
		mustSucceed(t, r, "vsock probe")
		if !strings.Contains(r.stdout, "BIND EAFNOSUPPORT") || !strings.Contains(r.stdout, "PAIR EAFNOSUPPORT") {
			t.Errorf("--net none: AF_VSOCK not refused with EAFNOSUPPORT:\n%v", r)
		}
		r = s.run("--net", "host", "--", python, "-c", vsockProbe)
		mustSucceed(t, r, "vsock probe, --net host")
		if !strings.Contains(r.stdout, "BIND ok") {
			t.Errorf("--net host: AF_VSOCK should work as on the host:\n%v", r)
		}
	})
}

// gosbx seccomp export shows the socket rule (socket's domain, refused with
// EAFNOSUPPORT), which the filter of a policy with network.mode host leaves out.
func TestSeccompExportSocketRule(t *testing.T) {
	requireBinary(t)
	ret := "socket if domain (32 bits) != AF_UNIX and "
	out, err := exec.Command(gosbxBin, "seccomp", "export", "--format", "text").Output()
	must(t, err)
	if !strings.Contains(string(out), ret) {
		t.Errorf("the exported filter has no %q (socket families refused with EAFNOSUPPORT)", ret)
	}
	s := newSandbox(t, rootCaller)
	pol := s.writeWS("../hostnet.yaml", "extends: agent\nnetwork: {mode: host}\n", 0o644)
	out, err = exec.Command(gosbxBin, "seccomp", "export", "--format", "text", "--policy", pol).Output()
	must(t, err)
	if strings.Contains(string(out), ret) {
		t.Errorf("network.mode host: the exported filter still refuses socket families (%q)", ret)
	}
}
