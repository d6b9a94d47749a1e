package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A file written inside the workspace lands on the host, owned by the caller.
func TestWorkspaceWriteReachesHost(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.sh(nil, `mkdir -p "$1/sub" && echo "hello $2" > "$1/sub/out.txt" && pwd`, s.ws, s.id)
		mustSucceed(t, r, "write in workspace")
		got, err := os.ReadFile(filepath.Join(s.ws, "sub/out.txt"))
		if err != nil || string(got) != "hello "+s.id+"\n" {
			t.Fatalf("host file: %q, %v\n%v", got, err, r)
		}
		var st syscall.Stat_t
		must(t, syscall.Stat(filepath.Join(s.ws, "sub/out.txt"), &st))
		if int(st.Uid) != c.uid || int(st.Gid) != c.gid {
			t.Errorf("file written inside is owned by %d:%d on the host, want %d:%d", st.Uid, st.Gid, c.uid, c.gid)
		}
		// The caller's cwd (s.base) is outside the workspace: start at its root.
		if strings.TrimSpace(r.stdout) != s.ws {
			t.Errorf("command started in %q, want the workspace root %q", strings.TrimSpace(r.stdout), s.ws)
		}
	})
}

// Writes outside the workspace fail and never reach the host.
func TestReadOnlyOutsideWorkspace(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		name := "gosbx-it-probe-" + s.id
		targets := []string{
			"/" + name,
			"/usr/" + name,
			"/etc/" + name,
			"/usr/bin/" + name,
			filepath.Join(s.base, name), // the workspace's parent
			"/var/" + name,
			"/opt/" + name,
		}
		for _, p := range targets {
			t.Cleanup(func() { os.Remove(p) })
		}
		// The parent of the workspace is writable by the caller on the host:
		// only the sandbox can stop this write.
		s.chown(s.base)
		script := `for p in "$@"; do if (echo pwned > "$p") 2>/dev/null; then echo "WROTE $p"; fi; done
if (echo pwned >> /etc/passwd) 2>/dev/null; then echo "WROTE /etc/passwd"; fi
if mkdir /usr/` + name + `.d 2>/dev/null; then echo "WROTE /usr/` + name + `.d"; fi
exit 0`
		t.Cleanup(func() { os.Remove("/usr/" + name + ".d") })
		passwd, _ := os.ReadFile("/etc/passwd")
		r := s.sh(nil, script, targets...)
		mustSucceed(t, r, "write probes")
		for _, l := range strings.Split(r.stdout, "\n") {
			if p, ok := strings.CutPrefix(l, "WROTE "); ok {
				if filepath.Dir(p) == s.base {
					t.Errorf("writing in the workspace's parent %s succeeded inside (it is read-only per the contract, even when it lies in a scratch tmpfs)", s.base)
				} else {
					t.Errorf("writing %s succeeded inside", p)
				}
			}
		}
		for _, p := range append(targets, "/usr/"+name+".d") {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s exists on the host after the run", p)
			}
		}
		if now, _ := os.ReadFile("/etc/passwd"); string(now) != string(passwd) {
			t.Errorf("/etc/passwd changed on the host")
		}
	})
}

// Host files that are not bound cannot be read: a sibling of the workspace
// (readable by everybody on the host) and a file in /root.
func TestHostFilesUnreadable(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		secret := "canary-" + s.id
		sib := filepath.Join(s.base, "sibling")
		must(t, os.Mkdir(sib, 0o755))
		must(t, os.WriteFile(filepath.Join(sib, "canary.txt"), []byte(secret), 0o644))
		rootCanary := "/root/.gosbx-it-canary-" + s.id
		must(t, os.WriteFile(rootCanary, []byte(secret), 0o644))
		t.Cleanup(func() { os.Remove(rootCanary) })

		r := s.sh(nil, `for f in "$@"; do cat "$f" 2>/dev/null && echo " <- READ $f"; test -e "$f" && echo "EXISTS $f"; done; ls -A "$(dirname "$1")" 2>/dev/null | sed 's/^/LS /'; exit 0`,
			filepath.Join(sib, "canary.txt"), rootCanary)
		mustSucceed(t, r, "read probes")
		if strings.Contains(r.stdout, secret) {
			t.Errorf("a host canary file was read inside:\n%s", r.stdout)
		}
		if strings.Contains(r.stdout, "EXISTS") || strings.Contains(r.stdout, "LS ") {
			t.Errorf("unbound host paths are visible inside:\n%s", r.stdout)
		}
	})
}

