package policy

import (
	"strings"
	"testing"
)

// The PATH note prints program names read from config files the sandbox could write,
// and the caller's PATH entries, as text: an ESC or a newline in any of them reaches
// the terminal quoted, never raw (attack review 30 F3).
func TestPathNoteShown(t *testing.T) {
	rb := &readBudget{}
	rb.env.path = []string{"/ws/b\x1b[1min", "/usr/bin"}
	rb.pathNotes = []pathNote{
		{entry: "/ws/b\x1b[1min", dir: "/ws/b\x1b[1min", progs: []string{"\x1b[31mRED\x1b]0;pwned\ax", "ed\nNEWLINE"}},
		{entry: "", dir: "/ws/d\nir", progs: []string{"p"}},
	}
	n := pathNoteText(rb, func(p string) bool { return strings.HasPrefix(p, "/ws/") })
	if strings.ContainsAny(n, "\x1b\a\n") {
		t.Errorf("the note holds a raw control byte: %q", n)
	}
	for _, w := range []string{`"/ws/b\x1b[1min": "\x1b[31mRED\x1b]0;pwned\ax", "ed\nNEWLINE"`, `"" ("/ws/d\nir"): p`} {
		if !strings.Contains(n, w) {
			t.Errorf("the note lacks %s:\n%q", w, n)
		}
	}
}
