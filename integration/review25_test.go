package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Review 25's git findings, proved from the host: after the sandboxed command ran, the
// host's own git (status, submodule update) in the checkout the command attacked runs
// nothing the command planted (each planted script would create a marker file outside
// the workspace; the test asserts it is absent).

// plantFsmonitor is a shell function for the command: plant_fsm GITDIR MARKER writes a
// script into GITDIR/hooks that touches MARKER and sets it as GITDIR's core.fsmonitor;
// it prints PLANTED-GITDIR when both writes succeeded.
const plantFsmonitor = `plant_fsm() {
	printf '#!/bin/sh\ntouch %s\nexit 1\n' "$2" > "$1/hooks/fsm" 2>/dev/null && chmod +x "$1/hooks/fsm" &&
	git --git-dir="$1" config core.fsmonitor "$PWD/$1/hooks/fsm" 2>/dev/null && echo "PLANTED-$1"
	return 0
}
`

// submoduleGit runs host git with file:// submodules allowed and an identity.
func (s *sandbox) submoduleGit(dir string, args ...string) {
	s.t.Helper()
	s.hostGit(dir, append([]string{"-c", "protocol.file.allow=always", "-c", "user.name=h", "-c", "user.email=h@h"}, args...)...)
}

// noMarker fails the test when marker exists on the host (the host's git ran the
// command's script).
func noMarker(t *testing.T, marker, what string) {
	t.Helper()
	if _, err := os.Lstat(marker); err == nil {
		t.Errorf("%s ran the command's planted script (%s exists)", what, marker)
	}
}

