package integration

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Paths named by the caller or planted in the workspace: symlinks as binds,
// credential directories, masked system secrets.

// Symlinks in the workspace to a sibling directory and to /etc, named as --ro
// and --rw binds: a bind is made at the canonical target only (nothing new in
// the host workspace), --ro keeps the sibling unchanged, --rw writes only where
// it points (what the caller granted), and --rw through the /etc link is refused.
func TestSymlinkBinds(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		sib := filepath.Join(s.base, "sibling")
		must(t, os.Mkdir(sib, 0o755))
		s.chown(sib) // writable by the caller on the host: only the sandbox stops a write
		s.writeWS("keep.txt", "keep\n", 0o644)
		must(t, os.WriteFile(filepath.Join(sib, "f"), []byte("orig\n"), 0o666))
		s.chown(filepath.Join(sib, "f"))
		linkSib := filepath.Join(s.ws, "link-sib")
		linkEtc := filepath.Join(s.ws, "link-etc")
		must(t, os.Symlink("../sibling", linkSib))
		must(t, os.Symlink("/etc", linkEtc))
		s.chown(linkSib)
		s.chown(linkEtc)
		probe := "gosbx-it-probe-" + s.id
		t.Cleanup(func() { os.Remove("/etc/" + probe) })
		wsBefore := treeDigest(t, s.ws)
		sibBefore := treeDigest(t, sib)

		// --ro through the link: readable under both names, writable under neither.
		r := s.sh([]string{"--ro", linkSib, "--ro", linkEtc}, `cat link-sib/f && echo READ-OK
(echo pwned >> link-sib/f) 2>/dev/null && echo WROTE-link
(echo pwned >> "$1/f") 2>/dev/null && echo WROTE-sibling
touch "link-sib/$2" 2>/dev/null && echo CREATED-sibling
touch "link-etc/$2" 2>/dev/null && echo CREATED-etc
rm -f link-sib 2>/dev/null; ln -s /tmp link-sib 2>/dev/null; exit 0`, sib, probe)
		mustSucceed(t, r, "--ro through workspace symlinks")
		if !strings.Contains(r.stdout, "orig\nREAD-OK") {
			t.Errorf("--ro %s: the sibling is not readable through the link:\n%v", linkSib, r)
		}
		for _, bad := range []string{"WROTE", "CREATED"} {
			if strings.Contains(r.stdout, bad) {
				t.Errorf("--ro through a symlink allowed a write (%s):\n%s", bad, r.stdout)
			}
		}
		if d := digestDiff(sibBefore, treeDigest(t, sib)); len(d) > 0 {
			t.Errorf("--ro through a symlink: the sibling changed on the host: %v", d)
		}
		if _, err := os.Lstat("/etc/" + probe); err == nil {
			t.Errorf("a file was created in the host's /etc through the workspace link")
		}
		// The command may replace its own symlink (the workspace is its), but gosbx
		// itself must not have added anything: restore, then compare.
		_ = os.Remove(linkSib)
		must(t, os.Symlink("../sibling", linkSib))
		s.chown(linkSib)
		if d := digestDiff(wsBefore, treeDigest(t, s.ws)); len(d) > 0 {
			t.Errorf("--ro through a symlink left entries in the host workspace: %v", d)
		}

		// --rw through the link: the bind is the canonical sibling; writes land
		// there and nowhere else.
		r = s.sh([]string{"--rw", linkSib}, `echo via-link > link-sib/new && echo via-path > "$1/new2" && echo RW-OK
grep -F " $1 " /proc/self/mountinfo | sed 's/^/MOUNT /'
grep -F " $(pwd)/link-sib " /proc/self/mountinfo | sed 's/^/LINKMOUNT /'
exit 0`, sib)
		mustSucceed(t, r, "--rw through a workspace symlink")
		if !strings.Contains(r.stdout, "RW-OK") {
			t.Errorf("--rw %s: the granted target is not writable:\n%v", linkSib, r)
		}
		if !strings.Contains(r.stdout, "MOUNT ") {
			t.Errorf("--rw %s: no bind at the canonical target %s:\n%s", linkSib, sib, r.stdout)
		}
		if strings.Contains(r.stdout, "LINKMOUNT") {
			t.Errorf("--rw %s: a bind was made at the link's own path:\n%s", linkSib, r.stdout)
		}
		if b, _ := os.ReadFile(filepath.Join(sib, "new")); string(b) != "via-link\n" {
			t.Errorf("--rw through the link: write did not land in the canonical target: %q", b)
		}
		if l, err := os.Readlink(linkSib); err != nil || l != "../sibling" {
			t.Errorf("the workspace link changed on the host: %q %v", l, err)
		}
		if d := digestDiff(wsBefore, treeDigest(t, s.ws)); len(d) > 0 {
			t.Errorf("--rw through a symlink left entries in the host workspace: %v", d)
		}

		// --rw through the /etc link is refused like --rw /etc.
		m := s.marker("rwetc")
		r = s.run("--rw", linkEtc, "--", "/usr/bin/touch", m)
		wantRefused(t, "--rw "+linkEtc, r, m, "/etc")
	})
}

