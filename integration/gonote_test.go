package integration

import (
	"os"
	"strings"
	"testing"
)

// `gosbx exec -- go ...` under agent (no cache) says on stderr that go's build cache
// starts empty and how to keep one; with --cache it says nothing of it.
func TestGoCacheNote(t *testing.T) {
	requireBinary(t)
	const goBin = "/usr/local/go/bin/go"
	if _, err := os.Stat(goBin); err != nil {
		t.Skipf("no %s: %v", goBin, err)
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newCacheSandbox(t, c)
		// a build (of a package that is not there: it fails at once, the note came first)
		r := s.gosbx(runLimit, "exec", "--workspace", s.ws, "--", goBin, "build", "./no-such-package")
		if !strings.Contains(r.stderr, "go's build cache starts empty") || !strings.Contains(r.stderr, "--cache") {
			t.Errorf("go build without a cache: no note on stderr:\n%v", r)
		}
		r = s.gosbx(runLimit, "exec", "--cache", "--workspace", s.ws, "--", goBin, "build", "./no-such-package")
		if strings.Contains(r.stderr, "build cache") {
			t.Errorf("go build with --cache: a note anyway:\n%v", r)
		}
		// New-user trial 2026-12-02 T7: go version builds nothing and leaves nothing
		// running (Go's telemetry child is not started: its mode is off in the private
		// HOME), so no note at all, in agent and build alike
		for _, prof := range []string{"agent", "build"} {
			r = s.gosbx(runLimit, "exec", "--policy", prof, "--workspace", s.ws, "--", goBin, "version")
			mustSucceed(t, r, "go version")
			if strings.Contains(r.stderr, "gosbx:") {
				t.Errorf("go version under %s: a note it does not need:\n%v", prof, r)
			}
		}
		// what it leaves in HOME is the command's: ~/.config stays writable
		r = s.gosbx(runLimit, "exec", "--workspace", s.ws, "--", "sh", "-c", "mkdir $HOME/.config/pip && "+goBin+" env GOTELEMETRY")
		if r.code != 0 || strings.TrimSpace(r.stdout) != "off" {
			t.Errorf("~/.config: want it writable and Go's telemetry mode off:\n%v", r)
		}
	})
}
