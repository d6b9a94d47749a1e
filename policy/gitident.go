package policy

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// gitIdentVars are the variables git reads a commit's identity from before its config
// (git-commit-tree(1), "COMMIT INFORMATION"), in the order they are set inside.
var gitIdentVars = [...]string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"}

// gitConfigMax bounds what is read of one git config file: an identity is a few lines,
// and a larger file (or a FIFO, a device) is not read at all.
const gitConfigMax = 1 << 20

// GitIdentity returns the caller's git identity, user.name and user.email, as git
// would take it from their global config files (git-config(1), FILES) without
// includes: home/.config/git/config, xdg/git/config when xdg (the caller's
// $XDG_CONFIG_HOME) is an absolute path, then home/.gitconfig, a later file's value
// winning. A file that is missing, unreadable, not a regular file, larger than 1 MiB,
// that does not parse (gitConfigIdent), or whose path leads through one of writable
// (host trees the sandbox can write: a link planted there by an earlier command would
// make this process, root for a root caller, read a file the sandbox cannot) gives
// nothing; a value that is empty, longer than identMax bytes or holds a control
// character is none. The files are read as the calling process.
func GitIdentity(home, xdg string, writable []string) (name, email string) {
	if !filepath.IsAbs(home) {
		return "", ""
	}
	files := []string{filepath.Join(home, ".config/git/config")}
	if filepath.IsAbs(xdg) {
		if f := filepath.Join(xdg, "git/config"); f != files[0] {
			files = append(files, f)
		}
	}
	files = append(files, filepath.Join(home, ".gitconfig"))
	for _, f := range files {
		if throughWritable(f, writable) {
			continue
		}
		b, err := readSmallFile(f, gitConfigMax)
		if err != nil {
			continue
		}
		n, e, ok := gitConfigIdent(string(b))
		if !ok {
			continue
		}
		if n != nil {
			name = *n
		}
		if e != nil {
			email = *e
		}
	}
	return cleanIdent(name), cleanIdent(email)
}

// readSmallFile reads path, following symlinks (a dotfiles repository's link), if it
// is a regular file of at most max bytes. O_NONBLOCK so that a FIFO does not block the
// open; the type is checked on the open file.
func readSmallFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > max {
		return nil, &os.PathError{Op: "read", Path: path, Err: syscall.EINVAL}
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &os.PathError{Op: "read", Path: path, Err: syscall.EFBIG}
	}
	return b, nil
}

// identMax is the longest name or email taken: a longer one is no identity (an
// environment string over 128 KiB fails the command's execve with E2BIG).
const identMax = 1024

// cleanIdent is v, or "" when v holds a control character (git takes the variable's
// value as the name; a newline or escape sequence there is not an identity) or is
// longer than identMax.
func cleanIdent(v string) string {
	if len(v) > identMax {
		return ""
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return ""
		}
	}
	return strings.TrimSpace(v)
}

// gitConfigIdent parses the text of a git config file (parseGitConfig) and returns the
// last user.name and user.email set in it (nil: not set; a key with no `=` unsets), from a
// [user] section with no subsection. ok is false when any line does not parse: git itself
// refuses such a file, and gosbx takes nothing from it.
func gitConfigIdent(text string) (name, email *string, ok bool) {
	entries, ok := parseGitConfig(text)
	if !ok {
		return nil, nil, false
	}
	for _, e := range entries {
		if e.section != "user" || e.sub != "" || e.dotted {
			continue
		}
		var val *string
		if e.set {
			v := e.value
			val = &v
		}
		switch e.key {
		case "name":
			name = val
		case "email":
			email = val
		}
	}
	return name, email, true
}

// configEntry is one `key = value` line of a git config file: section and key
// lower-cased, sub the subsection as written ([section "sub"], or the part after the
// first dot of the deprecated [section.sub], then dotted is set); set is false for a
// key with no `=` (a boolean true).
type configEntry struct {
	section, sub, key, value string
	set, dotted              bool
	env                      string // the environment variable that carries it ("" from a file)
}

// parseGitConfig parses the text of a git config file (git-config(1), "CONFIGURATION
// FILE": sections [name] and [name "subsection"] or [name.sub], case-insensitive names,
// `key = value` lines, values with "quotes", the escapes \\ \" \n \t \b and a trailing
// \ continuing the line, comments from # or ; outside quotes, a leading UTF-8 BOM) into
// its entries in file order. ok is false when any line does not parse (git refuses
// such a file).
func parseGitConfig(text string) (entries []configEntry, ok bool) {
	var section, sub string
	dotted := false
	p := &configScanner{s: strings.TrimPrefix(text, "\ufeff")}
	for {
		p.skipSpace()
		if p.eof() {
			return entries, true
		}
		c := p.s[p.i]
		switch {
		case c == '\n':
			p.i++
		case c == '#' || c == ';':
			p.skipLine()
		case c == '[':
			sec, s, quoted, ok := p.header()
			if !ok {
				return nil, false
			}
			// an empty [name ""] is not [name]: marked as a subsection form
			section, sub, dotted = sec, s, quoted && s == ""
			if name, rest, found := strings.Cut(sec, "."); found && !quoted {
				section, sub, dotted = name, rest, true
			}
		case isKeyStart(c):
			e := configEntry{section: section, sub: sub, dotted: dotted, key: p.key()}
			p.skipSpace()
			if !p.eof() && p.s[p.i] == '=' {
				p.i++
				v, ok := p.value()
				if !ok {
					return nil, false
				}
				e.value, e.set = v, true
			} else if !p.eof() && p.s[p.i] != '\n' && p.s[p.i] != '#' && p.s[p.i] != ';' {
				return nil, false
			}
			entries = append(entries, e)
		default:
			return nil, false
		}
	}
}

