package shown

import (
	"strings"
	"testing"
)

// TestText: printable text is itself; a newline, an escape, a bidi override or invalid
// UTF-8 makes it a quoted literal with no control byte; quoting again changes nothing.
func TestText(t *testing.T) {
	if got := Text("/home/ü/a b"); got != "/home/ü/a b" {
		t.Errorf("printable text changed: %q", got)
	}
	for _, s := range []string{"a\nb", "a\x1b[1mb", "a\u202eb", "a\xffb", "a\x07"} {
		got := Text(s)
		if strings.ContainsAny(got, "\n\x1b\a\u202e") || !strings.HasPrefix(got, `"`) {
			t.Errorf("Text(%q) = %q: not quoted", s, got)
		}
		if Text(got) != got {
			t.Errorf("Text is not idempotent on %q", got)
		}
	}
}
