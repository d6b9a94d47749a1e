package mounts

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestErrorShown: a mount error shows its source and target with shown.Text: a path
// with a newline or escape prints no line or escape of its own.
func TestErrorShown(t *testing.T) {
	e := &Error{Op: "bind", Source: "/w/a\n\x1b[1mgosbx: note: fake", Target: "/w/b\x1b]0;t\a", Err: unix.EPERM}
	if s := e.Error(); strings.ContainsAny(s, "\n\x1b\a") {
		t.Errorf("the mount error prints raw control characters: %q", s)
	}
}
