// Package shown renders text a sandbox can choose (a path it made, a symlink's target)
// for gosbx's own output lines, so that it cannot print a line of its own or a terminal
// escape inside them. policy.Shown and the error types of mounts and nsinit use it.
package shown

import (
	"strconv"
	"unicode/utf8"
)

// Text is s itself when every rune is printable (strconv.IsPrint: letters, marks,
// numbers, punctuation, symbols, ASCII space), else s as a Go string literal
// (strconv.Quote: "\n", "\x1b", "\u202e"). It is idempotent: a quoted string is all
// printable.
func Text(s string) string {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
		i += n
	}
	return s
}
