package mounts

import (
	"encoding/json"
	"unicode/utf8"
)

// The annotations setup reads (SymlinksAnnotation, OptionalReadOnlyAnnotation) are JSON
// as policy writes it with json.Marshal: ASCII or UTF-8 strings, no escapes, no spaces.
// encoding/json's first use in a process (its reflection tables, its code faulted in)
// cost the init 50-70 µs of each launch, before any mount, so that form is read here by
// hand. Anything else (an escape, another key, null, a malformed document) goes to
// json.Unmarshal, so the result and the errors are always encoding/json's.

// decodeSymlinks decodes a JSON array of {"path": ..., "target": ...} objects.
func decodeSymlinks(raw string) ([]Symlink, error) {
	if links, ok := fastSymlinks(raw); ok {
		return links, nil
	}
	var links []Symlink
	if err := json.Unmarshal([]byte(raw), &links); err != nil {
		return nil, err
	}
	return links, nil
}

// decodeStrings decodes a JSON array of strings.
func decodeStrings(raw string) ([]string, error) {
	if list, ok := fastStrings(raw); ok {
		return list, nil
	}
	var list []string
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return nil, err
	}
	return list, nil
}

// scanner reads the plain subset of JSON; any byte it does not expect makes the caller
// give up (ok false) and leave the document to encoding/json.
type scanner struct {
	s string
	i int
}

func (sc *scanner) space() {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// byte consumes c, after white space.
func (sc *scanner) byte(c byte) bool {
	sc.space()
	if sc.i < len(sc.s) && sc.s[sc.i] == c {
		sc.i++
		return true
	}
	return false
}

// peek reports whether c comes next, after white space, without consuming it.
func (sc *scanner) peek(c byte) bool {
	sc.space()
	return sc.i < len(sc.s) && sc.s[sc.i] == c
}

// str consumes a string without escapes or control characters, in valid UTF-8: one
// encoding/json decodes to its bytes unchanged.
func (sc *scanner) str() (string, bool) {
	if !sc.byte('"') {
		return "", false
	}
	start := sc.i
	ascii := true
	for ; sc.i < len(sc.s); sc.i++ {
		c := sc.s[sc.i]
		switch {
		case c == '"':
			v := sc.s[start:sc.i]
			sc.i++
			if !ascii && !utf8.ValidString(v) {
				return "", false
			}
			return v, true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// end reports whether only white space is left.
func (sc *scanner) end() bool {
	sc.space()
	return sc.i == len(sc.s)
}

// list reads '[' elem (',' elem)* ']' and nothing after it, calling elem for each
// element.
func (sc *scanner) list(elem func() bool) bool {
	if !sc.byte('[') {
		return false
	}
	if !sc.byte(']') {
		for {
			if !elem() {
				return false
			}
			if sc.byte(']') {
				break
			}
			if !sc.byte(',') {
				return false
			}
		}
	}
	return sc.end()
}

func fastStrings(raw string) ([]string, bool) {
	sc := scanner{s: raw}
	out := []string{}
	ok := sc.list(func() bool {
		v, ok := sc.str()
		out = append(out, v)
		return ok
	})
	return out, ok
}

func fastSymlinks(raw string) ([]Symlink, bool) {
	sc := scanner{s: raw}
	out := []Symlink{}
	ok := sc.list(func() bool {
		var l Symlink
		if !sc.byte('{') {
			return false
		}
		if sc.byte('}') {
			out = append(out, l)
			return true
		}
		for {
			if !sc.peek('"') {
				return false
			}
			k, ok := sc.str()
			if !ok || !sc.byte(':') || !sc.peek('"') {
				return false
			}
			v, ok := sc.str()
			if !ok {
				return false
			}
			// encoding/json matches keys without regard to case; only the exact
			// lower-case names are read here, the last of a repeated one winning.
			switch k {
			case "path":
				l.Path = v
			case "target":
				l.Target = v
			default:
				return false
			}
			if sc.byte('}') {
				out = append(out, l)
				return true
			}
			if !sc.byte(',') {
				return false
			}
		}
	})
	return out, ok
}
