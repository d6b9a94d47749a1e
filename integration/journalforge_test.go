package integration

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Attack review round three, F1: the cleanup journal is carried out as the caller, so
// nothing a sandbox can write may become one. The review's reproducer (a sandbox
// writes a journal into XDG_RUNTIME_DIR/gosbx, which lies in its workspace; the next
// launch, elsewhere, deletes a directory and makes a symlink as root) is refused at
// the first launch; a journal planted anyway (one without its seal or unlike it, a
// hard-linked one, another uid's, one naming a path outside its trees) is never carried out, while
// a genuine one is.

// forgedEntries remove victim and make link a symlink to /gosbx-review-evil.
func forgedEntries(victim, link string) []map[string]string {
	return []map[string]string{
		{"kind": "remove-if-created", "path": victim},
		{"kind": "restore-symlink", "path": link, "target": "/gosbx-review-evil"},
	}
}

// unsignedJournal is the review's journal: owner and init pid 0 (gone), no MAC.
func unsignedJournal(entries []map[string]string) []byte {
	b, _ := json.Marshal(map[string]any{
		"owner": map[string]int{"pid": 0, "start": 0}, "init": map[string]int{"pid": 0, "start": 0},
		"entries": entries,
	})
	return b
}

// genuineJournal is a journal as gosbx writes it, with trees.
func genuineJournal(trees []string, entries []map[string]string) []byte {
	b, _ := json.Marshal(map[string]any{
		"owner": map[string]int{"pid": 0, "start": 0}, "init": map[string]int{"pid": 0, "start": 0},
		"trees": trees, "entries": entries,
	})
	return b
}

// sealDir is the caller's journal seal directory, made as gosbx makes it: root's in
// /run/gosbx whatever the journal directory, another user's in the journal directory.
func sealDir(t *testing.T, s *sandbox, journalDir string) string {
	t.Helper()
	key := journalDir
	if s.c.uid == 0 {
		key = "/run/gosbx"
	}
	for _, d := range []string{key, filepath.Join(key, "sealed")} {
		if err := os.Mkdir(d, 0o700); err == nil {
			s.chown(d)
		} else if !errors.Is(err, os.ErrExist) {
			t.Fatal(err)
		}
	}
	return filepath.Join(key, "sealed")
}

// runtimeDir makes a journal directory of the caller's (XDG_RUNTIME_DIR/gosbx) outside
// the workspace.
func runtimeDir(t *testing.T, s *sandbox) (xdg, dir string) {
	xdg = filepath.Join(s.base, "runtime")
	dir = filepath.Join(xdg, "gosbx")
	for _, d := range []string{xdg, dir} {
		must(t, os.Mkdir(d, 0o700))
		s.chown(d)
	}
	return xdg, dir
}

