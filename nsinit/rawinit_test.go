package nsinit

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/rawplan"
	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/config"
)

// rawBuild is a raw child that ran planRawBuild for spec in the namespaces of its
// config (uid and gid 0 mapped to root's, as a test as root can write), then waits on
// a gate until done is called.
type rawBuild struct {
	pid  int
	done func() error
}

// startRawBuild compiles and starts spec's build in a raw child; fault, when not nil,
// adds ops after it. The launcher's side of the protocol is played here: the id maps, the go-ahead.
func startRawBuild(t *testing.T, spec *config.Config, fault func(p *rawplan.Plan)) (*rawBuild, error) {
	t.Helper()
	var fds rawFds
	for _, src := range mounts.BindSources(spec) {
		fd, err := mounts.OpenSourcePath(src)
		if err != nil {
			t.Fatal(err)
		}
		fds.sources = append(fds.sources, fd)
	}
	null, err := mounts.OpenNull("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	fds.null = null
	var maps, holderRep, life, rep, gate, ready [2]int
	for _, pp := range []*[2]int{&maps, &holderRep, &life, &rep, &gate, &ready} {
		if err := unix.Pipe2(pp[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
	}
	fds.mapsR, fds.mapsW = maps[0], maps[1]
	fds.holderRepR, fds.holderRepW = holderRep[0], holderRep[1]
	fds.life = life[0]
	if fds.holderSend, fds.holderRecv, fds.holderExe, err = (&kernelInit{}).holderFiles(); err != nil {
		t.Fatal(err)
	}
	p, err := rawplan.New(2<<20, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := planRawBuild(p, spec, &fds); err != nil {
		t.Fatal(err)
	}
	if fault != nil {
		fault(p)
	}
	s := p.Begin("wait")
	p.Call(s, nil, unix.SYS_WRITE, rawplan.Lit(uintptr(ready[1])), rawplan.Lit(p.Str("r")), rawplan.Lit(1))
	p.Op(s, nil, rawplan.ReadOne, unix.SYS_READ, rawplan.Lit(uintptr(gate[0])), rawplan.Lit(p.Str("x")), rawplan.Lit(1))
	flags, _, _ := cloneConfig(spec)
	pid, err := rawplan.Start(p, flags, rep[1])
	closeAll := []int{rep[1], gate[0], ready[1], maps[0], holderRep[0], holderRep[1], life[0], fds.holderSend, fds.holderRecv, fds.holderExe}
	closeAll = append(closeAll, fds.sources...)
	for _, fd := range closeAll {
		unix.Close(fd)
	}
	null.Close()
	if err != nil {
		t.Fatal(err)
	}
	zero := []byte("0 0 1\n")
	for _, f := range []string{"uid_map", "setgroups", "gid_map"} {
		b := zero
		if f == "setgroups" {
			b = []byte("deny")
		}
		if err := os.WriteFile("/proc/"+strconv.Itoa(pid)+"/"+f, b, 0); err != nil {
			t.Fatal(err)
		}
	}
	unix.Write(maps[1], []byte{0})
	unix.Close(maps[1])
	unix.Write(life[1], []byte{lifeGoNoAck})
	finish := func() error {
		unix.Write(gate[1], []byte{1})
		unix.Close(gate[1])
		unix.Close(life[1])
		err := readRawReport(p, rep[0])
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
		p.Free()
		return err
	}
	var b [1]byte
	if n, _ := readFull(ready[0], b[:]); n != 1 {
		unix.Close(ready[0])
		return nil, finish()
	}
	unix.Close(ready[0])
	return &rawBuild{pid: pid, done: finish}, nil
}

// The Go init's build steps run by the raw child, checked from the host: a pid
// namespace for the commands whose pid 1 is the holder (NSpid), the agent policy's
// hostname and loopback up (nsenter), the root tmpfs read-only as /, the capabilities
// limited to stageCaps; and a failing step reports the Go init's step error.
func TestRawInitBuild(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the test writes the child's id maps as uid 0 -> 0")
	}
	spec, err := rawRootConfig(testWorkspace(t))
	if err != nil {
		t.Fatal(err)
	}
	// the raw init is for other callers: their config has no host id range and no set-ID
	// listener (the filter belongs to the process stage, not built here)
	spec.RootID, spec.Linux.Filter = nil, nil
	b, err := startRawBuild(t, spec, nil)
	if err != nil {
		t.Fatalf("raw build: %v", err)
	}
	defer b.done()
	dir := "/proc/" + strconv.Itoa(b.pid)
	self, _ := os.Readlink("/proc/self/ns/pid")
	own, _ := os.Readlink(dir + "/ns/pid")
	kids, _ := os.Readlink(dir + "/ns/pid_for_children")
	if own == self || kids == own || kids == "" {
		t.Errorf("pid namespaces: host %s, raw init %s, its children %s", self, own, kids)
	}
	children, _ := os.ReadFile(dir + "/task/" + strconv.Itoa(b.pid) + "/children")
	f := strings.Fields(string(children))
	if len(f) != 1 {
		t.Fatalf("raw init's children: %q, want the holder alone", children)
	}
	status, _ := os.ReadFile("/proc/" + f[0] + "/status")
	if !strings.Contains(string(status), "\nNSpid:\t"+f[0]+"\t2\t1\n") {
		t.Errorf("holder is not pid 1 of the commands' namespace:\n%s", status)
	}
	if out, err := exec.Command("nsenter", "-t", strconv.Itoa(b.pid), "-u", "hostname").Output(); err != nil || strings.TrimSpace(string(out)) != spec.Hostname {
		t.Errorf("hostname %q (%v), want %q", out, err, spec.Hostname)
	}
	if out, err := exec.Command("nsenter", "-t", strconv.Itoa(b.pid), "-n", "ip", "-o", "link", "show", "lo").Output(); err != nil || !strings.Contains(string(out), ",UP") {
		t.Errorf("lo: %q (%v), want UP", out, err)
	}
	info, _ := os.ReadFile(dir + "/mountinfo")
	rootRow := ""
	for _, r := range mountRows(string(info)) {
		if f := strings.Fields(r); f[1] == "/" {
			rootRow = r
		}
	}
	if !strings.HasPrefix(rootRow, "/ / ro,") || !strings.Contains(rootRow, " tmpfs ") {
		t.Errorf("root mount %q, want a read-only tmpfs", rootRow)
	}
	st, _ := os.ReadFile(dir + "/status")
	var want uint64
	for _, c := range stageCaps {
		want |= 1 << c
	}
	if line := "CapEff:\t" + leftPad(strconv.FormatUint(want, 16)) + "\n"; !strings.Contains(string(st), line) {
		t.Errorf("raw init's capabilities, want %q:\n%s", line, st)
	}
	if err := b.done(); err != nil {
		t.Errorf("raw init after the gate: %v", err)
	}
	b.done = func() error { return nil }

	// a step that fails: the Go init's *stepError, with its step's name
	spec.Hostname = strings.Repeat("h", 65) // sethostname: EINVAL over 64 bytes
	_, err = startRawBuild(t, spec, nil)
	var se *stepError
	if !errors.As(err, &se) || se.step != "hostname" || !errors.Is(err, unix.EINVAL) {
		t.Errorf("a failing hostname: %v, want step hostname, EINVAL", err)
	}
}

func leftPad(h string) string { return strings.Repeat("0", 16-len(h)) + h }
