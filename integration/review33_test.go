package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostGitTimed is hostGitOut under a deadline, its stdout only (git's warnings are
// not output): a git that blocks (in open(2) on a FIFO) is killed and reported, not
// left to hang the test.
func (s *sandbox) hostGitTimed(dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	full := append([]string{"-C", dir, "-c", "safe.directory=*"}, args...)
	var cmd *exec.Cmd
	if s.c.uid == 0 {
		cmd = exec.CommandContext(ctx, "git", full...)
	} else {
		cmd = exec.CommandContext(ctx, "/usr/bin/setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--", "git"}, full...)...)
	}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + s.base, "GIT_CONFIG_NOSYSTEM=1"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("%w: %s", err, stderr.String())
	}
	if ctx.Err() != nil {
		return string(out), ctx.Err()
	}
	return string(out), err
}

// TestGitTreeFIFORemoved: FIFOs a command leaves at the names git opens in the working
// tree (.gitignore and .gitattributes in any directory, .mailmap, .gitmodules; and a
// symlink .gitattributes to a FIFO) are removed after the run with a note, under the
// default git mode (readonly) as under commit, and the host's git status and git log
// then finish; one left on the host (a killed launcher's) refuses the next launch,
// naming it (attack review 33 F5: before, rc 0, no note, and git status hung in open).
func TestGitTreeFIFORemoved(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, mode := range []string{"readonly", "commit"} {
			t.Run(mode, func(t *testing.T) {
				s := newSandbox(t, c)
				s.newRepo(s.ws, "user")
				var flags []string
				if mode == "commit" {
					flags = []string{"--policy", s.commitPolicy()}
				}
				r := s.sh(flags, "set -e; mkfifo .gitignore .mailmap .gitmodules; mkdir -p sub/deeper; mkfifo sub/.gitattributes sub/deeper/.gitignore sub/pipe; ln -s ../pipe sub/deeper/.gitattributes")
				mustSucceed(t, r, "planting FIFOs")
				for _, rel := range []string{".gitignore", ".mailmap", ".gitmodules", "sub/.gitattributes", "sub/deeper/.gitignore", "sub/deeper/.gitattributes"} {
					if _, err := os.Lstat(filepath.Join(s.ws, rel)); err == nil {
						t.Errorf("%s is still there after the run\n%v", rel, r)
					}
					if !strings.Contains(r.stderr, filepath.Join(s.ws, rel)) {
						t.Errorf("no note names %s\n%v", rel, r)
					}
				}
				if _, err := os.Lstat(filepath.Join(s.ws, "sub", "pipe")); err != nil {
					t.Errorf("a FIFO at another name was removed: %v", err)
				}
				for _, args := range [][]string{{"status", "--porcelain"}, {"log", "-1", "--format=%s"}, {"shortlog", "-s", "HEAD"}} {
					if out, err := s.hostGitTimed(s.ws, args...); err != nil {
						t.Errorf("host git %v after the run: %v\n%s", args, err, out)
					}
				}
				// a FIFO left there (as by a launcher killed before its removal): the next
				// launch is refused, naming it, and runs nothing
				fifo := filepath.Join(s.ws, "sub", ".gitignore")
				must(t, syscall.Mkfifo(fifo, 0o644))
				s.chown(fifo)
				r = s.sh(flags, "touch ran")
				if r.code != 125 || !strings.Contains(r.stderr, fifo) || !strings.Contains(r.stderr, "a FIFO") {
					t.Errorf("a launch with a FIFO .gitignore there: want exit 125 naming it\n%v", r)
				}
				if _, err := os.Lstat(filepath.Join(s.ws, "ran")); err == nil {
					t.Error("the refused launch ran its command")
				}
			})
		}
	})
}

// TestGitCommitSparseIndexMovedAside: a command commits a change, puts the file back,
// and installs a sparse index (git sparse-checkout --sparse-index in a scratch clone)
// whose sparse directory names its commit's tree; the index is moved aside, so the
// host's git status is not clean and nothing under src/ carries the skip-worktree bit
// (attack review 33 F7: before, the skip-worktree bit was cleared on src/ only, and the
// host's git expanded it with every file under it hidden: git status clean, git diff
// HEAD empty while HEAD:src/run.sh differed from the file).
func TestGitCommitSparseIndexMovedAside(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "user")
		s.writeWS("src/run.sh", "echo good\n", 0o644)
		s.hostGit(s.ws, "add", "src/run.sh")
		s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-qm", "run")
		r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e
