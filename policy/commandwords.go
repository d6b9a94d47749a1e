package policy

import (
	"path/filepath"
	"strings"
)

// cmdWord is one word of a command git hands to sh -c (run-command.c prepare_shell_cmd
// when the value holds a shell metacharacter; a plain value is split the same way).
type cmdWord struct {
	text    string // the word with its quotes and backslashes removed
	program bool   // in a program's place: the first word of a simple command
	dir     string // the directory a literal `cd DIR` earlier in the command moved to ("" none), as written
	unknown bool   // its meaning depends on an expansion ($, `) or on a cd the guard cannot follow
	shell   bool   // run by sh -c (the value holds a shell metacharacter): a builtin is no program
	input   bool   // the target of an input redirection (< FILE): a file the program reads, a script for sh
	named   bool   // a file the program opens (an interpreter's script, -f FILE): set by guardCommand
	script  bool   // an interpreter's script word (named): a directory there runs what it holds
}

// shellMeta are the characters for which git runs a command through sh -c rather than
// executing its one word itself (run-command.c prepare_shell_cmd).
const shellMeta = "|&;<>()$`\\\"' \t\n*?[#~=%"

// An output redirection's target (> out) is data the shell writes, not a word:
// commandWords leaves it out. An input one (< in) is kept, marked input: `sh < x` runs x.

// shellLead reports whether the next word after t is still in a program's place.
func shellLead(t string) bool {
	switch t {
	case "{", "!", "if", "then", "else", "elif", "do", "while", "until", "exec", "command", "env", "time", "nohup", "xargs", "sudo", "nice":
		return true
	}
	return false
}

// commandWords splits the command v as sh(1) would into words, following the quoting
// ('...', "...", \) and the operators ; & | ( ) < > and newline, which end a word (all
// but the redirections also end a simple command; a redirection's target is left out),
// and a literal `cd DIR` (or pushd),
// which moves later relative words to DIR. It does not expand anything: a word holding $
// or ` outside single quotes, and every word after a cd whose directory is not a literal
// (cd $X, cd -, a bare cd), is marked unknown.
func commandWords(v string) []cmdWord {
	var out []cmdWord
	var b strings.Builder
	inWord, expand, program, afterCd, unknown, redirect, redirectIn := false, false, true, false, false, false, false
	dir := ""
	var quote byte
	end := func() {
		if !inWord {
			return
		}
		t := b.String()
		b.Reset()
		inWord = false
		w := cmdWord{text: t, program: program, dir: dir, unknown: unknown || expand}
		expand = false
		switch {
		case redirect:
			redirect = false
			if redirectIn {
				w.program, w.input = false, true
				out = append(out, w)
			}
			return
		case afterCd:
			afterCd = false
			switch {
			case w.unknown || t == "-" || t == "":
				unknown = true
			case filepath.IsAbs(t) || strings.HasPrefix(t, "~"):
				dir = t
			default:
				dir = filepath.Join(dir, t)
			}
		case program && (t == "cd" || t == "pushd"):
			afterCd = true
		default:
			out = append(out, w)
		}
		if program && !shellLead(t) && !(strings.Contains(t, "=") && !strings.HasPrefix(t, "-")) {
			program = false
		}
	}
	endCommand := func() {
		end()
		if afterCd { // a bare cd: to $HOME
			unknown, afterCd = true, false
		}
		program = true
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch quote {
		case '\'':
			if c == '\'' {
				quote = 0
			} else {
				b.WriteByte(c)
			}
			continue
		case '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(v):
				i++
				b.WriteByte(v[i])
			default:
				expand = expand || c == '$' || c == '`'
				b.WriteByte(c)
			}
			continue
		}
		switch c {
		case '\'', '"':
			quote, inWord = c, true
		case '\\':
			if i+1 < len(v) {
				i++
				b.WriteByte(v[i])
			}
			inWord = true
		case ' ', '\t', '\r':
			end()
		case '<', '>':
			end()
			if i+1 < len(v) && v[i+1] == '&' { // >&2, <&-: a descriptor, not a file
				for i++; i+1 < len(v) && (v[i+1] == '-' || v[i+1] >= '0' && v[i+1] <= '9'); i++ {
				}
			} else {
				redirect, redirectIn = true, c == '<'
			}
		case ';', '&', '|', '(', ')', '\n':
			endCommand()
		default:
			expand = expand || c == '$' || c == '`'
			b.WriteByte(c)
			inWord = true
		}
	}
	endCommand()
	return out
}
