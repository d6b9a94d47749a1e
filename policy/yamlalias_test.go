package policy

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// laughs is a document of n lines, each a list of ten aliases of the line above: its
// last line expands to 10^n values ("billion laughs" at n = 9).
func laughs(n int) string {
	var b strings.Builder
	b.WriteString(`l0: &l0 ["x","x","x","x","x","x","x","x","x","x"]` + "\n")
	for i := 1; i < n; i++ {
		a := fmt.Sprintf("*l%d", i-1)
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.Repeat(a+",", 9)+a)
	}
	return b.String()
}

// Aliases that expand past the budget are refused at the line of the alias, and the
// parse stays small (issue 15, item 9: 9 such lines grew a policy check past 500 MB).
// Five lines (10^5 values, which the parser without a bound decoded, at some 50 MB)
// keep this test safe to run against a parser without one.
func TestAliasExpansionBounded(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Parse([]byte(laughs(5)), "bomb.yaml")
	runtime.ReadMemStats(&after)
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("Parse of 10^5 values through aliases: %v, want a *FileError", err)
	}
	if fe.Line < 2 || fe.Line > 5 || !strings.Contains(fe.Reason, "aliases expand") {
		t.Errorf("error %q: want the line of an alias (2-5) and the reason", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("Parse allocated %d MiB before refusing", got>>20)
	}
	// An alias used as YAML means it, within the budget, still works.
	p, err := Parse([]byte("extends: agent\nfilesystem:\n  masked: &m [\"/etc/a\", \"/etc/b\"]\n  read_only: *m\n"), "ok.yaml")
	if err != nil {
		t.Fatalf("a small alias: %v", err)
	}
	if got := p.Filesystem.ReadOnly; len(got) < 2 || got[len(got)-1].Path != "/etc/b" {
		t.Errorf("read_only through an alias: %v", got)
	}
}