func TestJournalForgedByASandbox(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		rt := filepath.Join(s.ws, ".rt")
		must(t, os.Mkdir(rt, 0o700))
		s.chown(rt)
		victim := filepath.Join(s.base, "victim")
		must(t, os.Mkdir(victim, 0o755))
		s.chown(victim)
		link := filepath.Join(s.base, "planted-link")
		j := string(unsignedJournal(forgedEntries(victim, link)))

		// the review's reproducer, first launch: its sandbox could write the journal
		// directory, so it does not run
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--", shellPath, "-c", `mkdir -m700 .rt/gosbx; printf '%s' "$1" > .rt/gosbx/1.json`, "_", j)
		cmd.Env = s.env("XDG_RUNTIME_DIR=" + rt)
		r := s.runCmd(ctx, cmd)
		if r.code != 125 || !strings.Contains(r.stderr, "journal") {
			t.Errorf("a launch whose workspace holds the journal directory ran (want 125 naming the journal):\n%v", r)
		}
		if _, err := os.Lstat(filepath.Join(rt, "gosbx")); err == nil {
			t.Errorf("the refused launch's command ran: it made .rt/gosbx")
		}
		// the same through a symlink to the workspace (a string prefix would not see it)
		wsLink := filepath.Join(s.base, "ws-link")
		must(t, os.Symlink(s.ws, wsLink))
		ctx = s.limitCtx(runLimit)
		cmd = s.rawCommand(ctx, "exec", "--workspace", wsLink, "--", shellPath, "-c", `mkdir -m700 .rt/gosbx; printf '%s' "$1" > .rt/gosbx/1.json`, "_", j)
		cmd.Env = s.env("XDG_RUNTIME_DIR=" + rt)
		r = s.runCmd(ctx, cmd)
		if r.code != 125 || !strings.Contains(r.stderr, "journal") {
			t.Errorf("a launch whose workspace, named through a symlink, holds the journal directory ran:\n%v", r)
		}

		// planted anyway (as a sandbox of a launch with another XDG_RUNTIME_DIR could):
		// the next launch, elsewhere, refuses it
		dir := filepath.Join(rt, "gosbx")
		if _, err := os.Lstat(dir); err != nil {
			must(t, os.Mkdir(dir, 0o700))
			s.chown(dir)
		}
		p := filepath.Join(dir, "1.json")
		must(t, os.WriteFile(p, []byte(j), 0o600))
		s.chown(p)
		other := newSandbox(t, c)
		ctx = other.limitCtx(runLimit)
		cmd = other.command(ctx, "--", "true")
		cmd.Env = other.env("XDG_RUNTIME_DIR=" + rt)
		r = other.runCmd(ctx, cmd)
		mustSucceed(t, r, "a launch elsewhere")
		if _, err := os.Stat(victim); err != nil {
			t.Errorf("a forged journal's remove-if-created was carried out: %v\n%v", err, r)
		}
		if _, err := os.Lstat(link); err == nil {
			t.Errorf("a forged journal's restore-symlink was carried out\n%v", r)
		}
		if !strings.Contains(r.stderr, "no launch of this user wrote it") {
			t.Errorf("the launch did not say it refused the forged journal:\n%v", r)
		}
	})
}

func TestJournalRefusedUnlessGenuine(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		xdg, dir := runtimeDir(t, s)
		seals := sealDir(t, s, dir)
		planted := func(name string) string {
			p := filepath.Join(s.ws, name)
			must(t, os.WriteFile(p, nil, 0o644))
			s.chown(p)
			return p
		}
		// write puts a journal in the journal directory, and seal (nil: none) as its seal
		write := func(name string, b, seal []byte) string {
			name = s.id + "-" + name + ".json"
			p := filepath.Join(dir, name)
			must(t, os.WriteFile(p, b, 0o600))
			s.chown(p)
			if seal != nil {
				sp := filepath.Join(seals, name)
				must(t, os.WriteFile(sp, seal, 0o600))
				s.chown(sp)
				t.Cleanup(func() { os.Remove(sp) })
			}
			return p
		}
		sealed := func(name string, trees []string, path string) string {
			j := genuineJournal(trees, []map[string]string{{"kind": "remove-if-created", "path": path}})
			return write(name, j, j)
		}
		// the control: an empty directory (a mount point the launch made), which a
		// replay removes whoever made it
		genuine := filepath.Join(s.ws, "genuine")
		must(t, os.Mkdir(genuine, 0o755))
		s.chown(genuine)
		sealed("genuine", []string{s.ws}, genuine)
		hardLinked := planted("hard-linked")
		hl := sealed("hardlinked", []string{s.ws}, hardLinked)
		must(t, os.Link(hl, filepath.Join(s.base, "second-name")))
		foreign := planted("foreign")
		fj := sealed("foreign", []string{s.ws}, foreign)
		must(t, os.Lchown(fj, 12345, 12345))
		// sealed, but naming a path outside its own trees, or a tree not the caller's
		outside := filepath.Join(s.base, "outside")
		must(t, os.Mkdir(outside, 0o755))
		s.chown(outside)
		sealed("outside", []string{s.ws}, outside)
		// not sealed, or its seal differs (a genuine journal rewritten)
		unsealed := planted("unsealed")
		write("unsealed", genuineJournal([]string{s.ws}, []map[string]string{{"kind": "remove-if-created", "path": unsealed}}), nil)
		rewritten := planted("rewritten")
		write("rewritten", genuineJournal([]string{s.ws}, []map[string]string{{"kind": "remove-if-created", "path": rewritten}}),
			genuineJournal([]string{s.ws}, []map[string]string{{"kind": "remove-if-created", "path": genuine}}))
		var notOwn string
		if c.uid != 0 {
			rootTree := filepath.Join(s.base, "root-tree")
			must(t, os.Mkdir(rootTree, 0o755))
			notOwn = filepath.Join(rootTree, "f")
			must(t, os.WriteFile(notOwn, nil, 0o644))
			sealed("notown", []string{rootTree}, notOwn)
		}

		other := newSandbox(t, c)
		ctx := other.limitCtx(runLimit)
		cmd := other.command(ctx, "--", "true")
		cmd.Env = other.env("XDG_RUNTIME_DIR=" + xdg)
		r := other.runCmd(ctx, cmd)
		mustSucceed(t, r, "a launch elsewhere")
		if _, err := os.Lstat(genuine); err == nil {
			t.Errorf("a genuine journal was not carried out (the control)\n%v", r)
		}
		for what, p := range map[string]string{"a hard-linked": hardLinked, "another uid's": foreign,
			"an unsealed": unsealed, "a rewritten": rewritten, "an out-of-tree": outside, "a foreign tree's": notOwn} {
			if p == "" {
				continue
			}
			if _, err := os.Lstat(p); err != nil {
				t.Errorf("%s journal was carried out: %s is gone\n%v", what, p, r)
			}
		}
		for _, want := range []string{"hardlinked.json: refused", "has 2 hard links", "foreign.json: refused",
			"unsealed.json: refused", "rewritten.json: refused", "different content", "lies in none of the journal's trees"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("the launch did not say why it refused a journal (%q):\n%v", want, r)
			}
		}
		if _, err := os.Lstat(filepath.Join(seals, s.id+"-genuine.json")); err == nil {
			t.Errorf("the genuine journal's seal was left behind")
		}
	})
}

