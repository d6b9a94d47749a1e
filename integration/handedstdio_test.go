package integration

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Attack review 38 F3: a descriptor of a host directory handed in as the command's
// stdio (`< /`, `1</dir`) was the command's handle on the host's tree past its
// pivot_root (openat(fd, ".."), /proc/self/fd/N/…: CVE-2024-21626's class). Each
// path that hands the caller's descriptors in refuses one that is a directory, an
// O_PATH descriptor, a namespace or a pidfd: 125 before the command runs, nothing
// written through it.

// handedProbe is what a command given a directory as fd 0, 1 or 2 would do with it: a
// marker in the workspace (proof it ran), a file planted through each descriptor, a
// listing of what fd 0 reaches.
func handedProbe(tag string) string {
	return fmt.Sprintf(`touch ran-%[1]s; for n in 0 1 2; do echo x > /proc/self/fd/$n/planted-%[1]s; done
ls /proc/self/fd/0/ > seen-%[1]s 2>/dev/null; exit 0`, tag)
}

// hostDir is a 0700 directory of the caller's outside the workspace, with a file in it.
func hostDir(t *testing.T, s *sandbox) string {
	d := filepath.Join(s.base, "hostdir")
	must(t, os.Mkdir(d, 0o700))
	must(t, os.WriteFile(filepath.Join(d, "s"), []byte("host-secret"), 0o600))
	s.chown(filepath.Join(d, "s"))
	s.chown(d)
	return d
}

// checkRefused fails unless r is the refusal of a handed directory (125 and, where
// gosbx's stderr was captured, the message naming the stream and the fix) and the
// command did not run: no marker in the workspace, nothing planted in dir.
func checkRefused(t *testing.T, s *sandbox, what, tag, stream string, r result, dir string, stderrSeen bool) {
	t.Helper()
	if r.code != 125 {
		t.Errorf("%s: exit %d, want 125\n%v", what, r.code, r)
	}
	if stderrSeen && (!strings.Contains(r.stderr, stream+" is ") || !strings.Contains(r.stderr, "redirect a file or /dev/null")) {
		t.Errorf("%s: the refusal does not name %s and the fix:\n%v", what, stream, r)
	}
	for _, p := range []string{filepath.Join(s.ws, "ran-"+tag), filepath.Join(s.ws, "seen-"+tag), filepath.Join(dir, "planted-"+tag)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s: %s exists on the host: the command ran", what, p)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "s" {
		t.Errorf("%s: the host directory %s now holds %v", what, dir, ents)
	}
}

// handedKinds opens the refused kinds of descriptor for a test: a directory, the
// host's /, an O_PATH descriptor of a file, a mount namespace (nsfs), a pidfd.
func handedKinds(t *testing.T, dir string) map[string]*os.File {
	t.Helper()
	open := func(p string, flags int) *os.File {
		fd, err := unix.Open(p, flags|unix.O_CLOEXEC, 0)
		must(t, err)
		f := os.NewFile(uintptr(fd), p)
		t.Cleanup(func() { f.Close() })
		return f
	}
	pfd, err := unix.PidfdOpen(os.Getpid(), 0)
	must(t, err)
	pidfd := os.NewFile(uintptr(pfd), "pidfd")
	t.Cleanup(func() { pidfd.Close() })
	return map[string]*os.File{
		"dir":   open(dir, unix.O_RDONLY|unix.O_DIRECTORY),
		"root":  open("/", unix.O_RDONLY|unix.O_DIRECTORY),
		"opath": open(filepath.Join(dir, "s"), unix.O_PATH),
		"mntns": open("/proc/self/ns/mnt", unix.O_RDONLY),
		"pidfd": pidfd,
	}
}

// One-shot `gosbx exec`: each refused kind as stdin, stdout and stderr.
func TestHandedStdioRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		dir := hostDir(t, s)
		kinds := handedKinds(t, dir)
		for _, kind := range []string{"dir", "root", "opath", "mntns", "pidfd"} {
			for i, stream := range []string{"stdin", "stdout", "stderr"} {
				tag := kind + "-" + stream
				ctx := s.limitCtx(runLimit)
				cmd := s.command(ctx, "--", shellPath, "-c", handedProbe(tag))
				f := kinds[kind]
				switch i {
				case 0:
					cmd.Stdin = f
				case 1:
					cmd.Stdout = f
				case 2:
					cmd.Stderr = f
				}
				r := s.runCmd(ctx, cmd)
				checkRefused(t, s, "exec with "+kind+" as "+stream, tag, stream, r, dir, i != 2)
			}
		}
	})
}

// gosbxWith runs gosbx args as e's caller with the given stdio (nil: runCmd's).
func (e *sessionEnv) gosbxWith(stdin, stdout, stderr *os.File, args ...string) result {
	e.t.Helper()
	ctx := e.limitCtx(runLimit)
	cmd := e.rawCommand(ctx, args...)
	cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
	e.scope.wrap(cmd)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if stderr != nil {
		cmd.Stderr = stderr
	}
	return e.runCmd(ctx, cmd)
}