// F1: a nested linked worktree's own submodule git dirs (.git/worktrees/<name>/modules/…,
// per worktree in git) are guarded under git: commit as .git/modules is: the command can
// neither set core.fsmonitor in one (deeper than the scan reaches: libs/x/sub in
// .worktrees/agent1), nor plant a whole git dir for a submodule not yet initialised there.
func TestGitReview25NestedWorktreeModules(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	src := filepath.Join(s.base, "subsrc")
	s.newRepo(src, "sub-commit")
	s.newRepo(s.ws, "super")
	s.submoduleGit(s.ws, "submodule", "add", "-q", src, "libs/x/sub")
	s.submoduleGit(s.ws, "submodule", "add", "-q", src, "late")
	s.submoduleGit(s.ws, "commit", "-q", "-m", "with submodules")
	s.hostGit(s.ws, "worktree", "add", "-q", "-b", "agent1", ".worktrees/agent1")
	s.submoduleGit(filepath.Join(s.ws, ".worktrees/agent1"), "submodule", "update", "--init", "-q", "libs/x/sub")
	modGD := filepath.Join(s.ws, ".git/worktrees/agent1/modules/libs/x/sub")
	if _, err := os.Stat(filepath.Join(modGD, "HEAD")); err != nil {
		t.Fatalf("git did not put the nested worktree's submodule git dir at %s: %v", modGD, err)
	}
	fsm, hook := filepath.Join(s.base, "PWNED-F1-fsm"), filepath.Join(s.base, "PWNED-F1-hook")
	r := s.sh([]string{"--policy", s.commitPolicy()}, plantFsmonitor+`
plant_fsm .git/worktrees/agent1/modules/libs/x/sub "$1"
# a whole git dir for the submodule not initialised in agent1, with a post-checkout hook
d=.git/worktrees/agent1/modules/late
if cp -r .git/modules/late "$d" 2>/dev/null; then
	printf '#!/bin/sh\ntouch %s\n' "$2" > "$d/hooks/post-checkout" 2>/dev/null && chmod +x "$d/hooks/post-checkout" && echo COPIED
fi
exit 0`, fsm, hook)
	mustSucceed(t, r, "the command")
	if strings.Contains(r.stdout, "PLANTED-") {
		t.Errorf("the command wrote a nested worktree's submodule git dir: %q", r.stdout)
	}
	// A mount cannot keep the command from adding an entry beside agent1's existing
	// submodule git dir: it is removed when the sandbox ends, and the next launch finds
	// nothing of the command's either.
	if _, err := os.Lstat(filepath.Join(s.ws, ".git/worktrees/agent1/modules/late")); err == nil {
		t.Errorf("the command's git dir for late survived the run (copied: %v)", strings.Contains(r.stdout, "COPIED"))
	}
	mustSucceed(t, s.run("--policy", s.commitPolicy(), "--", "true"), "the next launch")
	wt := filepath.Join(s.ws, ".worktrees/agent1")
	s.hostGitOut(wt, "status")
	noMarker(t, fsm, "the host's git status in .worktrees/agent1")
	s.hostGitOut(wt, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q", "late")
	noMarker(t, hook, "the host's git submodule update --init in .worktrees/agent1")
}

// F1, the workspace itself a linked worktree: its own submodule git dir
// (<repo>/.git/worktrees/<name>/modules/libs/a/b/x/sub, in the common dir bound
// read-write under git: commit) is guarded, its checkout deeper than the scan, and no
// git dir can be planted for a submodule not initialised there.
func TestGitReview25WorkspaceWorktreeModules(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	src, repo := filepath.Join(s.base, "subsrc"), filepath.Join(s.base, "mainrepo")
	s.newRepo(src, "sub-commit")
	s.newRepo(repo, "super")
	s.submoduleGit(repo, "submodule", "add", "-q", src, "libs/a/b/x/sub")
	s.submoduleGit(repo, "submodule", "add", "-q", src, "late")
	s.submoduleGit(repo, "commit", "-q", "-m", "with submodules")
	s.hostGit(repo, "worktree", "add", "-q", "-b", "wsbranch", s.ws)
	s.submoduleGit(s.ws, "submodule", "update", "--init", "-q", "libs/a/b/x/sub")
	name := filepath.Base(s.ws)
	wgd := filepath.Join(repo, ".git/worktrees", name)
	if _, err := os.Stat(filepath.Join(wgd, "modules/libs/a/b/x/sub/HEAD")); err != nil {
		t.Fatalf("no submodule git dir in %s: %v", wgd, err)
	}
	fsm, hook := filepath.Join(s.base, "PWNED-F1ws-fsm"), filepath.Join(s.base, "PWNED-F1ws-hook")
	r := s.sh([]string{"--policy", s.commitPolicy()}, plantFsmonitor+`
cd "$3" && plant_fsm "worktrees/$4/modules/libs/a/b/x/sub" "$1"
d="worktrees/$4/modules/late"
if cp -r modules/late "$d" 2>/dev/null; then
	printf '#!/bin/sh\ntouch %s\n' "$2" > "$d/hooks/post-checkout" 2>/dev/null && chmod +x "$d/hooks/post-checkout" && echo COPIED
fi
exit 0`, fsm, hook, filepath.Join(repo, ".git"), name)
	mustSucceed(t, r, "the command")
	if strings.Contains(r.stdout, "PLANTED-") {
		t.Errorf("the command wrote the workspace's submodule git dir: %q", r.stdout)
	}
	if _, err := os.Lstat(filepath.Join(wgd, "modules/late")); err == nil {
		t.Errorf("the command's git dir for late survived the run (copied: %v)", strings.Contains(r.stdout, "COPIED"))
	}
	mustSucceed(t, s.run("--policy", s.commitPolicy(), "--", "true"), "the next launch")
	s.hostGitOut(s.ws, "status")
	noMarker(t, fsm, "the host's git status in the workspace")
	s.hostGitOut(s.ws, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q", "late")
	noMarker(t, hook, "the host's git submodule update --init in the workspace")
}

// F4: a linked worktree deeper than the protected-path scan (.wt/team/a/agent9) has its
// .git file read-only under the default git: readonly too (the worktree record in
// .git/worktrees/agent9/gitdir names it), so the command cannot point it at a repository
// of its making whose core.fsmonitor the host's git status there would run.
func TestGitReview25DeepWorktreeDotGit(t *testing.T) {
	requireBinary(t)
	for _, mode := range []string{"readonly", "commit"} {
		t.Run(mode, func(t *testing.T) {
			s := newSandbox(t, rootCaller)
			s.newRepo(s.ws, "main")
			s.hostGit(s.ws, "worktree", "add", "-q", "-b", "agent9", ".wt/team/a/agent9")
			var flags []string
			if mode == "commit" {
				flags = []string{"--policy", s.commitPolicy()}
			}
			marker := filepath.Join(s.base, "PWNED-F4-"+mode)
			r := s.sh(flags, `git init -q "$PWD/.cache-x" || exit 1
printf '#!/bin/sh\ntouch %s\nexit 1\n' "$1" > .cache-x/fsm && chmod +x .cache-x/fsm
git -C .cache-x config core.fsmonitor "$PWD/.cache-x/fsm"
git -C .cache-x config core.worktree "$PWD/.wt/team/a/agent9"
(echo "gitdir: $PWD/.cache-x/.git" > .wt/team/a/agent9/.git) 2>/dev/null && echo REDIRECTED
exit 0`, marker)
			mustSucceed(t, r, "the command")
			if strings.Contains(r.stdout, "REDIRECTED") {
				t.Errorf("the deep worktree's .git file was writable")
			}
			s.hostGitOut(filepath.Join(s.ws, ".wt/team/a/agent9"), "status")
			noMarker(t, marker, "the host's git status in .wt/team/a/agent9")
		})
	}
}

// F3: a stale worktree record of another repository (its checkout deleted, not pruned)
// that names a path in the workspace: a .git file the command makes there, naming the
// record back, no longer gets that repository's git dir bound read-write on the next
// launch (given --ro, or not bound at all): it is bound read-only, so its refs stay as
// they were.
func TestGitReview25StaleWorktreeRecord(t *testing.T) {
	requireBinary(t)
	for _, ro := range []bool{true, false} {
		name := "unbound"
		if ro {
			name = "ro"
		}
		t.Run(name, func(t *testing.T) {
			s := newSandbox(t, rootCaller)
			s.newRepo(s.ws, "ws")
			r := filepath.Join(s.base, "r")
			s.newRepo(r, "r-commit")
			s.hostGit(r, "worktree", "add", "-q", "-b", "rwt", filepath.Join(s.ws, "rwt"))
			must(t, os.RemoveAll(filepath.Join(s.ws, "rwt")))
			flags := []string{"--policy", s.commitPolicy()}
			if ro {
				flags = append(flags, "--ro", r)
			}
			rec := filepath.Join(r, ".git/worktrees/rwt")
			mustSucceed(t, s.sh(flags, `mkdir rwt && echo "gitdir: $1" > rwt/.git`, rec), "the first launch")
			res := s.sh(flags, `(touch "$1/refs/heads/evil2") 2>/dev/null && echo WROTE-REF
(echo '#!/bin/sh' > "$2/HEAD") 2>/dev/null && echo WROTE-WTHEAD
exit 0`, filepath.Join(r, ".git"), rec)
			mustSucceed(t, res, "the second launch")
			if strings.Contains(res.stdout, "WROTE") {
				t.Errorf("the other repository's git dir was writable: %q", res.stdout)
			}
			if _, err := os.Lstat(filepath.Join(r, ".git/refs/heads/evil2")); err == nil {
				t.Error("refs/heads/evil2 exists in the other repository on the host")
			}
		})
	}
}

// clone's flags and mmap's fd are declared unsigned long, but the kernel uses their low
// 32 bits (lower_32_bits(clone_flags) in kernel/fork.c; fget's unsigned int fd): a
// user rule on them is compared on those bits, so high bits do not get past it
// (review 25 F2: clone(0x1200011|1<<32) forked past "clone arg0 eq 0x1200011").
const narrowedPy = `import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.syscall.argtypes = [ctypes.c_long] * 7
def res(r):
    return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]
for name, flags in (("clone", 0x1200011), ("clone_hi", 0x1200011 | 1 << 32)):
    r = libc.syscall(56, flags, 0, 0, 0, 0, 0)  # SIGCHLD|CLONE_CHILD_SETTID|CLONE_CHILD_CLEARTID as fork
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
    print(name, res(r), flush=True)
fd = os.open("/etc/hostname", os.O_RDONLY)
os.dup2(fd, 7)
for name, f in (("mmap", 7), ("mmap_hi", 7 | 1 << 32)):
    print(name, res(libc.syscall(9, 0, 4096, 1, 2, f, 0)), flush=True)  # PROT_READ, MAP_PRIVATE
`

func TestSeccompNarrowedArgs(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.writeWS("narrowed.py", narrowedPy, 0o644)
	pol := s.writePolicy("narrowed.yaml", "extends: agent\nseccomp:\n  rules:\n"+
		"    - {syscalls: [clone], action: errno, errno: EPERM, args: [{index: 0, op: eq, value: 0x1200011}]}\n"+
		"    - {syscalls: [mmap], action: errno, errno: EPERM, args: [{index: 4, op: eq, value: 7}]}\n")
	r := s.run("--policy", pol, "--", python, "narrowed.py")
	mustSucceed(t, r, "the probe")
	for _, want := range []string{"clone EPERM", "clone_hi EPERM", "mmap EPERM", "mmap_hi EPERM"} {
		if !strings.Contains(r.stdout, want+"\n") {
			t.Errorf("want %q:\n%v", want, r)
		}
	}
}