// configScanner walks a git config file's text.
type configScanner struct {
	s string
	i int
}

func (p *configScanner) eof() bool { return p.i >= len(p.s) }

// skipSpace skips blanks (not newlines); a \r before a newline counts as one.
func (p *configScanner) skipSpace() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *configScanner) skipLine() {
	for !p.eof() && p.s[p.i] != '\n' {
		p.i++
	}
}

func isKeyStart(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isKeyChar(c byte) bool { return isKeyStart(c) || c >= '0' && c <= '9' || c == '-' }

// key reads a variable name, lower-cased.
func (p *configScanner) key() string {
	start := p.i
	for !p.eof() && isKeyChar(p.s[p.i]) {
		p.i++
	}
	return strings.ToLower(p.s[start:p.i])
}

// header reads a section header from its '[' and returns its name, lower-cased (with
// its dots: [section.sub]), and the subsection of [name "sub"] as written (escapes
// undone). What follows the ']' on its line is left for the caller (a key may follow).
func (p *configScanner) header() (name, sub string, quoted, ok bool) {
	p.i++ // '['
	start := p.i
	for !p.eof() && (isKeyChar(p.s[p.i]) || p.s[p.i] == '.') {
		p.i++
	}
	name = strings.ToLower(p.s[start:p.i])
	if name == "" || p.eof() {
		return "", "", false, false
	}
	switch p.s[p.i] {
	case ']':
		p.i++
		return name, "", false, true
	case ' ', '\t':
		p.skipSpace()
		if p.eof() || p.s[p.i] != '"' || strings.Contains(name, ".") {
			return "", "", false, false
		}
		p.i++
		var b strings.Builder
		for !p.eof() && p.s[p.i] != '"' {
			switch p.s[p.i] {
			case '\n':
				return "", "", false, false
			case '\\':
				p.i++
				if p.eof() || p.s[p.i] == '\n' {
					return "", "", false, false
				}
			}
			b.WriteByte(p.s[p.i])
			p.i++
		}
		if p.eof() || p.i+1 >= len(p.s) || p.s[p.i+1] != ']' {
			return "", "", false, false
		}
		p.i += 2
		return name, b.String(), true, true
	}
	return "", "", false, false
}

// value reads a value after its '=' to the end of its logical line: blanks outside
// quotes are kept between words, trimmed at the ends; a comment ends it.
func (p *configScanner) value() (string, bool) {
	var b strings.Builder
	quoted := false
	pending := 0 // blanks seen outside quotes after the value began: one space each if a word follows
	for !p.eof() {
		c := p.s[p.i]
		switch {
		case c == '\n':
			if quoted {
				return "", false
			}
			return b.String(), true
		case !quoted && (c == '#' || c == ';'):
			p.skipLine()
			return b.String(), true
		case !quoted && (c == ' ' || c == '\t' || c == '\r'):
			if b.Len() > 0 {
				pending++
			}
			p.i++
			continue
		}
		if pending > 0 {
			b.WriteString(strings.Repeat(" ", pending))
			pending = 0
		}
		switch c {
		case '"':
			quoted = !quoted
		case '\\':
			p.i++
			if p.eof() {
				return "", false
			}
			switch p.s[p.i] {
			case '\n':
				// a continued line: nothing written
			case '\\', '"':
				b.WriteByte(p.s[p.i])
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			default:
				return "", false
			}
		default:
			b.WriteByte(c)
		}
		p.i++
	}
	if quoted {
		return "", false
	}
	return b.String(), true
}

// gitIdentEnv is the caller's git identity (GitIdentity of h's home and
// $XDG_CONFIG_HOME) as GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL, GIT_COMMITTER_NAME and
// GIT_COMMITTER_EMAIL, KEY=VALUE, each only when its value was found.
func gitIdentEnv(h Host, writable []string) []string {
	name, email := GitIdentity(h.Home, envValue(h.Environ, "XDG_CONFIG_HOME"), writable)
	var env []string
	for i, k := range gitIdentVars {
		v := name
		if i%2 == 1 {
			v = email
		}
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// GitIdentityEnv is what git: commit sets of the caller's git identity inside, KEY=VALUE
// (a policy's or flag's value of the same variable replaces it); nil under git:
// readonly or when the caller's git config names none. For `gosbx policy show`.
func (p *Policy) GitIdentityEnv() []string { return slices.Clone(p.Environment.gitIdent) }

// throughWritable reports whether path, or any directory on the way to it, is (once
// its symlinks are resolved) in one of the trees writable: there a command could have
// put a link or the file itself. Each prefix is resolved on its own, so a link planted
// in a writable tree is seen where it lies, whatever it points at; a prefix that does
// not resolve is passed over (its parent is still looked at).
func throughWritable(path string, writable []string) bool {
	var trees []string
	for _, w := range writable {
		if w == "" {
			continue
		}
		trees = append(trees, filepath.Clean(w))
		if r, err := filepath.EvalSymlinks(w); err == nil {
			trees = append(trees, r)
		}
	}
	in := func(p string) bool {
		for _, t := range trees {
			if p == t || strings.HasPrefix(p, t+"/") || t == "/" {
				return true
			}
		}
		return false
	}
	path = filepath.Clean(path)
	if in(path) {
		return true
	}
	for prefix := path; ; prefix = filepath.Dir(prefix) {
		r, err := filepath.EvalSymlinks(prefix)
		if err == nil && in(r) {
			return true
		}
		if prefix == "/" || prefix == "." {
			return false
		}
	}
}

// envValue is the value of the last k=... in env, "" when none.
func envValue(env []string, k string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, k+"="); ok {
			v = s
		}
	}
	return v
}