// F5: another user cannot stop a user's commit-mode launches by making the journal
// directory first. With a home of its own (here XDG_STATE_HOME), the journal
// directory is there, which no other user can make; without one the fallback in /tmp
// is refused by name, saying who made it. uid 12345 (used by no other test) runs gosbx;
// the squatter's /tmp/gosbx-12345 belongs to 65534, as in the review.
func TestJournalDirNotSquattable(t *testing.T) {
	requireBinary(t)
	const uid = 12345
	c := caller{"u12345", uid, uid, "/nonexistent", nil}
	s := newSandbox(t, c)
	git := exec.Command("git", "-C", s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "init", "-q")
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	must(t, exec.Command("chown", "-R", "12345:12345", s.ws).Run())
	squat := "/tmp/gosbx-12345"
	os.RemoveAll(squat)
	must(t, os.Mkdir(squat, 0o700))
	must(t, os.Chown(squat, nobodyID, nobodyID))
	t.Cleanup(func() { os.RemoveAll(squat) })
	state := filepath.Join(s.base, "state")
	must(t, os.Mkdir(state, 0o755))
	s.chown(state)

	pol := s.commitPolicy()
	ctx := s.limitCtx(runLimit)
	cmd := s.command(ctx, "--policy", pol, "--", "true")
	cmd.Env = s.env("XDG_STATE_HOME=" + state)
	r := s.runCmd(ctx, cmd)
	mustSucceed(t, r, "a commit-mode launch while another user squats /tmp/gosbx-12345")
	if _, err := os.Stat(filepath.Join(state, "gosbx", "sealed")); err != nil {
		t.Errorf("the journal directory is not in XDG_STATE_HOME/gosbx: %v", err)
	}

	ctx = s.limitCtx(runLimit)
	cmd = s.command(ctx, "--policy", pol, "--", "true")
	r = s.runCmd(ctx, cmd)
	if r.code != 125 || !strings.Contains(r.stderr, "uid 65534 made it") || !strings.Contains(r.stderr, "XDG_STATE_HOME") {
		t.Errorf("without a home, a squatted /tmp/gosbx-12345 is not refused by name with the fix:\n%v", r)
	}
}
