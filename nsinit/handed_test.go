package nsinit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/policy"
)

// fdFile wraps a raw descriptor, closed at the test's end.
func fdFile(t *testing.T, fd int, err error, name string) *os.File {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	t.Cleanup(func() { f.Close() })
	return f
}

// CheckHandedFd refuses each kind of descriptor a command could reach outside its
// sandbox through (attack review 38 F3), and passes the kinds stdio is made of.
func TestCheckHandedFdKinds(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused := map[string]*os.File{}
	kinds := map[string]string{}
	add := func(name, kind string, f *os.File) { refused[name], kinds[name] = f, kind }
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	add("directory", "a directory", fdFile(t, fd, err, "dir"))
	fd, err = unix.Open("/", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	add("root", "a directory", fdFile(t, fd, err, "/"))
	fd, err = unix.Open(file, unix.O_PATH|unix.O_CLOEXEC, 0)
	add("O_PATH file", "an O_PATH descriptor", fdFile(t, fd, err, "opath"))
	fd, err = unix.Open(dir, unix.O_PATH|unix.O_CLOEXEC, 0)
	add("O_PATH directory", "an O_PATH descriptor", fdFile(t, fd, err, "opathdir"))
	fd, err = unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLOEXEC)
	add("open_tree", "an O_PATH descriptor", fdFile(t, fd, err, "open_tree"))
	fd, err = unix.Open("/proc/self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	add("mount namespace", "a namespace descriptor", fdFile(t, fd, err, "nsfs"))
	fd, err = unix.Open("/proc/self/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	add("user namespace", "a namespace descriptor", fdFile(t, fd, err, "nsfs"))
	fd, err = unix.PidfdOpen(os.Getpid(), 0)
	// a pidfd has no file type on 6.18 (pidfs); older kernels' anon inode, the same
	pf := fdFile(t, fd, err, "pidfd")
	var st unix.Stat_t
	unix.Fstat(int(pf.Fd()), &st)
	if st.Mode&unix.S_IFMT == 0 {
		add("pidfd", "an anonymous-inode descriptor", pf)
	} else {
		add("pidfd", "a pidfd", pf)
	}
	fd, err = unix.Eventfd(0, unix.EFD_CLOEXEC)
	add("eventfd", "an anonymous-inode descriptor", fdFile(t, fd, err, "eventfd"))
	if fd, err = unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC); err == nil {
		add("fsopen context", "an anonymous-inode descriptor", fdFile(t, fd, err, "fscontext"))
	} else {
		t.Logf("fsopen: %v (not checked)", err)
	}
	for name, f := range refused {
		err := CheckHandedFd(int(f.Fd()), "stdout")
		var he *HandedFileError
		if !errors.As(err, &he) || he.Kind != kinds[name] || he.Stream != "stdout" || he.Err != nil {
			t.Errorf("%s: CheckHandedFd = %v, want a *HandedFileError of %s", name, err, kinds[name])
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "stdout is "+kinds[name]+" (") || !strings.HasSuffix(msg, "redirect a file or /dev/null") {
			t.Errorf("%s: message %q", name, msg)
		}
	}

	kept := map[string]*os.File{}
	// (opened as *os.Files and used as such: a second *os.File of the same number
	// would close it twice, the second time another test's descriptor)
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kept["regular file"] = f
	fd, err = unix.MemfdCreate("m", unix.MFD_CLOEXEC)
	kept["memfd"] = fdFile(t, fd, err, "memfd")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	kept["pipe read end"], kept["pipe write end"] = r, w
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	kept["socket"] = fdFile(t, sp[0], err, "socket")
	fdFile(t, sp[1], err, "socket")
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	kept["/dev/null"] = null
	if m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0); err == nil {
		defer m.Close()
		kept["terminal master"] = m
	}
	for name, f := range kept {
		if err := CheckHandedFd(int(f.Fd()), "stdin"); err != nil {
			t.Errorf("%s: CheckHandedFd = %v, want nil", name, err)
		}
	}
	if err := CheckHandedFd(1<<20, "stderr"); err == nil || !errors.Is(err, unix.EBADF) {
		t.Errorf("a closed descriptor: CheckHandedFd = %v, want EBADF", err)
	}
}

// fileOrNil and writerOrNil keep a nil *os.File a nil interface (as a caller's nil).
func fileOrNil(f *os.File) interface{ Read([]byte) (int, error) } {
	if f == nil {
		return nil
	}
	return f
}

func writerOrNil(f *os.File) interface{ Write([]byte) (int, error) } {
	if f == nil {
		return nil
	}
	return f
}