// Symlinks inside the workspace that point out of it cannot be used to
// change the host: one to a host file writable by the caller, one to /etc.
func TestOutwardSymlinks(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		outside := filepath.Join(s.base, "outside.txt")
		must(t, os.WriteFile(outside, []byte("original\n"), 0o666))
		must(t, os.Chmod(outside, 0o666))
		s.chown(outside)
		must(t, os.Symlink(outside, filepath.Join(s.ws, "escape")))
		must(t, os.Symlink("/etc", filepath.Join(s.ws, "etcdir")))
		must(t, os.Symlink(s.base, filepath.Join(s.ws, "up")))
		probe := "/etc/gosbx-it-probe-" + s.id
		t.Cleanup(func() { os.Remove(probe); os.Remove(filepath.Join(s.base, "via-up")) })
		r := s.sh(nil, `cd "$1"; echo pwned > escape; echo pwned >> escape; touch "etcdir/$(basename "$2")"; touch up/via-up; exit 0`, s.ws, probe)
		mustSucceed(t, r, "symlink probes")
		if b, _ := os.ReadFile(outside); string(b) != "original\n" {
			t.Errorf("a symlink in the workspace let the command change a host file: now %q", b)
		}
		if _, err := os.Lstat(probe); err == nil {
			t.Errorf("a symlink in the workspace let the command create %s", probe)
		}
		if _, err := os.Lstat(filepath.Join(s.base, "via-up")); err == nil {
			t.Errorf("a symlink in the workspace let the command write in the workspace's parent")
		}
	})
}

// A workspace named through a symlink works under the name given and the
// writes land in the real directory.
func TestSymlinkedWorkspace(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		link := filepath.Join(s.base, "wslink")
		must(t, os.Symlink(s.ws, link))
		ctx := s.limitCtx(runLimit)
		cmd := s.rawCommand(ctx, "exec", "--workspace", link, "--", shellPath, "-c",
			`test -L "$1" || echo NOT-A-SYMLINK; echo via-link > "$1/f1" && echo real > "$2/f2" && cd "$1" && pwd`, "_", link, s.ws)
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "symlinked workspace")
		if strings.Contains(r.stdout, "NOT-A-SYMLINK") {
			t.Errorf("the workspace name given (%s) is not a symlink inside", link)
		}
		if b, _ := os.ReadFile(filepath.Join(s.ws, "f1")); string(b) != "via-link\n" {
			t.Errorf("write through the symlinked workspace did not land: %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(s.ws, "f2")); string(b) != "real\n" {
			t.Errorf("write through the canonical workspace path did not land: %q", b)
		}
	})
}

// --ro and --rw extra binds: --ro readable but not writable, --rw writable.
func TestExtraBinds(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		ro := filepath.Join(s.base, "ro")
		rw := filepath.Join(s.base, "rw")
		for _, d := range []string{ro, rw} {
			must(t, os.Mkdir(d, 0o755))
			s.chown(d)
		}
		must(t, os.WriteFile(filepath.Join(ro, "in.txt"), []byte("ro-content"), 0o644))
		r := s.sh([]string{"--ro", ro, "--rw", rw},
			`cat "$1/in.txt" && echo; if (echo x > "$1/new") 2>/dev/null; then echo WROTE-RO; fi; echo rw-ok > "$2/out.txt"`, ro, rw)
		mustSucceed(t, r, "extra binds")
		if !strings.Contains(r.stdout, "ro-content") {
			t.Errorf("--ro file not readable inside:\n%v", r)
		}
		if strings.Contains(r.stdout, "WROTE-RO") {
			t.Errorf("--ro bind is writable inside")
		}
		if _, err := os.Stat(filepath.Join(ro, "new")); err == nil {
			t.Errorf("a write to the --ro bind reached the host")
		}
		if b, _ := os.ReadFile(filepath.Join(rw, "out.txt")); string(b) != "rw-ok\n" {
			t.Errorf("write to the --rw bind did not reach the host: %q", b)
		}
	})
}

