package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tests of attack review 36's packed-refs findings F3-F5 (git: commit, one-shot).

// evilCommit is a shell line, run in the workspace, that sets C to a new commit whose
// tracked.txt says EVIL (not on any branch).
const evilCommit = `B=$(echo EVIL | git hash-object -w --stdin) && T=$(printf "100644 blob %s\ttracked.txt\n" $B | git mktree) && C=$(git -c user.name=m -c user.email=m@m commit-tree $T -p HEAD -m fix) && echo $C`

// revParse returns what the host's git resolves each of names to (stderr's ambiguity
// warnings dropped).
func (s *sandbox) revParse(names ...string) string {
	s.t.Helper()
	out, err := s.hostGitOut(s.ws, append([]string{"rev-parse"}, names...)...)
	if err != nil {
		s.t.Fatalf("host git rev-parse %v: %v\n%s", names, err, out)
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "warning:") {
			ids = append(ids, l)
		}
	}
	return strings.Join(ids, " ")
}

// TestGitCommitPackedTopLevelNames: packed-refs lines a commit-mode command adds for
// names outside refs/ ("main", "origin/main", "v1"), which git's lookup finds as
// $GIT_DIR/<name> before the branch, remote-tracking ref and tag, are removed after
// the run: the host's git resolves each name as at launch (attack review 36 F3:
// before, only names under refs/ were guarded, and `git reset --hard origin/main` took
// the command's commit).
func TestGitCommitPackedTopLevelNames(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "c1")
		s.hostGit(s.ws, "update-ref", "refs/remotes/origin/main", "HEAD")
		s.hostGit(s.ws, "remote", "add", "origin", filepath.Join(s.base, "nowhere"))
		s.hostGit(s.ws, "tag", "v1")
		s.hostGit(s.ws, "pack-refs", "--all")
		was := s.revParse("main", "origin/main", "v1")
		// sorted as git sorts (by bytes): main and origin/main before refs/, v1 after
		r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e; `+evilCommit+`
{ head -1 .git/packed-refs; printf "%s main\n%s origin/main\n" $C $C; tail -n +2 .git/packed-refs; echo "$C v1"; } > /tmp/p
cat /tmp/p > .git/packed-refs`)
		mustSucceed(t, r, "the plant")
		evil := strings.TrimSpace(r.stdout)
		if now := s.revParse("main", "origin/main", "v1"); now != was {
			t.Errorf("after the run main, origin/main, v1 are %q, want as at launch %q (the command's commit %s)\n%v", now, was, evil, r)
		}
		b, err := os.ReadFile(filepath.Join(s.ws, ".git", "packed-refs"))
		if err != nil || strings.Contains(string(b), evil) {
			t.Errorf("packed-refs after the run names the command's commit (%v):\n%s", err, b)
		}
	})
}

// TestGitCommitPackedTagTwice: a launch tag a commit-mode command puts on two lines of
// packed-refs (the command's commit first, or sorted before and the launch line last
// after other lines) is written back loose with its launch value and its packed lines
// removed: git rev-parse and for-each-ref give the launch value, once (attack review
// 36 F4: before, the cleanup read the last line, git the first, and the tag stayed
// moved).
func TestGitCommitPackedTagTwice(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, plant := range []string{
			`{ head -1 .git/packed-refs; grep heads .git/packed-refs; echo "$C refs/tags/v1"; echo "$L refs/tags/v1"; } > /tmp/p`,
			`{ head -1 .git/packed-refs; grep heads .git/packed-refs; echo "$C refs/tags/v1"; echo "$C refs/tags/zz1"; echo "$C refs/tags/zz2"; echo "$L refs/tags/v1"; } > /tmp/p`,
		} {
			s := newSandbox(t, c)
			s.newRepo(s.ws, "c1")
			s.hostGit(s.ws, "tag", "v1")
			s.hostGit(s.ws, "pack-refs", "--all")
			was := s.revParse("v1")
			r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e; `+evilCommit+`; L=$(git rev-parse v1)
`+plant+`
cat /tmp/p > .git/packed-refs`)
			mustSucceed(t, r, "the plant")
			if now := s.revParse("v1"); now != was {
				t.Errorf("after %q v1 is %q, want as at launch %q\n%v", plant, now, was, r)
			}
			out, err := s.hostGitOut(s.ws, "for-each-ref", "--format=%(objectname) %(refname)", "refs/tags/v1")
			if err != nil || out != was+" refs/tags/v1\n" {
				t.Errorf("after %q for-each-ref refs/tags/v1 lists\n%s(%v), want once with the launch value %s\n%v", plant, out, err, was, r)
			}
			if !strings.Contains(r.stderr, "put back as at launch the tag") {
				t.Errorf("after %q no note says the tag was put back\n%v", plant, r)
			}
		}
	})
}

