package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// New-user trial 2026-12-02 T6: with pyenv's shims first on the caller's PATH, python3
// inside (agent: none of the caller's toolchains) is /usr/bin/python3, and a command
// that failed for the missing package got no word of it. Now a failed command whose
// name ran as another file than the host's PATH finds first gets a note naming both and
// --toolchain auto; a command that succeeded gets none, and neither does --toolchain
// auto (the shim directory's place is then taken by the version's bin).
func TestUnseenFirstMatchNote(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		home, shims, path := pyenvShims(t, s)
		want := "gosbx: note: the command failed, and python3 here is /usr/bin/python3, not " + shims + "/python3, which your PATH finds first"

		r := s.runWith(home, path, "python3", "-c", "import sys; sys.exit(3)")
		if r.code != 3 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "--toolchain auto") {
			t.Errorf("a failed python3: want exit 3 and %q\n%v", want, r)
		}
		r = s.runWith(home, path, "python3", "-c", "pass")
		if r.code != 0 || strings.Contains(r.stderr, "gosbx:") {
			t.Errorf("a python3 that succeeded: want no note\n%v", r)
		}
		// in a session: the same note, its fix at the session's start
		e := &sessionEnv{s, filepath.Join(s.base, "rt"), newCgroupScope(t)}
		must(t, os.Mkdir(e.rt, 0o700))
		s.chown(e.rt)
		t.Cleanup(e.stopAll)
		st := e.rawCommand(e.limitCtx(runLimit), "session", "start", "py", "--workspace", s.ws)
		st.Env = append(st.Env, "XDG_RUNTIME_DIR="+e.rt, "HOME="+home, "PATH="+path)
		e.scope.wrap(st)
		mustSucceed(t, e.runCmd(e.limitCtx(runLimit), st), "session start")
		r = e.gosbx("exec", "--session", "py", "--", "python3", "-c", "import sys; sys.exit(3)")
		if r.code != 3 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "gosbx session start py with the flag") {
			t.Errorf("a failed python3 in a session: want exit 3 and %q in session start's form\n%v", want, r)
		}
		mustSucceed(t, e.gosbx("session", "stop", "py"), "session stop")
		// a name whose first match is the one that runs: no note
		r = s.runWith(home, path, "sh", "-c", "exit 4")
		if r.code != 4 || strings.Contains(r.stderr, "gosbx:") {
			t.Errorf("sh, first on PATH inside and out: want no note\n%v", r)
		}
	})
}

// New-user trial 2026-12-03 F5: a command gosbx itself ended (here the timeout; the
// memory limit's kill and the pids limit the same) gets gosbx's word on why, and not
// the note that guesses another cause: after an OOM kill, the toolchain note sent the
// user after python3's place on PATH.
func TestUnseenFirstNoteNotAfterKnownCause(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		home, _, path := pyenvShims(t, s)
		r := s.runWith(home, path, "--timeout", "1s", "--", "python3", "-c", "import time; time.sleep(30)")
		if r.code != 124 || !strings.Contains(r.stderr, "timed out") {
			t.Fatalf("want 124 and the timeout's message\n%v", r)
		}
		if strings.Contains(r.stderr, "which your PATH finds first") {
			t.Errorf("a command the timeout ended got the toolchain note\n%v", r)
		}
	})
}

// pyenvShims gives s a home whose pyenv shim directory holds a python3 of its own (one
// the sandbox does not show), and a PATH that finds it first.
func pyenvShims(t *testing.T, s *sandbox) (home, shims, path string) {
	t.Helper()
	home = filepath.Join(s.base, "home")
	shims = home + "/.pyenv/shims"
	must(t, os.MkdirAll(shims, 0o755))
	mustWriteExecutable(t, shims+"/python3", []byte("#!/bin/sh\necho the shim ran; exit 99\n"), 0o755)
	filepath.Walk(s.base, func(p string, _ os.FileInfo, _ error) error { s.chown(p); return nil })
	return home, shims, shims + ":/usr/bin:/bin"
}