// .git in the workspace is read-only inside, the rest stays writable.
func TestGitDirReadOnly(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.hostGit(s.ws, "init", "-q")
		s.hostGit(s.ws, "-c", "user.name=c", "-c", "user.email=c@c", "commit", "-q", "--allow-empty", "-m", "init")
		cfg, err := os.ReadFile(filepath.Join(s.ws, ".git/config"))
		must(t, err)
		r := s.sh(nil, `cd "$1"
if (echo pwned >> .git/config) 2>/dev/null; then echo "WROTE config"; fi
if touch .git/gosbx-it-new 2>/dev/null; then echo "WROTE new"; fi
if mv .git .git-moved 2>/dev/null; then echo "MOVED .git"; fi
if rm -f .git/HEAD 2>/dev/null && ! test -e .git/HEAD; then echo "REMOVED HEAD"; fi
echo ok > rest.txt`, s.ws)
		mustSucceed(t, r, ".git probes")
		if strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "MOVED") || strings.Contains(r.stdout, "REMOVED") {
			t.Errorf(".git is writable inside:\n%s", r.stdout)
		}
		if now, _ := os.ReadFile(filepath.Join(s.ws, ".git/config")); string(now) != string(cfg) {
			t.Errorf(".git/config changed on the host")
		}
		for _, p := range []string{".git/gosbx-it-new", ".git-moved"} {
			if _, err := os.Lstat(filepath.Join(s.ws, p)); err == nil {
				t.Errorf("%s exists on the host", p)
			}
		}
		if _, err := os.Stat(filepath.Join(s.ws, ".git/HEAD")); err != nil {
			t.Errorf(".git/HEAD gone on the host: %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(s.ws, "rest.txt")); string(b) != "ok\n" {
			t.Errorf("the rest of the workspace is not writable: %q", b)
		}
	})
}

// git works on a repository in the workspace (no "dubious ownership"), and a
// new repository can be created and committed to inside.
func TestGitWorks(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.hostGit(s.ws, "init", "-q")
		s.writeWS("tracked.txt", "v1\n", 0o644)
		s.hostGit(s.ws, "add", "tracked.txt")
		s.hostGit(s.ws, "-c", "user.name=c", "-c", "user.email=c@c", "commit", "-q", "-m", "host-commit-"+s.id)
		s.writeWS("tracked.txt", "v2\n", 0o644)
		r := s.sh(nil, `set -e
git -C "$1" status --porcelain
git -C "$1" log --oneline
git init -q "$1/inner"
cd "$1/inner"
echo hi > f
git add f
git -c user.name=c -c user.email=c@c commit -q -m inner-commit
git status --porcelain
git log --oneline`, s.ws)
		mustSucceed(t, r, "git inside")
		all := r.stdout + r.stderr
		if strings.Contains(strings.ToLower(all), "dubious") {
			t.Errorf("git reports dubious ownership:\n%v", r)
		}
		if !strings.Contains(r.stdout, "M tracked.txt") || !strings.Contains(r.stdout, "host-commit-"+s.id) {
			t.Errorf("git status/log of the workspace repository are wrong:\n%v", r)
		}
		// The commit made inside is on the host.
		out, err := s.hostGitOut(filepath.Join(s.ws, "inner"), "log", "--oneline")
		if err != nil || !strings.Contains(out, "inner-commit") {
			t.Errorf("the inner commit is not on the host: %q %v", out, err)
		}
	})
}

// hostGit runs git on the host as the caller (HOME pointing nowhere useful).
func (s *sandbox) hostGit(dir string, args ...string) {
	s.t.Helper()
	if out, err := s.hostGitOut(dir, args...); err != nil {
		s.t.Fatalf("host git %v: %v\n%s", args, err, out)
	}
}

