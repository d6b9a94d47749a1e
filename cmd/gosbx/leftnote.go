package main

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit"
)

// leftNote says, for a one-shot gosbx exec, that processes the command left running (a
// `tmux new -d` server, `server &`) were killed when it exited, and how to keep them: a
// session. A command killed by a signal may have left its foreground children: the
// note then says only what is known, and gives no session advice after the memory
// limit's kill. "" when none was. The names are the sandbox's (comm): each is shown quoted
// (strconv.Quote), always, so that no name can pass for the list's punctuation or count
// (a name `vim) and 7 more`; docs/decisions.md, "Attack review 26: header fields the
// proxy forwards, the note's names").
func leftNote(r *nsinit.Result) string {
	if r == nil || r.LeftRunning <= 0 {
		return ""
	}
	names := make([]string, len(r.LeftNames))
	for i, n := range r.LeftNames {
		names[i] = strconv.Quote(n)
	}
	list := strings.Join(names, ", ")
	if more := r.LeftRunning - len(names); more > 0 && list != "" {
		list += fmt.Sprintf(" and %d more", more)
	}
	what, were := "1 process", "was"
	if r.LeftRunning > 1 {
		what, were = fmt.Sprintf("%d processes", r.LeftRunning), "were"
	}
	if list != "" {
		what += " (" + list + ")"
	}
	if r.Signal != 0 {
		// The command did not exit: it was killed, maybe while it waited for these (a
		// shell's foreground ls as the shell was OOM-killed: the trial's finding), so
		// they are not known to be background processes. Said as known: the memory
		// limit's kill asks for more memory (limitNote), not a session.
		by := unix.SignalName(r.Signal)
		if r.OOMKilled {
			by += ", by the memory limit"
		}
		note := "gosbx: note: " + what + " of the sandbox still ran when the command was killed (" + by + "), and " + were +
			" killed with it: a child the command was waiting for, or one it had left in the background"
		if r.OOMKilled {
			return note
		}
		return note + "; to keep background processes and servers (tmux, a server started with &) between commands, " +
			"use a session: gosbx session start NAME, then gosbx exec --session NAME -- ..."
	}
	return "gosbx: note: " + what + " of the sandbox still ran when the command exited, and " + were + " killed with it " +
		"(a one-shot sandbox ends with its command); to keep background processes and servers (tmux, a server started " +
		"with &) between commands, use a session: gosbx session start NAME, then gosbx exec --session NAME -- ..."
}
