package policy

import (
	"io/fs"
	"strings"
	"testing"
)

// TestErrorShown: a policy refusal shows its path, reason and cause with Shown: a path
// with a newline and escapes (a directory the sandbox made, a symlink target in the
// cause) prints no line or escape of its own (from an attack review, review12 F2).
func TestErrorShown(t *testing.T) {
	bad := "/w/a\n\x1b[1mgosbx: note: fake\x1b[0m\nb"
	e := errorf("protected", bad+"/.git", &fs.PathError{Op: "lstat", Path: "/x\n\x1b]0;t\a", Err: fs.ErrNotExist}, "is a symlink to %s", bad)
	if s := e.Error(); strings.ContainsAny(s, "\n\x1b\a") {
		t.Errorf("the refusal prints raw control characters: %q", s)
	}
}