echo 'echo EVIL' > src/run.sh; git add src/run.sh; git `+gitID+` commit -qm tidy; echo 'echo good' > src/run.sh
git clone -q "$PWD" /tmp/s; cd /tmp/s; git sparse-checkout set --cone --sparse-index
git ls-files --sparse -s | grep -q '^040000 .*src/$'
cp .git/index "$OLDPWD/.git/index"`)
		mustSucceed(t, r, "installing a sparse index")
		if !strings.Contains(r.stderr, "sparse-directory entry") || !strings.Contains(r.stderr, "moved it aside") {
			t.Errorf("no note that the sparse index was moved aside\n%v", r)
		}
		for _, args := range [][]string{{"status", "--porcelain"}, {"diff", "HEAD", "--stat"}} {
			if out, err := s.hostGitTimed(s.ws, args...); err != nil || strings.TrimSpace(out) == "" {
				t.Errorf("host git %v shows nothing (%v) while HEAD:src/run.sh is the command's\n%v", args, err, r)
			}
		}
		if ls, _ := s.hostGitTimed(s.ws, "ls-files", "-v"); strings.Contains(ls, "S src/") {
			t.Errorf("git ls-files -v shows a hidden file under src/:\n%s", ls)
		}
	})
}

// TestGitCommitTagsPutBack: tags that existed at launch, one loose and one packed, are
// put back after a commit-mode command moved them (git tag -f) or deleted one, each
// named in a note; a tag the command made is left (attack review 33 F11: before, the
// host's git rev-parse v1.0 gave the command's commit, with no reflog and no note).
func TestGitCommitTagsPutBack(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "user")
		s.hostGit(s.ws, "tag", "v1.0")
		s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "tag", "-a", "-m", "annotated", "rel/v2")
		s.hostGit(s.ws, "pack-refs", "--all")
		s.hostGit(s.ws, "tag", "v3")
		want := map[string]string{}
		for _, tag := range []string{"v1.0", "rel/v2", "v3"} {
			out, err := s.hostGitOut(s.ws, "rev-parse", "refs/tags/"+tag)
			must(t, err)
			want[tag] = strings.TrimSpace(out)
		}
		r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e
c=$(git `+gitID+` commit-tree -p v1.0 -m "release 1.0" $(git mktree </dev/null))
git tag -f v1.0 $c; git tag -f v3 $c; git tag -d rel/v2; git tag mine $c; git pack-refs --all`)
		mustSucceed(t, r, "moving tags")
		for tag, id := range want {
			if got, err := s.hostGitOut(s.ws, "rev-parse", "refs/tags/"+tag); err != nil || strings.TrimSpace(got) != id {
				t.Errorf("host git rev-parse %s = %q (%v), want %s as at launch\n%v", tag, got, err, id, r)
			}
			if !strings.Contains(r.stderr, "put back as at launch the tag "+tag+" ") {
				t.Errorf("no note names the tag %s\n%v", tag, r)
			}
		}
		if _, err := s.hostGitOut(s.ws, "rev-parse", "--verify", "-q", "refs/tags/mine"); err != nil {
			t.Errorf("the command's own new tag is gone\n%v", r)
		}
		if out, err := s.hostGitOut(s.ws, "fsck", "--no-dangling"); err != nil {
			t.Errorf("git fsck after the tags were put back: %v\n%s", err, out)
		}
	})
}

// TestGitCommitNotesQuoted: a file name and pack names holding terminal escapes and a
// newline reach gosbx's notes and its pack WARNING quoted: stderr holds no ESC, BEL or
// a line the command forged (attack review 33 F10: the index-bit note printed the
// name raw, the WARNING the pack names).
func TestGitCommitNotesQuoted(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "user")
		r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e
n=$(printf 'evil\033]0;PWNED\007\033[31mRED\ngosbx: note: forged')
echo x > "$n"; git add -- "$n"; git update-index --skip-worktree -- "$n"
p=$(printf '.git/objects/pack/pack-\033]0;T2\007\033[32mGREEN\ngosbx: note: forged2')
echo junk > "$p.pack"; echo junk > "$p.idx"`)
		mustSucceed(t, r, "planting names")
		if strings.ContainsAny(r.stderr, "\x1b\x07") {
			t.Errorf("stderr holds a terminal escape: %q", r.stderr)
		}
		for _, l := range strings.Split(r.stderr, "\n") {
			if strings.HasPrefix(l, "gosbx: note: forged") {
				t.Errorf("the command forged a note line: %q\n%q", l, r.stderr)
			}
		}
		if !strings.Contains(r.stderr, "skip-worktree") || !strings.Contains(r.stderr, "WARNING: pack files") {
			t.Errorf("the notes are missing:\n%q", r.stderr)
		}
	})
}

// TestGitTreeFIFORemovedSession: in a session, a FIFO .gitignore a command leaves is
// removed once it ends, with a note in its output, and the next request runs; one
// put there between requests (a background process's) refuses the request, naming it
// (attack review 33 F5).
func TestGitTreeFIFORemovedSession(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.newRepo(e.ws, "user")
		e.start("f5")
		r := e.in("f5", nil, "mkfifo .gitignore")
		mustSucceed(t, r, "mkfifo in a session")
		fifo := filepath.Join(e.ws, ".gitignore")
		if _, err := os.Lstat(fifo); err == nil || !strings.Contains(r.stderr, fifo) {
			t.Errorf("the FIFO is there (%v) or no note names it\n%v", err, r)
		}
		if out, err := e.hostGitTimed(e.ws, "status", "--porcelain"); err != nil {
			t.Errorf("host git status after the request: %v\n%s", err, out)
		}
		mustSucceed(t, e.in("f5", nil, "true"), "the next request")
		must(t, syscall.Mkfifo(fifo, 0o644))
		e.chown(fifo)
		if r := e.in("f5", nil, "true"); r.code != 125 || !strings.Contains(r.stderr, fifo) {
			t.Errorf("a request with a FIFO .gitignore there: want 125 naming it\n%v", r)
		}
	})
}