// `exec --session` (plain and --detach): the supervisor checks the descriptors its
// client sent, before the command is dispatched.
func TestHandedStdioRefusedSession(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		dir := hostDir(t, e.sandbox)
		kinds := handedKinds(t, dir)
		e.start("hs")
		defer e.gosbx("session", "stop", "hs")
		for _, mode := range [][]string{nil, {"--detach"}} {
			for _, kind := range []string{"dir", "opath", "mntns"} {
				for i, stream := range []string{"stdin", "stdout"} {
					tag := fmt.Sprintf("s%d-%s-%s", len(mode), kind, stream)
					var in, out *os.File
					if i == 0 {
						in = kinds[kind]
					} else {
						out = kinds[kind]
					}
					args := append(append([]string{"exec", "--session", "hs"}, mode...), "--", shellPath, "-c", handedProbe(tag))
					r := e.gosbxWith(in, out, nil, args...)
					checkRefused(t, e.sandbox, fmt.Sprintf("exec --session %v with %s as %s", mode, kind, stream), tag, stream, r, dir, true)
				}
			}
		}
		// the session still serves a command with ordinary stdio
		r := e.in("hs", nil, "echo fine")
		if r.code != 0 || r.stdout != "fine\n" {
			t.Errorf("the session after the refusals:\n%v", r)
		}
	})
}

// What stays working as stdio: a regular file, a memfd, a pipe, a socket, a terminal,
// /dev/null, each as stdin and as stdout, one-shot and through a session.
func TestHandedStdioKept(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("hk")
		defer e.gosbx("session", "stop", "hk")
		type kind struct {
			name string
			in   func() *os.File                  // stdin holding "in\n"
			out  func() (*os.File, func() string) // stdout and what reached it
		}
		file := func() (*os.File, func() string) {
			f, err := os.CreateTemp(e.base, "out-")
			must(t, err)
			t.Cleanup(func() { f.Close() })
			must(t, os.Chmod(f.Name(), 0o666))
			return f, func() string { b, _ := os.ReadFile(f.Name()); return string(b) }
		}
		kinds := []kind{
			{"file", func() *os.File {
				p := filepath.Join(e.base, "in-"+token())
				must(t, os.WriteFile(p, []byte("in\n"), 0o644))
				f, err := os.Open(p)
				must(t, err)
				t.Cleanup(func() { f.Close() })
				return f
			}, file},
			{"memfd", func() *os.File {
				fd, err := unix.MemfdCreate("in", unix.MFD_CLOEXEC)
				must(t, err)
				f := os.NewFile(uintptr(fd), "memfd")
				t.Cleanup(func() { f.Close() })
				f.WriteString("in\n")
				f.Seek(0, 0)
				return f
			}, func() (*os.File, func() string) {
				fd, err := unix.MemfdCreate("out", unix.MFD_CLOEXEC)
				must(t, err)
				f := os.NewFile(uintptr(fd), "memfd")
				t.Cleanup(func() { f.Close() })
				return f, func() string { b, _ := os.ReadFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd())); return string(b) }
			}},
			{"pipe", func() *os.File {
				r, w, err := os.Pipe()
				must(t, err)
				w.WriteString("in\n")
				w.Close()
				t.Cleanup(func() { r.Close() })
				return r
			}, func() (*os.File, func() string) {
				r, w, err := os.Pipe()
				must(t, err)
				t.Cleanup(func() { r.Close(); w.Close() })
				return w, func() string {
					w.Close()
					var b [64]byte
					n, _ := r.Read(b[:])
					return string(b[:max(n, 0)])
				}
			}},
			{"socket", func() *os.File {
				fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				must(t, err)
				a, b := os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
				b.WriteString("in\n")
				b.Close()
				t.Cleanup(func() { a.Close() })
				return a
			}, func() (*os.File, func() string) {
				fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				must(t, err)
				a, b := os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
				t.Cleanup(func() { a.Close(); b.Close() })
				return a, func() string {
					a.Close()
					c, _ := net.FileConn(b)
					if c == nil {
						return ""
					}
					defer c.Close()
					var buf [64]byte
					n, _ := c.Read(buf[:])
					return string(buf[:max(n, 0)])
				}
			}},
			{"tty", nil, func() (*os.File, func() string) {
				m, sl := openPty(t)
				m.SetReadDeadline(time.Now().Add(10 * time.Second))
				return sl, func() string {
					var buf [64]byte
					n, _ := m.Read(buf[:])
					return strings.ReplaceAll(string(buf[:max(n, 0)]), "\r", "")
				}
			}},
			{"devnull", func() *os.File {
				f, err := os.Open(os.DevNull)
				must(t, err)
				t.Cleanup(func() { f.Close() })
				return f
			}, func() (*os.File, func() string) {
				f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
				must(t, err)
				t.Cleanup(func() { f.Close() })
				return f, nil // nothing to read back: exit 0 is the check
			}},
		}
		for _, session := range []bool{false, true} {
			run := func(in, out *os.File, script string) result {
				if session {
					return e.gosbxWith(in, out, nil, "exec", "--session", "hk", "--", shellPath, "-c", script)
				}
				ctx := e.limitCtx(runLimit)
				cmd := e.command(ctx, "--", shellPath, "-c", script)
				if in != nil {
					cmd.Stdin = in
				}
				if out != nil {
					cmd.Stdout = out
				}
				return e.runCmd(ctx, cmd)
			}
			for _, k := range kinds {
				if k.in != nil {
					want := "got-in\n"
					if k.name == "devnull" {
						want = "got-\n"
					}
					r := run(k.in(), nil, "read x; echo got-$x")
					if r.code != 0 || r.stdout != want {
						t.Errorf("session %v: %s as stdin:\n%v", session, k.name, r)
					}
				}
				out, got := k.out()
				r := run(nil, out, "echo out")
				if r.code != 0 {
					t.Errorf("session %v: %s as stdout:\n%v", session, k.name, r)
				} else if got != nil {
					if g := got(); g != "out\n" {
						t.Errorf("session %v: %s as stdout: %q reached it, want %q", session, k.name, g, "out\n")
					}
				}
			}
		}
	})
}
