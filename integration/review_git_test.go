package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Attacks of the second review on repository metadata, each proved from the host.

// A planted .git file plus a planted git dir with a commondir and a gitdir back-pointer
// (all of the command's making, in the workspace) does not bring another repository of
// the caller into the next sandbox, in either git mode.
func TestPlantedWorktreeLayout(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		victim := filepath.Join(s.base, "victim")
		s.newRepo(victim, "victim-"+s.id)
		before := treeDigest(t, filepath.Join(victim, ".git"))
		// What an earlier run could leave behind in its workspace.
		sub, gd := filepath.Join(s.ws, "sub"), filepath.Join(s.ws, "gd")
		for _, d := range []string{sub, gd} {
			must(t, os.MkdirAll(d, 0o755))
			s.chown(d)
		}
		for p, content := range map[string]string{
			filepath.Join(sub, ".git"):     "gitdir: " + gd + "\n",
			filepath.Join(gd, "HEAD"):      "ref: refs/heads/main\n",
			filepath.Join(gd, "commondir"): filepath.Join(victim, ".git") + "\n",
			filepath.Join(gd, "gitdir"):    filepath.Join(sub, ".git") + "\n",
		} {
			must(t, os.WriteFile(p, []byte(content), 0o644))
			s.chown(p)
		}
		for _, flags := range [][]string{nil, {"--policy", s.commitPolicy()}} {
			r := s.sh(flags, `cat "$1/.git/HEAD" 2>/dev/null && echo SAW-VICTIM
git --git-dir="$1/.git" update-ref refs/heads/main HEAD 2>/dev/null && echo WROTE-VICTIM
exit 0`, victim)
			if strings.Contains(r.stdout, "SAW-VICTIM") || strings.Contains(r.stdout, "WROTE-VICTIM") {
				t.Errorf("%v: a planted worktree layout exposed another repository:\n%v", flags, r)
			}
		}
		if d := digestDiff(before, treeDigest(t, filepath.Join(victim, ".git"))); len(d) > 0 {
			t.Errorf("the victim repository changed on the host: %v", d)
		}
	})
}

// In commit mode, the git dirs of the repository's other linked worktrees stay
// read-only: rewriting their commondir would run code of the command's making when the
// user next runs git in that worktree.
func TestCommitModeOtherWorktrees(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "main-"+s.id)
		other := filepath.Join(s.base, "other-wt")
		must(t, os.Mkdir(other, 0o755))
		s.chown(other)
		s.hostGit(s.ws, "worktree", "add", "-q", "-b", "otherbranch", other)
		wtgd := filepath.Join(s.ws, ".git", "worktrees", "other-wt")
		before := treeDigest(t, wtgd)
		r := s.sh([]string{"--policy", s.commitPolicy()}, `(echo /tmp > "$1/commondir") 2>/dev/null && echo WROTE
(echo x > "$1/HEAD") 2>/dev/null && echo WROTE-HEAD
echo ok > committed.txt && git add committed.txt && git `+gitID+` commit -qm inside && echo COMMITTED
exit 0`, wtgd)
		if strings.Contains(r.stdout, "WROTE") {
			t.Errorf("another worktree's git dir was writable:\n%v", r)
		}
		if !strings.Contains(r.stdout, "COMMITTED") {
			t.Errorf("commit mode no longer commits:\n%v", r)
		}
		if d := digestDiff(before, treeDigest(t, wtgd)); len(d) > 0 {
			t.Errorf("the other worktree's git dir changed on the host: %v", d)
		}
	})
}

// A commondir in a repository's own git dir (left by a run that was killed before
// gosbx could remove it) is refused at the next launch, in either mode: 125, the file
// named, nothing run.
func TestStaleCommondirRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-"+s.id)
		cd := filepath.Join(s.ws, ".git", "commondir")
		must(t, os.WriteFile(cd, []byte("/tmp\n"), 0o644))
		for _, flags := range [][]string{nil, {"--policy", s.commitPolicy()}} {
			m := s.marker("commondir")
			r := s.run(append(flags, "--", "touch", m)...)
			wantRefused(t, "a stale commondir", r, m, cd)
		}
	})
}

