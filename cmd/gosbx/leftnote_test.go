package main

import (
	"strings"
	"testing"

	"github.com/gosbx/gosbx/nsinit"
)

// The note names the count, up to three names, each quoted (control bytes escaped; a
// name that looks like the list's punctuation stays inside its quotes: attack review
// 26), and the session that keeps such processes; none when nothing was left.
func TestLeftNote(t *testing.T) {
	if n := leftNote(&nsinit.Result{}); n != "" {
		t.Errorf("nothing left: %q", n)
	}
	n := leftNote(&nsinit.Result{LeftRunning: 1, LeftNames: []string{"tmux: server"}})
	for _, w := range []string{`1 process ("tmux: server") of the sandbox`, "was killed", "gosbx session start NAME", "exec --session NAME"} {
		if !strings.Contains(n, w) {
			t.Errorf("note %q lacks %q", n, w)
		}
	}
	n = leftNote(&nsinit.Result{LeftRunning: 5, LeftNames: []string{"sleep", "ab\x1b[31m\ncd", "x"}})
	if strings.ContainsAny(n, "\x1b\n") || !strings.Contains(n, `"ab\x1b[31m\ncd"`) || !strings.Contains(n, `5 processes ("sleep", `) ||
		!strings.Contains(n, `"x" and 2 more)`) || !strings.Contains(n, "were killed") {
		t.Errorf("note %q: want the count, the names quoted, and 2 more", n)
	}
	n = leftNote(&nsinit.Result{LeftRunning: 3, LeftNames: []string{"", "vim) and 7 more", "z"}})
	if want := `3 processes ("", "vim) and 7 more", "z") of the sandbox`; !strings.Contains(n, want) {
		t.Errorf("note %q lacks %q", n, want)
	}
}

// A command killed by a signal left processes it may have waited for (a shell's
// foreground ls as the memory limit's OOM killer killed the shell: the trial's
// finding): the note says the command was killed, not that it exited, and after the
// memory limit's kill gives no session advice.
func TestLeftNoteKilled(t *testing.T) {
	n := leftNote(&nsinit.Result{ExitCode: 137, Signal: 9, OOMKilled: true, LeftRunning: 1, LeftNames: []string{"ls"}})
	if !strings.Contains(n, `1 process ("ls") of the sandbox still ran when the command was killed (SIGKILL, by the memory limit)`) ||
		strings.Contains(n, "session") || strings.Contains(n, "exited") {
		t.Errorf("note after an OOM kill: %q; want it said as killed by the memory limit, no session advice", n)
	}
	n = leftNote(&nsinit.Result{ExitCode: 143, Signal: 15, LeftRunning: 2, LeftNames: []string{"sleep", "x"}})
	if !strings.Contains(n, `2 processes ("sleep", "x") of the sandbox still ran when the command was killed (SIGTERM), and were killed with it`) ||
		!strings.Contains(n, "gosbx session start NAME") {
		t.Errorf("note after a SIGTERM: %q", n)
	}
}
