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
		r := s.gosbx(runLimit, "exec", "--workspace", s.ws, "--", goBin, "version")
		mustSucceed(t, r, "go version")
		if !strings.Contains(r.stderr, "go's build cache starts empty") || !strings.Contains(r.stderr, "--cache") {
			t.Errorf("go without a cache: no note on stderr:\n%v", r)
		}
		r = s.gosbx(runLimit, "exec", "--cache", "--workspace", s.ws, "--", goBin, "version")
		mustSucceed(t, r, "go version --cache")
		if strings.Contains(r.stderr, "build cache") {
			t.Errorf("go with --cache: a note anyway:\n%v", r)
		}
	})
}