func (s *sandbox) hostGitOut(dir string, args ...string) (string, error) {
	full := append([]string{"-C", dir, "-c", "safe.directory=*"}, args...)
	var cmd *exec.Cmd
	if s.c.uid == 0 {
		cmd = exec.Command("git", full...)
	} else {
		cmd = exec.Command("/usr/bin/setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--", "git"}, full...)...)
	}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + s.base, "GIT_CONFIG_NOSYSTEM=1"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// A nested user+mount namespace inside the sandbox cannot undo the
// read-only .git (mounts made by the sandbox are locked).
func TestGitDirNestedUserns(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.hostGit(s.ws, "init", "-q")
		cfgPath := filepath.Join(s.ws, ".git/config")
		cfg, err := os.ReadFile(cfgPath)
		must(t, err)
		r := s.sh(nil, `w=$1
unshare -Urm sh -c '
  w=$1
  umount -l "$w/.git" 2>/dev/null && echo UMOUNTED
  mount -o remount,bind,rw "$w/.git" 2>/dev/null && echo REMOUNTED
  mkdir -p /tmp/gx && mount --bind "$w" /tmp/gx 2>/dev/null && (echo pwned >> /tmp/gx/.git/config) 2>/dev/null && echo WROTE-VIA-BIND
  (echo pwned >> "$w/.git/config") 2>/dev/null && echo WROTE-NESTED
' _ "$w" 2>&1 | sed 's/^/nested: /'
(echo pwned >> "$w/.git/config") 2>/dev/null && echo WROTE-OUTER
exit 0`, s.ws)
		mustSucceed(t, r, "nested userns")
		if now, _ := os.ReadFile(cfgPath); string(now) != string(cfg) {
			t.Errorf(".git/config was modified from inside the sandbox through a nested namespace:\n%s", r.stdout)
		}
		if strings.Contains(r.stdout, "WROTE") {
			t.Errorf("a write to .git succeeded:\n%s", r.stdout)
		}
	})
}

// The system layout: /bin /lib /lib64 /sbin are the host's symlinks, /usr
// and /etc are the host's (read-only), and /tmp /var/tmp /run /dev/shm are
// private: host files there are invisible and writes stay inside.
func TestSystemLayoutAndScratch(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		var script strings.Builder
		for _, l := range []string{"/bin", "/lib", "/lib64", "/sbin"} {
			target, err := os.Readlink(l)
			if err != nil {
				continue // not a symlink on this host
			}
			script.WriteString(`[ "$(readlink ` + l + `)" = "` + target + `" ] || echo "BADLINK ` + l + ` $(readlink ` + l + `)"` + "\n")
		}
		name := "gosbx-it-scratch-" + s.id
		for _, d := range []string{"/tmp", "/var/tmp", "/run", "/dev/shm"} {
			hf := filepath.Join(d, name+"-host")
			must(t, os.WriteFile(hf, []byte("host"), 0o644))
			inner := filepath.Join(d, name+"-inner")
			t.Cleanup(func() { os.Remove(hf); os.Remove(inner) })
			script.WriteString(`[ -e ` + hf + ` ] && echo "VISIBLE ` + hf + `"` + "\n")
			script.WriteString(`echo inner > ` + inner + ` || echo "UNWRITABLE ` + d + `"` + "\n")
		}
		script.WriteString(`cmp -s /etc/passwd "$1" || echo "ETC-DIFFERS"; test -x /usr/bin/env || echo "NO-USR"; exit 0` + "\n")
		b, err := os.ReadFile("/etc/passwd")
		must(t, err)
		s.writeWS("passwd.copy", string(b), 0o644)
		r := s.sh(nil, script.String(), filepath.Join(s.ws, "passwd.copy"))
		mustSucceed(t, r, "layout probes")
		for _, bad := range []string{"BADLINK", "VISIBLE", "UNWRITABLE", "ETC-DIFFERS", "NO-USR"} {
			if strings.Contains(r.stdout, bad) {
				t.Errorf("layout inside (%s):\n%s", bad, r.stdout)
			}
		}
		for _, d := range []string{"/tmp", "/var/tmp", "/run", "/dev/shm"} {
			if _, err := os.Lstat(filepath.Join(d, name+"-inner")); err == nil {
				t.Errorf("a write to %s inside reached the host", d)
			}
		}
	})
}
