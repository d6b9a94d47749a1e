package integration

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Nine lines of nested YAML aliases (10^9 values once expanded) are refused by `gosbx
// policy check` with exit 125 and the line of the alias. The check runs in a sandbox
// with a 256 MiB memory limit: without the bound it grew past 500 MB (issue 15, item 9)
// and is OOM-killed there (137), never taking the host's memory.
func TestPolicyAliasBomb(t *testing.T) {
	s := newSandbox(t, rootCaller)
	var b strings.Builder
	b.WriteString(`a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]` + "\n")
	for i := 1; i < 9; i++ {
		a := fmt.Sprintf("*a%d", i-1)
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.Repeat(a+",", 9)+a)
	}
	s.writeWS("bomb.yaml", b.String(), 0o644)
	r := s.run("--memory", "256M", "--ro", filepath.Dir(gosbxBin), "--", gosbxBin, "policy", "check", "bomb.yaml")
	if r.code != 125 || !strings.Contains(r.stderr, "aliases expand") {
		t.Fatalf("policy check of an alias bomb: want 125 naming the aliases\n%v", r)
	}
	if !regexp.MustCompile(`bomb\.yaml:[2-9]: `).MatchString(r.stderr) {
		t.Errorf("the error does not name the line of the alias: %s", r.stderr)
	}
}