// The library's launch paths refuse a directory as stdin, stdout or stderr: Cmd.Run,
// Prestart, a Pool's command and a Session's command; a *SetupError of step "stdio"
// (ExitSetup), the command not run: no marker in the workspace, nothing planted in the
// directory handed in.
func TestHandedDirectoryRefusedLibrary(t *testing.T) {
	ws := testWorkspace(t)
	outside := testWorkspace(t)
	d, err := os.Open(outside)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	script := "touch ran; for n in 0 1 2; do echo x > /proc/self/fd/$n/planted; done"
	check := func(what string, err error) {
		t.Helper()
		var se *SetupError
		var he *HandedFileError
		if !errors.As(err, &se) || se.Step != "stdio" || se.ExitCode() != ExitSetup || !errors.As(err, &he) || he.Kind != "a directory" {
			t.Errorf("%s: %v (%T), want a *SetupError at stdio with a *HandedFileError", what, err, err)
		}
		for _, p := range []string{filepath.Join(ws, "ran"), filepath.Join(outside, "planted")} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s: %s exists: the command ran", what, p)
				os.Remove(p)
			}
		}
	}
	set := func(c *Cmd, i int) {
		switch i {
		case 0:
			c.Stdin = d
		case 1:
			c.Stdout = d
		case 2:
			c.Stderr = d
		}
	}
	cfg := compile(t, policy.Options{Args: []string{"sh", "-c", script}, Workspace: ws}, nil)
	for i := range 3 {
		c := Command(cfg)
		set(c, i)
		var log eventLog
		c.Events = log.add
		check("Cmd.Run", c.Run())
		if ev := log.events(); len(ev) != 1 || ev[0].Step != "stdio" || ev[0].Status != ExitSetup {
			t.Errorf("Cmd.Run: events %+v, want one error event at stdio", ev)
		}
		var args [3]*os.File
		args[i] = d
		pre, err := Prestart(cfg, fileOrNil(args[0]), writerOrNil(args[1]), writerOrNil(args[2]))
		pre.Close()
		check("Prestart", err) // before it looks at which init the launch takes
	}
	template, _ := poolTemplate(t, policy.Options{Workspace: ws})
	pool := newTestPool(t, template, 1)
	for i := range 3 {
		c := pool.Command(poolProc(template, "sh", "-c", script))
		set(c, i)
		check("Pool command", c.Run())
	}
	s, err := NewSession(compile(t, policy.Options{Args: []string{"true"}, Workspace: ws}, nil))
	skipIfNoSandbox(t, err)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer s.Close(time.Second)
	for i := range 3 {
		c := s.Command(sessionProc(s, "sh", "-c", script))
		set(c, i)
		check("Session command", c.Run())
	}
	c := s.Command(sessionProc(s, "sh", "-c", "touch ok"))
	if err := c.Run(); err != nil {
		t.Errorf("the session after the refusals: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "ok")); err != nil {
		t.Errorf("the session's command after the refusals did not run: %v", err)
	}
}

// BenchmarkCheckHandedFd: the cost of the check on one stream (a pipe).
func BenchmarkCheckHandedFd(b *testing.B) {
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for b.Loop() {
		if err := CheckHandedFd(int(r.Fd()), "stdin"); err != nil {
			b.Fatal(err)
		}
	}
}

// A regular file opened against its stream's direction (stdout or stderr read-only,
// stdin write-only) is refused with the > / >> fix (attack review 39 F1); one opened
// with its direction's access, or read-write, is kept.
func TestCheckHandedFdAgainstDirection(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(flag int) *os.File {
		f, err := os.OpenFile(file, flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	ro, wo, rw := open(os.O_RDONLY), open(os.O_WRONLY|os.O_APPEND), open(os.O_RDWR)
	for _, c := range []struct {
		f      *os.File
		stream string
		kind   string // "" kept
	}{
		{ro, "stdout", "a file opened for reading only"},
		{ro, "stderr", "a file opened for reading only"},
		{wo, "stdin", "a file opened for writing only"},
		{ro, "stdin", ""}, // relayed by the launcher (internal/filerelay)
		{wo, "stdout", ""},
		{wo, "stderr", ""},
		{rw, "stdin", ""},
		{rw, "stdout", ""},
	} {
		err := CheckHandedFd(int(c.f.Fd()), c.stream)
		if c.kind == "" {
			if err != nil {
				t.Errorf("%s as %s: %v, want nil", c.f.Name(), c.stream, err)
			}
			continue
		}
		var he *HandedFileError
		if !errors.As(err, &he) || he.Kind != c.kind || !he.Redirect || he.Stream != c.stream {
			t.Errorf("%s: CheckHandedFd = %v, want %s", c.stream, err, c.kind)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, c.stream+" is "+c.kind) || !strings.HasSuffix(msg, "redirect with > or >>") {
			t.Errorf("%s: message %q", c.stream, msg)
		}
	}
}
