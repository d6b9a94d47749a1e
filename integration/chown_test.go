package integration

// Trial finding (issue 19): a root caller's `tar xf` of an archive of uid 1000's files
// exited 2 ("Cannot change ownership to uid 1000: Invalid argument": the id is not
// mapped in the sandbox's user namespace). The filter answers a chown to an unmapped id
// with 0 and no effect (seccomp.ForeignOwnerRules): the files stay the sandbox user's,
// read from the host, never uid 1000's.

import (
	"os/exec"
	"path/filepath"
	"testing"
)

func TestForeignOwnerTar(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		tarPath := filepath.Join(s.ws, "own.tar")
		script := `
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    d = tarfile.TarInfo("src"); d.type = tarfile.DIRTYPE; d.mode = 0o755; d.uid = d.gid = 1000; t.addfile(d)
    data = b"hello\n"
    f = tarfile.TarInfo("src/file"); f.mode = 0o644; f.size = len(data); f.uid = 1000; f.gid = 1000
    t.addfile(f, io.BytesIO(data))
    l = tarfile.TarInfo("src/link"); l.type = tarfile.SYMTYPE; l.linkname = "file"; l.uid = l.gid = 1000; t.addfile(l)
`
		out, err := exec.Command(python, "-c", script, tarPath).CombinedOutput()
		if err != nil {
			t.Fatalf("making the archive: %v\n%s", err, out)
		}
		s.chown(tarPath)
		r := s.sh(nil, "tar xf own.tar && touch ref")
		if r.code != 0 {
			t.Fatalf("tar xf of uid 1000's files: want exit 0\n%v", r)
		}
		// the sandbox user's host ids: those of a file it made without asking for an owner
		ru, rg := ownerOf(t, filepath.Join(s.ws, "ref"))
		for _, rel := range []string{"src", "src/file", "src/link"} {
			u, g := ownerOf(t, filepath.Join(s.ws, rel))
			if u == 1000 || g == 1000 {
				t.Errorf("host: %s is owned by %d:%d, the archive's ids", rel, u, g)
			}
			if u != ru || g != rg {
				t.Errorf("host: %s is owned by %d:%d, want the sandbox user's %d:%d", rel, u, g, ru, rg)
			}
		}
		wantContent(t, filepath.Join(s.ws, "src", "file"), "hello\n")
		// chown to the sandbox's own ids still reaches the kernel and works; an id
		// outside the map still has no effect when asked for directly
		r = s.sh(nil, "chown 0:0 src/file 2>&1; echo rc=$?; chown 1000 src/file; echo rc=$?")
		if c.uid == 0 && r.stdout != "rc=0\nrc=0\n" {
			t.Errorf("chown inside: %v", r)
		}
		if u, _ := ownerOf(t, filepath.Join(s.ws, "src", "file")); u != ru {
			t.Errorf("host: src/file is owned by %d after chown 1000 inside, want %d", u, ru)
		}
	})
}

// A policy's own rule on chown decides before the unmapped-owner rules (from an attack
// review: they were put first, and a policy's EPERM on chown never fired for root).
func TestForeignOwnerPolicyRuleWins(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		pol := s.writePolicy("nochown.yaml", "extends: agent\nseccomp:\n  rules:\n"+
			"    - {syscalls: [chown, fchown, lchown, fchownat], action: errno, errno: EACCES}\n")
		r := s.sh([]string{"--policy", pol}, "touch f; chown 1000:1000 f 2>/dev/null; echo rc=$?; chown $(id -u):$(id -g) f 2>/dev/null; echo rc=$?")
		if r.stdout != "rc=1\nrc=1\n" {
			t.Errorf("a policy refusing chown: want both chowns refused (rc=1 twice)\n%v", r)
		}
	})
}
