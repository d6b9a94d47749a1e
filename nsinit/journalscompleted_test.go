package nsinit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/config"
)

// TestJournalsCompletedKeepsCheck: a caller that completed the journals itself
// (JournalsCompleted) skips only the second pass; a launch whose sandbox could write
// the journal directory is refused all the same (step "journal"), and one that cannot
// passes, as without the field.
func TestJournalsCompletedKeepsCheck(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rt := filepath.Join(base, "rt")
	if err := os.Mkdir(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", rt)
	bind := func(src string) *config.Config {
		return &config.Config{Mounts: []specs.Mount{
			{Destination: "/ro", Type: "bind", Source: "/usr", Options: []string{"rbind", "ro"}},
			{Destination: "/w", Type: "bind", Source: src, Options: []string{"rbind"}},
		}}
	}
	for _, done := range []bool{false, true} {
		c := &Cmd{JournalsCompleted: done}
		var se *SetupError
		if err := c.beginJournal(bind(base)); !errors.As(err, &se) || se.Step != "journal" || !strings.Contains(err.Error(), "which the sandbox can write") {
			t.Errorf("JournalsCompleted %v, the journal directory writable: %v", done, err)
		}
		if err := c.beginJournal(bind(filepath.Join(base, "beside"))); err != nil {
			t.Errorf("JournalsCompleted %v, a tree beside it: %v", done, err)
		}
	}
}
