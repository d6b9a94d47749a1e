package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// MarshalYAML prints v as YAML by its JSON form (the json field names, omitempty,
// the short forms of Bind and Tmpfs), keys sorted, indented by two spaces: what
// `gosbx policy show` prints and Parse reads back. Numbers keep their JSON text (exact
// integers); a string is plain when no YAML reader could take it for anything else
// (a path, a name, ".git"), else double-quoted with escapes for every control character.
// Errors are from encoding/json.
//
// gosbx writes YAML itself: the YAML library it parses with (github.com/goccy/go-yaml)
// prints some strings unquoted that read back as other values ("1e3" as a number, a
// lone tab as nothing).
func MarshalYAML(v any) ([]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("marshal as JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var plain any
	if err := dec.Decode(&plain); err != nil {
		return nil, fmt.Errorf("read back JSON: %w", err)
	}
	var b bytes.Buffer
	switch plain.(type) {
	case map[string]any, []any:
		writeBlock(&b, plain, 0)
	default:
		writeScalar(&b, plain)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// writeBlock writes a non-empty mapping or sequence in block style at indent spaces,
// each line ended; an empty one as {} or [].
func writeBlock(b *bytes.Buffer, v any, indent int) {
	pad := strings.Repeat(" ", indent)
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			b.WriteString(pad + "{}\n")
			return
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString(pad)
			writeString(b, k)
			b.WriteByte(':')
			writeValue(b, v[k], indent+2)
		}
	case []any:
		if len(v) == 0 {
			b.WriteString(pad + "[]\n")
			return
		}
		for _, e := range v {
			b.WriteString(pad + "-")
			if m, ok := e.(map[string]any); ok && len(m) > 0 {
				// "- key: value", the mapping's other keys aligned under the first
				var sub bytes.Buffer
				writeBlock(&sub, m, indent+2)
				b.WriteByte(' ')
				b.Write(sub.Bytes()[indent+2:])
				continue
			}
			writeValue(b, e, indent+2)
		}
	}
}

// writeValue writes what follows a key's colon or a sequence's dash: a scalar or an
// empty collection on the same line, else a block on the next lines.
func writeValue(b *bytes.Buffer, v any, indent int) {
	switch c := v.(type) {
	case map[string]any:
		if len(c) == 0 {
			b.WriteString(" {}\n")
			return
		}
		b.WriteByte('\n')
		writeBlock(b, c, indent)
		return
	case []any:
		if len(c) == 0 {
			b.WriteString(" []\n")
			return
		}
		b.WriteByte('\n')
		writeBlock(b, c, indent)
		return
	}
	b.WriteByte(' ')
	writeScalar(b, v)
	b.WriteByte('\n')
}

func writeScalar(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		fmt.Fprint(b, v)
	case json.Number:
		b.WriteString(v.String())
	case string:
		writeString(b, v)
	default:
		fmt.Fprintf(b, "%q", fmt.Sprint(v))
	}
}

// writeString writes s plain when it starts with a letter, '/', '.' or '_' and holds
// only letters, digits and _ . / - (and is no boolean, null, infinity or NaN of any YAML
// version), else double-quoted, every control character escaped.
func writeString(b *bytes.Buffer, s string) {
	if plainSafe(s) {
		b.WriteString(s)
		return
	}
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError:
			b.WriteString(`\uFFFD`)
		case r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029 || r == 0xfeff:
			fmt.Fprintf(b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

func plainSafe(s string) bool {
	if s == "" {
		return false
	}
	if c := s[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '/' || c == '.' || c == '_') {
		return false
	}
	if s[0] == '.' && len(s) > 1 && s[1] >= '0' && s[1] <= '9' {
		return false // ".5" is a number
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '/' || c == '-') {
			return false
		}
	}
	switch strings.ToLower(s) {
	case "true", "false", "null", "yes", "no", "on", "off", "y", "n", ".inf", ".nan":
		return false
	}
	return true
}