// A workspace with more directories to search than filesystem.scan_limit is refused
// (never left half protected); raising the limit lets it run with the nested
// repository protected.
func TestScanLimitFailsClosed(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		for i := 0; i < 40; i++ {
			d := filepath.Join(s.ws, "a"+strings.Repeat("0", 3-len(itoa(i)))+itoa(i))
			must(t, os.Mkdir(d, 0o755))
			s.chown(d)
		}
		s.newRepo(filepath.Join(s.ws, "zlib"), "nested-"+s.id)
		cfg := filepath.Join(s.ws, "zlib", ".git", "config")
		before, err := os.ReadFile(cfg)
		must(t, err)
		low := s.writePolicy("low.yaml", "extends: agent\nfilesystem: {scan_limit: 20}\n")
		m := s.marker("scan")
		wantRefused(t, "scan limit 20", s.run("--policy", low, "--", "touch", m), m, "scan_limit")
		high := s.writePolicy("high.yaml", "extends: agent\nfilesystem: {scan_limit: 100}\n")
		r := s.sh([]string{"--policy", high}, `(echo "[core] fsmonitor = x" >> zlib/.git/config) 2>/dev/null && echo WROTE; exit 0`)
		if strings.Contains(r.stdout, "WROTE") {
			t.Errorf("the nested repository was writable:\n%v", r)
		}
		if after, _ := os.ReadFile(cfg); string(after) != string(before) {
			t.Errorf("the nested repository's config changed on the host")
		}
		// --scan-limit sets the limit either way over the policy's (trial finding 5):
		// lower than the default refuses, higher than the file's runs, protected.
		wantRefused(t, "--scan-limit 20", s.run("--scan-limit", "20", "--", "touch", m), m, "--scan-limit N")
		r = s.sh([]string{"--policy", low, "--scan-limit", "100"}, `(echo "[core] fsmonitor = x" >> zlib/.git/config) 2>/dev/null && echo WROTE; echo RAN`)
		if !strings.Contains(r.stdout, "RAN") || strings.Contains(r.stdout, "WROTE") {
			t.Errorf("--scan-limit 100 over scan_limit 20: want a run with the nested repository read-only:\n%v", r)
		}
		if after, _ := os.ReadFile(cfg); string(after) != string(before) {
			t.Errorf("the nested repository's config changed on the host")
		}
	})
}

// A policy file inside the workspace could be rewritten by the sandbox it defines:
// refused (125).
func TestPolicyFileInWorkspaceRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		p := s.writeWS("sandbox.yaml", "extends: agent\n", 0o644)
		m := s.marker("policy-in-ws")
		wantRefused(t, "policy file in the workspace", s.run("--policy", p, "--", "touch", m), m, "policy", "sandbox.yaml")
	})
}

// A policy file outside the workspace with a hard link inside it could be rewritten
// through that link by the sandbox it defines: refused (125) (attack review round
// three, F6). The control: the same file with one link runs.
func TestPolicyFileHardLinkedIntoWorkspaceRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		p := s.writePolicy("linked.yaml", "extends: agent\n")
		s.chown(p) // the caller's own file, as a policy usually is
		r := s.run("--policy", p, "--", "true")
		mustSucceed(t, r, "a policy file with one link")
		must(t, os.Link(p, filepath.Join(s.ws, "hl.yaml")))
		m := s.marker("policy-hard-link")
		r = s.run("--policy", p, "--", shellPath, "-c", `echo "# rewritten" >> hl.yaml; touch "$1"`, "_", m)
		wantRefused(t, "policy file hard-linked into the workspace", r, m, "policy", "hard links")
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "rewritten") {
			t.Errorf("the command rewrote the policy file through its hard link")
		}
	})
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}
