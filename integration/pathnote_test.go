package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The PATH note: a PATH directory in a writable tree searched before a program the
// host's git or shell runs is noted on stderr, not guarded with a placeholder (which
// left directories on the host and pinned their parents).

// notedPrograms returns the programs the launch's PATH note on stderr names for the
// PATH entry (resolved dir), nil when it names none.
func notedPrograms(stderr, entry, dir string) []string {
	label := entry
	if entry != dir {
		label += " (" + dir + ")"
	}
	for _, line := range strings.Split(stderr, "\n") {
		_, rest, ok := strings.Cut(line, "gosbx: note: PATH searches directories the sandbox can write")
		if !ok {
			continue
		}
		_, list, _ := strings.Cut(rest, ": ")
		list, _, _ = strings.Cut(list, ". The command can")
		for _, part := range strings.Split(list, "; ") {
			if progs, ok := strings.CutPrefix(part, label+": "); ok {
				return strings.Split(progs, ", ")
			}
		}
	}
	return nil
}

// hostVenv makes a venv (no pip) at dir with the host's /usr/bin/python3, owned by the
// caller; the test is skipped without one.
func (s *sandbox) hostVenv(dir string) {
	s.t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		s.t.Skip("no /usr/bin/python3")
	}
	if out, err := exec.Command("/usr/bin/python3", "-m", "venv", "--without-pip", dir).CombinedOutput(); err != nil {
		s.t.Fatalf("python3 -m venv: %v\n%s", err, out)
	}
	must(s.t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			err = os.Lchown(p, s.c.uid, s.c.gid)
		}
		return err
	}))
}

// gitDefaults are the programs the note names for an empty writable PATH directory
// first on PATH, with EDITOR=myedit: git's defaults, the editor, git itself.
var gitDefaults = []string{"ssh", "less", "vi", "gpg", "myedit", "git"}

// noNamesIn fails the test when any of names exists in dir on the host.
func noNamesIn(t *testing.T, dir string, names []string) {
	t.Helper()
	for _, p := range names {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s/%s exists on the host after the launch", dir, p)
		}
	}
}

// A workspace venv first on PATH: the note names .venv/bin with git's default programs
// (ssh, less, vi, gpg), the editor the environment names and git itself; nothing is
// made in .venv/bin on the host; the command removes the venv and makes it again
// (rm -rf .venv failed with EBUSY under the placeholders), and the venv's python
// symlink chain, which a config alias runs, is as the new venv made it.
func TestPathNoteVenv(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) { pathNoteVenv(t, c) })
}

func pathNoteVenv(t *testing.T, c caller) {
	s := newSandbox(t, c)
	s.newRepo(s.ws, "base")
	venv := filepath.Join(s.ws, ".venv")
	s.hostVenv(venv)
	bin := filepath.Join(venv, "bin")
	s.hostGit(s.ws, "config", "alias.py", "!python -c pass")
	before, err := os.Readlink(filepath.Join(bin, "python"))
	must(t, err)
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "EDITOR=myedit"}
	r := s.runEnv(env, nil, `rm -rf .venv && /usr/bin/python3 -m venv --without-pip .venv && .venv/bin/python -c 'print("VENV-OK")'`)
	mustSucceed(t, r, "rm -rf .venv && python3 -m venv .venv")
	if !strings.Contains(r.stdout, "VENV-OK") {
		t.Errorf("the recreated venv's python did not run\n%v", r)
	}
	noted := notedPrograms(r.stderr, bin, bin)
	for _, p := range gitDefaults {
		if !slices.Contains(noted, p) {
			t.Errorf("the note does not name %s in %s (names %q)\n%v", p, bin, noted, r)
		}
	}
	if slices.Contains(noted, "python") {
		t.Errorf("python, a symlink put back after the run, is noted\n%v", r)
	}
	if !strings.Contains(r.stderr, "env PATH=/usr/bin:/bin gosbx") {
		t.Errorf("the note does not give the fix\n%v", r)
	}
	noNamesIn(t, bin, gitDefaults)
	if after, err := os.Readlink(filepath.Join(bin, "python")); err != nil || after != before {
		t.Errorf(".venv/bin/python after the run: %q, %v; want %q", after, err, before)
	}
	if out, err := exec.Command(filepath.Join(bin, "python"), "-c", "import sys; print(sys.prefix)").Output(); err != nil || strings.TrimSpace(string(out)) != venv {
		t.Errorf("the host's .venv/bin/python: %q, %v", out, err)
	}
	// the venv's root and bin are no mount points left behind: a second launch removes it
	r = s.runEnv(env, nil, `rm -rf .venv && echo GONE`)
	if mustSucceed(t, r, "rm -rf .venv"); !strings.Contains(r.stdout, "GONE") {
		t.Errorf("rm -rf .venv failed\n%v", r)
	}
	if _, err := os.Lstat(venv); err == nil {
		t.Errorf("the venv removed inside is back on the host (the symlink restore made its directory again?)")
	}
}

// gosbx session start prints the same note once, and leaves nothing in the venv.
func TestPathNoteSessionStart(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, rootCaller)
	e.newRepo(e.ws, "base")
	bin := filepath.Join(e.ws, ".venv/bin")
	must(t, os.MkdirAll(bin, 0o755))
	ctx := e.limitCtx(runLimit)
	cmd := e.rawCommand(ctx, "session", "start", "pn", "--workspace", e.ws, "--die-with-owner", strconv.Itoa(os.Getpid()))
	cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt, "PATH="+bin+":/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "EDITOR=myedit")
	e.scope.wrap(cmd)
	r := e.runCmd(ctx, cmd)
	mustSucceed(t, r, "session start")
	noted := notedPrograms(r.stderr, bin, bin)
	for _, p := range gitDefaults {
		if !slices.Contains(noted, p) {
			t.Errorf("session start's note does not name %s in %s (names %q)\n%v", p, bin, noted, r)
		}
	}
	if n := strings.Count(r.stderr, "gosbx: note: PATH searches"); n != 1 {
		t.Errorf("session start printed the note %d times\n%v", n, r)
	}
	noNamesIn(t, bin, gitDefaults)
	r = e.in("pn", nil, `rm -rf .venv && echo GONE`)
	if mustSucceed(t, r, "rm -rf .venv in the session"); !strings.Contains(r.stdout, "GONE") {
		t.Errorf("rm -rf .venv failed in the session\n%v", r)
	}
	mustSucceed(t, e.gosbx("session", "stop", "pn"), "session stop")
}
