package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var leftNoteRe = regexp.MustCompile(`gosbx: note: 2 processes \("(sleep|sh)", "(sleep|sh)"\) of the sandbox still ran when the command exited`)

// withoutLeftNote is stderr without the note of processes the command left running.
func withoutLeftNote(stderr string) string {
	var keep []string
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if !(strings.HasPrefix(l, "gosbx: note: ") && strings.Contains(l, "of the sandbox still ran when the command exited")) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// hostHasArg reports whether a host process's command line holds arg.
func hostHasArg(arg string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), arg) {
			return true
		}
	}
	return false
}

// A one-shot exec whose command leaves processes running (`sleep &`, a tmux server)
// says so on stderr, with their names and the session that keeps them, and they are
// gone from the host when gosbx returns; a command that leaves nothing gets no note. The
// raw init (the default launch) and the Go init (--net proxy takes it) alike; the
// status line has left-running.
func TestLeftRunningNote(t *testing.T) {
	requireBinary(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		for _, mode := range [][]string{nil, {"--net", "proxy"}} {
			name := "default"
			if mode != nil {
				name = "net proxy"
			}
			arg := fmt.Sprintf("%d.%d", 900+len(name), time.Now().UnixNano()%1000000)
			args := append(append([]string{}, mode...), "--", shellPath, "-c", "sleep "+arg+" & sleep "+arg+" & exec sleep 0.2")
			r := s.run(args...)
			mustSucceed(t, r, name+": sleep &")
			// (a job not yet past its execve is still "sh")
			if !leftNoteRe.MatchString(r.stderr) ||
				!strings.Contains(r.stderr, "gosbx session start NAME") {
				t.Errorf("%s: no note naming the 2 sleeps and a session:\n%v", name, r)
			}
			if hostHasArg("sleep\x00" + arg) {
				t.Errorf("%s: a background sleep outlived gosbx exec", name)
			}
			r = s.run(append(append([]string{}, mode...), "--", "/bin/true")...)
			mustSucceed(t, r, name+": true")
			if strings.Contains(r.stderr, "note:") {
				t.Errorf("%s: a note for a command that left nothing:\n%v", name, r)
			}
			code, ev, raw := s.statusOf(append(append([]string{}, mode...), "--", shellPath, "-c", "sleep "+arg+" & exec sleep 0.2")...)
			if e := findEvent(ev, "exit-code"); code != 0 || e == nil || fmt.Sprint(e["left-running"]) != "1" {
				t.Errorf("%s: status line without left-running 1: %d %s", name, code, raw)
			}
		}
		if _, err := exec.LookPath("tmux"); err == nil {
			r := s.run("--", "tmux", "-L", "gosbx-it", "new", "-d", "-s", "w", "sleep 100")
			mustSucceed(t, r, "tmux new -d")
			if !strings.Contains(r.stderr, `("tmux: server"`) || !strings.Contains(r.stderr, "exec --session NAME") {
				t.Errorf("tmux new -d: no note naming the tmux server:\n%v", r)
			}
		}
	})
}

// namedChildren forks a child per argument, each naming itself that (prctl
// PR_SET_NAME, comm) and then sleeping; it exits once all are named.
const namedChildren = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None)
r, w = os.pipe()
for name in sys.argv[1:]:
    if os.fork() == 0:
        libc.prctl(15, ctypes.c_char_p(name.encode()), 0, 0, 0)
        os.write(w, b"x")
        time.sleep(100)
        os._exit(0)
for _ in sys.argv[1:]:
    os.read(r, 1)
`

// From an attack review (26): the names of left processes are each quoted, an empty
// one included, so that a name cannot pass for the list's punctuation or count, and
// the raw init (the default) and the Go init (--net proxy) say the same.
func TestLeftRunningNames(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	want := `gosbx: note: 3 processes ("", "vim) and 7 more", "z") of the sandbox still ran`
	for _, mode := range [][]string{nil, {"--net", "proxy"}} {
		args := append(append([]string{}, mode...), "--", python, "-c", namedChildren, "", "vim) and 7 more", "z")
		r := s.run(args...)
		mustSucceed(t, r, fmt.Sprint(mode, " named children"))
		if !strings.Contains(r.stderr, want) {
			t.Errorf("%v: want %q\n%v", mode, want, r)
		}
	}
}
