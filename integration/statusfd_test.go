package integration

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runStatusFd runs gosbx exec with --status-fd 3 on f (nil: a pipe whose lines are
// returned) and the given stdout (nil: captured).
func (s *sandbox) runStatusFd(f *os.File, stdout *os.File, args ...string) (result, string) {
	s.t.Helper()
	ctx := s.limitCtx(runLimit)
	cmd := s.command(ctx, append([]string{"--status-fd", "3"}, args...)...)
	var lines bytes.Buffer
	done := make(chan struct{})
	if f == nil {
		r, w, err := os.Pipe()
		must(s.t, err)
		defer r.Close()
		defer w.Close()
		f = w
		go func() { io.Copy(&lines, r); close(done) }()
	} else {
		close(done)
	}
	cmd.ExtraFiles = []*os.File{f}
	if stdout != nil {
		cmd.Stdout = stdout
	}
	res := s.runCmd(ctx, cmd)
	f.Close() // the pipe's reader sees its end
	<-done
	return res, lines.String()
}

// runStatusToStderr is run with the status lines on fd 3, appended to the result's
// stderr (where tests that once used --status-fd 2 look for them).
func (s *sandbox) runStatusToStderr(args ...string) result {
	s.t.Helper()
	r, lines := s.runStatusFd(nil, nil, args...)
	r.stderr += lines
	return r
}

// A --status-fd the command could write is refused (125, the command does not run):
// fd 0-2, a descriptor on the same pipe as the command's stdout, a file inside the
// workspace or a --rw tree (the README's own example wrote status.json into the
// workspace, where the command appended a fake final line), or a file with a hard
// link there. A status file outside them works. Issue 15, item 7.
func TestStatusFdCommandCannotWrite(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		rw := filepath.Join(s.base, "rw")
		must(t, os.Mkdir(rw, 0o755))
		s.chown(rw)
		marker := filepath.Join(s.ws, "ran")
		script := []string{"--rw", rw, "--", shellPath, "-c", `touch "$1"; echo '{"exit-code":0}' >&3`, "_", marker}
		refused := func(what string, r result, reason string) {
			t.Helper()
			if r.code != 125 || !strings.Contains(r.stderr, "--status-fd") || !strings.Contains(r.stderr, reason) {
				t.Errorf("%s: want 125 naming --status-fd and %q\n%v", what, reason, r)
			}
			if _, err := os.Lstat(marker); err == nil {
				t.Errorf("%s: the command ran", what)
				os.Remove(marker)
			}
		}
		for _, fd := range []string{"1", "2"} {
			r := s.run(append([]string{"--status-fd", fd}, script...)...)
			refused("--status-fd "+fd, r, "stdio")
		}
		// the same pipe as the command's stdout
		pr, pw, err := os.Pipe()
		must(t, err)
		go io.Copy(io.Discard, pr)
		r, _ := s.runStatusFd(pw, pw, script...)
		pw.Close()
		pr.Close()
		refused("the stdout pipe", r, "same file")
		for _, p := range []string{filepath.Join(s.ws, "status.json"), filepath.Join(rw, "sub", "status.json")} {
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			f, err := os.Create(p)
			must(t, err)
			r, _ := s.runStatusFd(f, nil, script...)
			f.Close()
			refused(p, r, "which the command can write")
		}
		// a hard link into the workspace
		outside := filepath.Join(s.base, "linked.json")
		must(t, os.WriteFile(outside, nil, 0o644))
		must(t, os.Link(outside, filepath.Join(s.ws, "alias.json")))
		f, err := os.OpenFile(outside, os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		r, _ = s.runStatusFd(f, nil, script...)
		f.Close()
		refused("a file with a hard link in the workspace", r, "hard links")
		// outside every writable tree: accepted, and the lines are gosbx's
		good := filepath.Join(s.base, "status.json")
		f, err = os.Create(good)
		must(t, err)
		r, _ = s.runStatusFd(f, nil, "--", shellPath, "-c", "exit 3")
		f.Close()
		if r.code != 3 {
			t.Fatalf("a status file outside the writable trees: want exit 3\n%v", r)
		}
		b, err := os.ReadFile(good)
		must(t, err)
		if !strings.Contains(string(b), `"exit-code":3`) {
			t.Errorf("status file: %q", b)
		}
	})
}

// A --status-fd on the command's terminal by another name, /dev/tty (device 5:0, the
// terminal 136:N), is refused: the command, on that terminal, could write a status
// line of its own there (attack review round three, F4). The status fd is opened by a
// shell on the pty gosbx then runs on, as a caller would type it.
func TestStatusFdTerminalByAnotherName(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		m, sl := openPty(t)
		ctx := s.limitCtx(runLimit)
		inner := s.command(ctx, "--status-fd", "3", "--", shellPath, "-c", `echo '{"exit-code":0,"forged":true}'; echo RAN`)
		cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `exec "$@" 3>/dev/tty`, "sh", inner.Path}, inner.Args[1:]...)...)
		cmd.Env, cmd.Dir = inner.Env, inner.Dir
		cmd.Stdin, cmd.Stdout, cmd.Stderr = sl, sl, sl
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		must(t, cmd.Start())
		sl.Close()
		var out bytes.Buffer
		done := make(chan struct{})
		go func() { io.Copy(&out, m); close(done) }()
		code, ok := waitTimeout(t, cmd, 30*time.Second)
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			m.SetReadDeadline(time.Now())
			<-done
		}
		if !ok || code != 125 || strings.Contains(out.String(), "RAN") || !strings.Contains(out.String(), "terminal") {
			t.Errorf("--status-fd 3>/dev/tty on the command's terminal: exit %d (finished %v), want 125 naming the terminal, the command not run\n%q", code, ok, out.String())
		}
	})
}

// The refusal of a --status-fd the caller did not open shows how to open it, and the
// example, typed as shown by a caller whose current directory is the workspace (the
// default), is accepted: the trial's (T14) "5>status.json" was refused by the next
// check, as a file the command can write.
func TestStatusFdExampleWorks(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		home := filepath.Join(s.base, "home")
		must(t, os.Mkdir(home, 0o700))
		s.chown(home)
		shell := func(redirect string) result {
			ctx := s.limitCtx(runLimit)
			cmd := s.rawCommand(ctx, "exec", "--status-fd", "5", "--", shellPath, "-c", "exit 4")
			// the caller's shell: in the workspace, the redirection as typed
			script := `cd "$1" && shift && exec "$@" ` + redirect
			cmd.Args = append([]string{shellPath, "-c", script, "_", s.ws}, cmd.Args...)
			cmd.Path = shellPath
			cmd.Env = s.env("HOME=" + home)
			return s.runCmd(ctx, cmd)
		}
		r := shell("")
		example := regexp.MustCompile(`5>\S+[^\s:;,.)]`).FindString(r.stderr)
		if r.code != 125 || example == "" {
			t.Fatalf("--status-fd 5 not open: want 125 with an example 5>FILE\n%v", r)
		}
		r = shell(example)
		if r.code != 4 {
			t.Fatalf("the refusal's own example %q: want the command's exit 4\n%v", example, r)
		}
		b, err := os.ReadFile(filepath.Join(home, strings.TrimPrefix(example, "5>~/")))
		if err != nil || !strings.Contains(string(b), `"exit-code":4`) {
			t.Errorf("the example's status file: %q %v", b, err)
		}
	})
}