// TestGitCommitPackedPeeledLines: the peeled lines ("^<oid>") of launch tags that a
// commit-mode command rewrites in packed-refs do not survive the run: git describe,
// show-ref -d and for-each-ref %(*objectname) peel the tags to their own commits
// (attack review 36 F5: before, only the tag lines were compared, and git describe
// named v1 for a commit that is not v1).
func TestGitCommitPackedPeeledLines(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "c1")
		s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "tag", "-a", "v1", "-m", "v1")
		s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "c2")
		s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "tag", "-a", "v2", "-m", "v2")
		s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "c3")
		s.hostGit(s.ws, "pack-refs", "--all")
		describe := func() string {
			out, err := s.hostGitOut(s.ws, "describe")
			if err != nil {
				t.Fatalf("git describe: %v\n%s", err, out)
			}
			return out
		}
		wasDescribe := describe()
		wasPeeled, err := s.hostGitOut(s.ws, "show-ref", "-d", "--tags")
		if err != nil {
			t.Fatal(err)
		}
		r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e; H=$(git rev-parse HEAD)
V1=$(git rev-parse 'v1^{commit}'); V2=$(git rev-parse 'v2^{commit}')
sed "s/^\^$V1/^$H/; s/^\^$V2/^$H/" .git/packed-refs > /tmp/p
cat /tmp/p > .git/packed-refs
grep -c "^\^$H" .git/packed-refs`)
		mustSucceed(t, r, "the plant")
		if strings.TrimSpace(r.stdout) != "2" {
			t.Fatalf("the plant did not rewrite both peeled lines\n%v", r)
		}
		if now := describe(); now != wasDescribe {
			t.Errorf("after the run git describe says %q, want as at launch %q\n%v", now, wasDescribe, r)
		}
		if now, err := s.hostGitOut(s.ws, "show-ref", "-d", "--tags"); err != nil || now != wasPeeled {
			t.Errorf("after the run show-ref -d --tags is\n%s(%v), want as at launch\n%s%v", now, err, wasPeeled, r)
		}
	})
}

// TestGitCommitPackRefsLooseTags: a commit-mode command's git pack-refs --all, which
// packs the user's loose tags with peeled lines gosbx cannot vouch for, leaves the tags
// as they were without a note: git describe and show-ref -d as at launch (the peeled
// lines are dropped and git peels the objects itself).
func TestGitCommitPackRefsLooseTags(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "c1")
		s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "tag", "-a", "v1", "-m", "v1")
		s.hostGit(s.ws, "tag", "light")
		s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "c2")
		was, err := s.hostGitOut(s.ws, "show-ref", "-d", "--tags")
		if err != nil {
			t.Fatal(err)
		}
		wasDescribe, _ := s.hostGitOut(s.ws, "describe")
		r := s.sh([]string{"--policy", s.commitPolicy()}, `git pack-refs --all && grep -c '^\^' .git/packed-refs`)
		mustSucceed(t, r, "git pack-refs --all")
		if strings.Contains(r.stderr, "put back") {
			t.Errorf("a note after git pack-refs --all\n%v", r)
		}
		if now, err := s.hostGitOut(s.ws, "show-ref", "-d", "--tags"); err != nil || now != was {
			t.Errorf("after the run show-ref -d --tags is\n%s(%v), want\n%s", now, err, was)
		}
		if now, _ := s.hostGitOut(s.ws, "describe"); now != wasDescribe {
			t.Errorf("after the run git describe says %q, want %q", now, wasDescribe)
		}
	})
}

// TestGitCommitAmbiguousTagsRefused: a repository whose packed-refs names a tag twice
// (git reads either line) is refused in commit mode (125, naming the file), as gosbx
// cannot know which value it would have to put back.
func TestGitCommitAmbiguousTagsRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "c1")
		s.hostGit(s.ws, "tag", "v1")
		s.hostGit(s.ws, "pack-refs", "--all")
		p := filepath.Join(s.ws, ".git", "packed-refs")
		b, err := os.ReadFile(p)
		must(t, err)
		line := b[strings.Index(string(b), "\n")+1:]
		line = line[strings.Index(string(line), "\n")+1:] // the tag's line, after the branch's
		must(t, os.WriteFile(p, append(b, line...), 0o644))
		r := s.sh([]string{"--policy", s.commitPolicy()}, `true`)
		if r.code != 125 || !strings.Contains(r.stderr, "packed-refs") || !strings.Contains(r.stderr, "refs/tags/v1") {
			t.Errorf("a packed-refs with the tag twice: want 125 naming it\n%v", r)
		}
	})
}
