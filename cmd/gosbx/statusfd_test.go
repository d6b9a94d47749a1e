package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// A status descriptor the command holds too is refused: its stdio, a copy of it; a
// fresh pipe and /dev/null are not.
func TestCheckStatusShared(t *testing.T) {
	for _, n := range []int{0, 1, 2} {
		if err := checkStatusShared(n); err == nil || !strings.Contains(err.Error(), "stdio") {
			t.Errorf("fd %d: %v", n, err)
		}
	}
	d, err := unix.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(d)
	if err := checkStatusShared(d); err == nil || !strings.Contains(err.Error(), "same file as the command's fd") {
		t.Errorf("a copy of fd 2: %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := checkStatusShared(int(w.Fd())); err != nil {
		t.Errorf("a pipe of its own: %v", err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if err := checkStatusShared(int(null.Fd())); err != nil {
		t.Errorf("/dev/null: %v", err)
	}
}

// A terminal is refused as a status descriptor under any name: a pty's slave, its
// master, /dev/tty (attack review round three, F4: 5:0 is not the slave's 136:N).
func TestCheckStatusTerminal(t *testing.T) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skip("no /dev/ptmx:", err)
	}
	defer m.Close()
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	pn, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	sl, err := os.OpenFile("/dev/pts/"+strconv.Itoa(pn), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	for what, f := range map[string]*os.File{"the slave": sl, "the master": m} {
		if err := checkStatusShared(int(f.Fd())); err == nil || !strings.Contains(err.Error(), "terminal") {
			t.Errorf("%s of a pty: %v", what, err)
		}
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if err := checkStatusShared(int(tty.Fd())); err == nil || !strings.Contains(err.Error(), "terminal") {
			t.Errorf("/dev/tty: %v", err)
		}
	}
}

// A status file inside a read-write bind, or hard-linked on its file system, is refused;
// one in a read-only bind or elsewhere is not.
func TestCheckStatusOutside(t *testing.T) {
	base := t.TempDir()
	rw, ro := filepath.Join(base, "rw"), filepath.Join(base, "ro")
	for _, d := range []string{rw, ro} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := &config.Config{Mounts: []specs.Mount{
		{Destination: rw, Type: "bind", Source: rw, Options: []string{"rbind", "nosuid", "nodev"}},
		{Destination: ro, Type: "bind", Source: ro, Options: []string{"rbind", "nosuid", "nodev", "ro"}},
	}}
	open := func(p string) *os.File {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	for p, want := range map[string]string{
		filepath.Join(rw, "s.json"):   "inside " + rw,
		filepath.Join(ro, "s.json"):   "",
		filepath.Join(base, "s.json"): "",
	} {
		err := checkStatusOutside(int(open(p).Fd()), spec)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
	}
	linked := filepath.Join(base, "linked.json")
	f := open(linked)
	if err := os.Link(linked, filepath.Join(rw, "alias")); err != nil {
		t.Fatal(err)
	}
	if err := checkStatusOutside(int(f.Fd()), spec); err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Errorf("a file hard-linked into the rw tree: %v", err)
	}
}
