package policy

import "github.com/gosbx/gosbx/internal/shown"

// Shown is s as gosbx prints it in a hint, note or status line: s itself when every rune
// is printable (strconv.IsPrint: letters, marks, numbers, punctuation, symbols, ASCII
// space), else s as a Go string literal (strconv.Quote: "\n", "\x1b", "\u202e"). A path
// or name a sandbox can choose (a file's PT_INTERP or #! line, a directory it made)
// cannot so print a line of its own, or a terminal escape, inside gosbx's output.
func Shown(s string) string { return shown.Text(s) }

// shownAll is Shown of each of ss.
func shownAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Shown(s)
	}
	return out
}
