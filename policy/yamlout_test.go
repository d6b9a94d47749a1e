package policy

import (
	"reflect"
	"testing"
)

// TestMarshalYAMLStrings: every string MarshalYAML prints reads back as the same
// string, as a value and as a key: the ones a YAML reader could take for a number, a
// boolean, a null, an alias, a tag, a comment or an indicator are quoted, and controls
// escaped (github.com/goccy/go-yaml's own encoder printed "1e3" and a lone tab
// unquoted, read back as a number and as nothing).
func TestMarshalYAMLStrings(t *testing.T) {
	for _, s := range []string{"1e3", "0x10", "0o7", "+1", "-1", ".5", "1_000", "12:30", ".inf", ".Inf", "-.inf",
		".NaN", "~", "null", "Null", "NULL", "true", "True", "TRUE", "yes", "on", "N", "y", "a: b", "a #b", "- x",
		"[x]", "{x}", "*x", "&x", "!x", "!!str", "%x", "@x", "`x", "|", ">", "'", `"`, `\`, "\t", "\n", " ", "x ",
		"\u0085", "\u2028", "\ufeff", "\x7f", "\x00", "é", "", "${home}/x", "~/.ssh", ".git", "._x", "a/b-c_d.e",
		"/usr", "..5", "#", "?", ",", "x,y", "-", "--- ", "...", "<<"} {
		for _, v := range []any{map[string]any{"k": s}, map[string]any{s: "v"}, []any{s}} {
			out, err := MarshalYAML(map[string]any{"x": v})
			if err != nil {
				t.Errorf("MarshalYAML(%q): %v", s, err)
				continue
			}
			got, _, err := decodeYAML(out)
			if err != nil {
				t.Errorf("MarshalYAML(%q) printed %q, which does not read back: %v", s, out, err)
				continue
			}
			if want := map[string]any{"x": v}; !reflect.DeepEqual(got, want) {
				t.Errorf("MarshalYAML(%q) printed %q, read back as %#v", s, out, got)
			}
		}
	}
}