// A .git that is a symlink to a sibling directory: in either git mode the
// sibling is neither exposed nor written (gosbx creates nothing there either).
func TestGitSymlinkToSibling(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		sib := filepath.Join(s.base, "sibling")
		must(t, os.Mkdir(sib, 0o755))
		s.chown(sib)
		must(t, os.WriteFile(filepath.Join(sib, "canary"), []byte("canary-"+s.id), 0o644))
		must(t, os.Symlink("../sibling", filepath.Join(s.ws, ".git")))
		s.chown(filepath.Join(s.ws, ".git"))
		before := treeDigest(t, sib)
		for _, flags := range [][]string{nil, {"--policy", s.commitPolicy()}} {
			r := s.sh(flags, `cat .git/canary 2>/dev/null; (echo x > .git/hooks-new) 2>/dev/null && echo WROTE
mkdir -p .git/hooks 2>/dev/null && (echo x > .git/hooks/post-commit) 2>/dev/null && echo WROTE-hook
exit 0`)
			// A .git that is a symlink cannot be protected in place (the command could
			// replace it): gosbx refuses to start (125) and nothing runs.
			if r.code != 125 || !strings.Contains(r.stderr, "symlink") {
				t.Errorf("%v: a .git symlink: want 125 naming the symlink\n%v", flags, r)
			}
			if strings.Contains(r.stdout, "canary-") || strings.Contains(r.stdout, "WROTE") {
				t.Errorf("%v: a .git symlink to a sibling exposed it:\n%s", flags, r.stdout)
			}
		}
		if d := digestDiff(before, treeDigest(t, sib)); len(d) > 0 {
			t.Errorf("the sibling behind a .git symlink changed on the host: %v", d)
		}
	})
}

// A workspace or read-write bind that is, holds or lies in a credential
// directory of the caller's home ($HOME points at a temporary home with .ssh and
// .aws), or that is the home itself, is refused with 125 and runs nothing; a
// project directory in the same home runs.
func TestCredentialDirsRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		home := filepath.Join(s.base, "home")
		dots := filepath.Join(s.base, "dotfiles")
		for _, d := range []string{home, home + "/.ssh", home + "/.ssh/inner", home + "/.aws", home + "/proj", dots, dots + "/gnupg"} {
			must(t, os.MkdirAll(d, 0o755))
			s.chown(d)
		}
		// ~/.gnupg is a symlink into a dotfiles directory: that directory holds it.
		must(t, os.Symlink(dots+"/gnupg", home+"/.gnupg"))
		env := []string{"HOME=" + home}
		cases := []struct {
			name  string
			args  []string
			ws    string
			wants []string
		}{
			{"home itself", nil, home, []string{"home directory"}},
			{"inside ~/.ssh", nil, home + "/.ssh/inner", []string{home + "/.ssh", "filesystem.credentials"}},
			{"~/.ssh", nil, home + "/.ssh", []string{"filesystem.credentials"}},
			{"holds ~/.gnupg", nil, dots, []string{dots + "/gnupg", "filesystem.credentials"}},
			{"--rw ~/.aws", []string{"--rw", home + "/.aws"}, home + "/proj", []string{home + "/.aws", "filesystem.credentials"}},
		}
		for i, tc := range cases {
			m := filepath.Join(tc.ws, "gosbx-it-ran-"+s.id)
			if tc.args != nil {
				m = filepath.Join(home, ".aws", "gosbx-it-ran-"+s.id)
			}
			args := append(append([]string{"exec", "--workspace", tc.ws}, tc.args...), "--", "/bin/sh", "-c", `touch "$1"; touch "$2"`, "_",
				filepath.Join(tc.ws, "gosbx-it-ran-"+s.id), m)
			r := s.rawRunEnv(env, args...)
			wantRefused(t, tc.name, r, m, tc.wants...)
			if _, err := os.Lstat(filepath.Join(tc.ws, "gosbx-it-ran-"+s.id)); err == nil {
				t.Errorf("case %d %s: the command ran", i, tc.name)
			}
		}
		ok := filepath.Join(home, "proj", "ran")
		r := s.rawRunEnv(env, "exec", "--workspace", home+"/proj", "--", "/usr/bin/touch", ok)
		mustSucceed(t, r, "a project directory in the same home")
		if _, err := os.Stat(ok); err != nil {
			t.Errorf("the project in the home did not run: %v", err)
		}
	})
}

// /etc/shadow and /etc/gshadow are empty inside for a root caller (who could read
// them on the host), and unchanged on the host.
func TestShadowMaskedForRoot(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	files := []string{"/etc/shadow", "/etc/gshadow"}
	sums := map[string][32]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 {
			t.Skipf("%s is missing or empty on the host: nothing to hide", f)
		}
		sums[f] = sha256.Sum256(b)
	}
	r := s.sh(nil, `for f in "$@"; do echo "$f[$(cat "$f" 2>/dev/null | head -c 64)]"; (echo 'x::0:0::/:/bin/sh' >> "$f") 2>/dev/null; done; exit 0`, files...)
	mustSucceed(t, r, "shadow probes")
	for _, f := range files {
		if !strings.Contains(r.stdout, f+"[]") {
			t.Errorf("%s is readable inside by a root caller:\n%s", f, r.stdout)
		}
		b, _ := os.ReadFile(f)
		if sha256.Sum256(b) != sums[f] {
			t.Errorf("%s changed on the host", f)
		}
	}
}
