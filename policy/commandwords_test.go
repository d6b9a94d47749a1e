package policy

import (
	"slices"
	"testing"
)

// commandWords follows quoting, operators and a literal cd as sh does (review 28 F6).
func TestCommandWords(t *testing.T) {
	for _, c := range []struct {
		v    string
		want []cmdWord
	}{
		{"git log --oneline", []cmdWord{{text: "git", program: true}, {text: "log"}, {text: "--oneline"}}},
		{"cd web && ./scripts/lint.sh", []cmdWord{{text: "./scripts/lint.sh", program: true, dir: "web"}}},
		{`sh -c 'a b';./x|"y z"`, []cmdWord{{text: "sh", program: true}, {text: "-c"}, {text: "a b"}, {text: "./x", program: true}, {text: "y z", program: true}}},
		{"cd $D; ./x", []cmdWord{{text: "./x", program: true, unknown: true}}},
		{"cd; ./x", []cmdWord{{text: "./x", program: true, unknown: true}}},
		{`f() { git log "$@"; }; f`, []cmdWord{{text: "f", program: true}, {text: "{", program: true}, {text: "git", program: true}, {text: "log"}, {text: "$@", unknown: true}, {text: "}", program: true}, {text: "f", program: true}}},
		{"A=1 ./x>o 2>&1 <in", []cmdWord{{text: "A=1", program: true}, {text: "./x", program: true}, {text: "2"}}},
	} {
		if got := commandWords(c.v); !slices.Equal(got, c.want) {
			t.Errorf("commandWords(%q) = %+v\nwant %+v", c.v, got, c.want)
		}
	}
}
