package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// New-user trial 2026-12-02 T12: each session name left a NAME.ended record in the
// runtime directory forever. A record a day old, of a name no session holds, is removed
// by the next session start, stop or ls; a fresh one stays (the next client of the name
// is told why it ended).
func TestSessionEndedRecordsAgeOut(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
		dir := filepath.Join(e.rt, "gosbx")
		for _, n := range []string{"old", "fresh"} {
			e.start(n)
			mustSucceed(t, e.gosbx("session", "stop", n), "stop "+n)
			if !exists(filepath.Join(dir, n+".ended")) {
				t.Fatalf("session %s stopped: no %s.ended to test with", n, n)
			}
		}
		past := time.Now().Add(-25 * time.Hour)
		must(t, os.Chtimes(filepath.Join(dir, "old.ended"), past, past))
		mustSucceed(t, e.gosbx("session", "ls"), "session ls")
		if exists(filepath.Join(dir, "old.ended")) {
			t.Errorf("old.ended (25 h old, no session of the name) is still there after session ls")
		}
		r := e.gosbx("exec", "--session", "fresh", "--", "true")
		if r.code != 125 || !strings.Contains(r.stderr, "it ended at ") {
			t.Errorf("fresh: want the record kept and said\n%v", r)
		}
	})
}
