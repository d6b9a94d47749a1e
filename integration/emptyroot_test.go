package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A policy file without `extends:` starts from an empty root (the trial's
// `filesystem: {git: commit}`): `policy check` warns, and the 127 hints lead somewhere:
// each names a bind the last one did not, and following them, the command runs (its
// file appears in the workspace on the host). The trial's hint went in circles
// ("add --ro /usr/bin", then a plain "no such file or directory").
func TestEmptyRootHintsConverge(t *testing.T) {
	if _, err := os.Stat("/usr/bin/touch"); err != nil {
		t.Skip("no /usr/bin/touch")
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		pol := s.writePolicy("noext.yaml", "filesystem:\n  git: commit\n")
		r := s.rawRun("policy", "check", pol)
		if r.code != 0 || !strings.Contains(r.stderr, "no `extends:`") || !strings.Contains(r.stderr, "extends: agent") {
			t.Errorf("policy check of a file without extends: %v; want ok and a warning naming extends", r)
		}
		made := filepath.Join(s.ws, "made")
		flags := []string{"exec", "--workspace", s.ws, "--policy", pol}
		var hints []string
		for range 4 {
			r = s.rawRun(append(append([]string{}, flags...), "--", "/usr/bin/touch", made)...)
			if r.code == 0 {
				break
			}
			_, add, ok := strings.Cut(r.stderr, ": add ")
			if r.code != 127 || !ok {
				t.Fatalf("flags %q: %v; want 127 with a hint naming binds", flags, r)
			}
			add, _, _ = strings.Cut(add, " (")
			add, _, _ = strings.Cut(add, " or ")
			add = strings.TrimSpace(add)
			for _, h := range hints {
				if h == add {
					t.Fatalf("the hint repeats itself (%q) after it was followed:\n%v", add, r)
				}
			}
			hints = append(hints, add)
			flags = append(flags, strings.Fields(add)...)
		}
		if r.code != 0 {
			t.Fatalf("after following the hints %q: %v", hints, r)
		}
		if _, err := os.Stat(made); err != nil {
			t.Errorf("touch ran (exit 0) but %s is not on the host: %v", made, err)
		}
	})
}
