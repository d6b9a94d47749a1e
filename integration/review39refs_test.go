package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tests of attack review 39's packed-refs findings F2 and F3 (git: commit, one-shot).

// TestGitCommitPackedNulName: a packed-refs line a commit-mode command appends whose
// name holds a NUL byte ("<C> refs/tags/v1\0<C>"; git lists it as a second v1, but
// its lookup never finds it) is removed after the run, and the next run (a command
// that does nothing) leaves the user's tag as it was, with no "put back" note (attack
// review 39 F2: the line outlived the run, and gosbx's launch list, NUL-separated,
// read it back as v1 = C and wrote C over the user's tag).
func TestGitCommitPackedNulName(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, tail := range []string{`$C`, `zz`} {
			s := newSandbox(t, c)
			s.newRepo(s.ws, "c1")
			s.hostGit(s.ws, "tag", "v1")
			s.hostGit(s.ws, "pack-refs", "--all")
			was := s.revParse("v1")
			r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e; `+evilCommit+`
printf "%s refs/tags/v1\0%s\n" $C "`+tail+`" >> .git/packed-refs
printf "%s refs/remotes/origin/x\0y\n" $C >> .git/packed-refs`)
			mustSucceed(t, r, "the plant")
			evil := strings.TrimSpace(r.stdout)
			out, err := s.hostGitOut(s.ws, "for-each-ref", "--format=%(objectname) %(refname)", "refs/tags", "refs/remotes")
			if err != nil || out != was+" refs/tags/v1\n" {
				t.Errorf("tail %s: after the run for-each-ref lists\n%s(%v), want v1 once with the launch value %s (the command's commit %s)\n%v", tail, out, err, was, evil, r)
			}
			if b, err := os.ReadFile(filepath.Join(s.ws, ".git", "packed-refs")); err != nil || strings.ContainsRune(string(b), 0) {
				t.Errorf("tail %s: packed-refs after the run holds a NUL byte (%v):\n%q", tail, err, b)
			}
			if !strings.Contains(r.stderr, "holds a NUL byte") {
				t.Errorf("tail %s: no note says the line was removed\n%v", tail, r)
			}
			r = s.sh([]string{"--policy", s.commitPolicy()}, `true`)
			mustSucceed(t, r, "the second run")
			if now := s.revParse("v1"); now != was {
				t.Errorf("tail %s: after a second run v1 is %q, want as at launch %q (the command's commit %s)\n%v", tail, now, was, evil, r)
			}
			if strings.Contains(r.stderr, "put back") {
				t.Errorf("tail %s: the second run, which did nothing, says it put something back\n%v", tail, r)
			}
		}
	})
}

// TestGitCommitPackedOtherSeparator: packed-refs lines a commit-mode command adds with
// a tab or a CR between the object id and the name (git 2.39 reads both as a ref) are
// guarded as any other: a second line of a launch tag is removed and the tag left as at
// launch, a replace ref or remote-tracking ref removed (before, gosbx cut at a space
// only and kept such lines).
func TestGitCommitPackedOtherSeparator(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "c1")
		s.hostGit(s.ws, "tag", "v1")
		s.hostGit(s.ws, "pack-refs", "--all")
		was := s.revParse("v1")
		r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e; `+evilCommit+`
H=$(git rev-parse HEAD)
{ head -1 .git/packed-refs; grep heads .git/packed-refs; printf "%s\trefs/remotes/origin/x\n%s\rrefs/replace/%s\n%s\trefs/tags/v1\n" $C $C $H $C; grep -v heads .git/packed-refs | tail -n +2; } > /tmp/p
cat /tmp/p > .git/packed-refs`)
		mustSucceed(t, r, "the plant")
		evil := strings.TrimSpace(r.stdout)
		out, err := s.hostGitOut(s.ws, "for-each-ref", "--format=%(objectname) %(refname)", "refs/tags", "refs/remotes", "refs/replace")
		if err != nil || out != was+" refs/tags/v1\n" {
			t.Errorf("after the run for-each-ref lists\n%s(%v), want v1 once with the launch value %s (the command's commit %s)\n%v", out, err, was, evil, r)
		}
		if now := s.revParse("v1"); now != was {
			t.Errorf("after the run v1 is %q, want as at launch %q\n%v", now, was, r)
		}
	})
}

// TestGitCommitPackedNulNameAtLaunch: a repository whose packed-refs already holds a
// line whose name holds a NUL byte (no git writes one) is refused at launch (125),
// the message naming the cause: gosbx cannot say what git reads for it.
func TestGitCommitPackedNulNameAtLaunch(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "c1")
		s.hostGit(s.ws, "tag", "v1")
		s.hostGit(s.ws, "pack-refs", "--all")
		was := s.revParse("v1")
		p := filepath.Join(s.ws, ".git", "packed-refs")
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(was + " refs/tags/v1\x00" + strings.Repeat("0", 40) + "\n")
		f.Close()
		r := s.sh([]string{"--policy", s.commitPolicy()}, `true`)
		if r.code != 125 || !strings.Contains(r.stderr, "NUL byte") {
			t.Errorf("want 125 with a message naming the NUL byte\n%v", r)
		}
		if now := s.revParse("v1"); now != was {
			t.Errorf("after a refused launch v1 is %q, want %q\n%v", now, was, r)
		}
	})
}

// TestGitCommitManyTags: a repository git packed with more tags than gosbx keeps
// (100 000) is refused with a message naming that bound, not a fault of the file
// (attack review 39 F3: the message advised deleting duplicate or unsorted lines).
func TestGitCommitManyTags(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "c1")
		a := s.revParse("HEAD")
		var b strings.Builder
		b.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
		for i := 1; i <= 100001; i++ {
			b.WriteString(a + " refs/tags/t" + strings.Repeat("0", 9-len(itoa(i))) + itoa(i) + "\n")
		}
		p := filepath.Join(s.ws, ".git", "packed-refs")
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chown(p, c.uid, c.gid)
		s.hostGit(s.ws, "pack-refs", "--all") // the file as git itself writes it
		r := s.sh([]string{"--policy", s.commitPolicy()}, `true`)
		if r.code != 125 || !strings.Contains(r.stderr, "more than 100000 tags") || strings.Contains(r.stderr, "sorted") {
			t.Errorf("want 125 with a message naming the bound of 100000 tags, and no advice about the file's order\n%v", r)
		}
	})
}
