package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// openNoCloexec opens path with a descriptor that survives exec.
func openNoCloexec(t *testing.T, path string, flags int) *os.File {
	t.Helper()
	fd, err := syscall.Open(path, flags, 0o600) // no O_CLOEXEC
	must(t, err)
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFD, 0); e != 0 {
		t.Fatal(e)
	}
	f := os.NewFile(uintptr(fd), path)
	t.Cleanup(func() { f.Close() })
	return f
}

// No descriptor of the caller other than 0-2 reaches the command.
func TestNoInheritedFDs(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		secret := filepath.Join(s.base, "secret")
		must(t, os.WriteFile(secret, []byte("topsecret-"+s.id), 0o600))
		root := openNoCloexec(t, "/", syscall.O_RDONLY|syscall.O_DIRECTORY)
		sec := openNoCloexec(t, secret, syscall.O_RDONLY)
		app := openNoCloexec(t, secret, syscall.O_WRONLY|syscall.O_APPEND)
		r0, w0, err := os.Pipe()
		must(t, err)
		defer r0.Close()
		defer w0.Close()
		// fds 3,4,5,6 and, after a gap, 20.
		extra := []*os.File{root, sec, app, w0}
		for len(extra) < 17 {
			extra = append(extra, nil)
		}
		extra = append(extra, sec)

		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--", python, "-c",
			`import os; print(sorted(int(f) for f in os.listdir("/proc/self/fd")))
for f in os.listdir("/proc/self/fd"):
    try: print(f, os.readlink("/proc/self/fd/" + f))
    except OSError: pass`)
		cmd.ExtraFiles = extra
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "fd listing")
		first, _, _ := strings.Cut(r.stdout, "\n")
		if first != "[0, 1, 2, 3]" {
			t.Errorf("descriptors visible inside: %s (want [0, 1, 2, 3]; 3 is the listing itself)\n%s", first, r.stdout)
		}
		if b, _ := os.ReadFile(secret); string(b) != "topsecret-"+s.id {
			t.Errorf("the secret file changed: %q", b)
		}
	})
}

// --chdir /proc/self/fd/N either fails (125) or leaves the command inside the
// sandbox: it must never start in a host directory reached through an fd.
func TestChdirProcSelfFD(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		sib := filepath.Join(s.base, "hostonly")
		must(t, os.Mkdir(sib, 0o755))
		must(t, os.WriteFile(filepath.Join(sib, "marker"), []byte("HOST-MARKER-"+s.id), 0o644))
		dots := strings.Repeat("../", 24)
		rel := strings.TrimPrefix(filepath.Join(sib, "marker"), "/")
		probe := fmt.Sprintf(`cat %s%s 2>/dev/null; echo; echo "PWD $(pwd -P 2>&1)"; exit 0`, dots, rel)
		// The caller hands gosbx descriptors of host directories at 3..20: a
		// sandbox that changed directory before closing them would escape.
		hostDir, err := os.Open(sib)
		must(t, err)
		defer hostDir.Close()
		hostRoot, err := os.Open("/")
		must(t, err)
		defer hostRoot.Close()
		var extra []*os.File
		for n := 3; n <= 20; n++ {
			if n%2 == 0 {
				extra = append(extra, hostDir)
			} else {
				extra = append(extra, hostRoot)
			}
		}
		for n := 3; n <= 20; n++ {
			ctx := s.limitCtx(runLimit)
			cmd := s.command(ctx, "--chdir", fmt.Sprintf("/proc/self/fd/%d", n), "--", shellPath, "-c", probe)
			cmd.ExtraFiles = extra
			r := s.runCmd(ctx, cmd)
			if strings.Contains(r.stdout, "HOST-MARKER") {
				t.Errorf("--chdir /proc/self/fd/%d: the command reached the host filesystem:\n%v", n, r)
				continue
			}
			if r.code != 125 && r.code != 0 {
				t.Errorf("--chdir /proc/self/fd/%d: exit %d, want 125 (or 0 and inside)\n%v", n, r.code, r)
			}
			if r.code == 125 && strings.Contains(r.stdout, "PWD") {
				t.Errorf("--chdir /proc/self/fd/%d: exit 125 but the command ran", n)
			}
		}
	})
}

// The starting directory: the caller's cwd when inside the workspace,
// else the workspace root; --chdir (relative or absolute) overrides.
func TestStartingDirectory(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		for _, d := range []string{"sub", "cwd/inner", "abs"} {
			p := filepath.Join(s.ws, d)
			must(t, os.MkdirAll(p, 0o755))
			s.chown(p)
			s.chown(filepath.Dir(p))
		}
		cases := []struct {
			name  string
			dir   string // caller's cwd
			flags []string
			want  string
		}{
			{"cwd-outside", s.base, nil, s.ws},
			{"cwd-inside", filepath.Join(s.ws, "cwd/inner"), nil, filepath.Join(s.ws, "cwd/inner")},
			{"chdir-relative", s.base, []string{"--chdir", "sub"}, filepath.Join(s.ws, "sub")},
			{"chdir-absolute", filepath.Join(s.ws, "cwd/inner"), []string{"--chdir", filepath.Join(s.ws, "abs")}, filepath.Join(s.ws, "abs")},
		}
		for _, tc := range cases {
			ctx := s.limitCtx(runLimit)
			marker := "here-" + tc.name
			cmd := s.command(ctx, append(tc.flags, "--", shellPath, "-c", `pwd; touch "$1"`, "_", marker)...)
			cmd.Dir = tc.dir
			r := s.runCmd(ctx, cmd)
			mustSucceed(t, r, tc.name)
			if got := strings.TrimSpace(r.stdout); got != tc.want {
				t.Errorf("%s: started in %q, want %q", tc.name, got, tc.want)
			}
			if _, err := os.Stat(filepath.Join(tc.want, marker)); err != nil {
				t.Errorf("%s: the relative write did not land in %s on the host", tc.name, tc.want)
			}
		}
	})
}
