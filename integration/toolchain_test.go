package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeToolchains lays out, in a home of the caller's beside the workspace, what a
// developer's machine has: pyenv (a shim that cannot work without pyenv, and a version
// whose python3 is a copy of the host's, so that it runs only if the version is bound),
// a project venv in the workspace linking to it, ~/.local/bin with a link into ~/.ssh,
// and a key there. It returns the home and the PATH to give gosbx.
func fakeToolchains(t *testing.T, s *sandbox) (home, path string) {
	t.Helper()
	home = filepath.Join(s.base, "home")
	ver := filepath.Join(home, ".pyenv/versions/3.99.0")
	for _, d := range []string{home + "/.pyenv/shims", ver + "/bin", ver + "/lib/python3.99", home + "/.ssh", home + "/.local/bin"} {
		must(t, os.MkdirAll(d, 0o755))
	}
	real, err := filepath.EvalSymlinks("/usr/bin/python3")
	must(t, err)
	copyFile(t, real, ver+"/bin/python3.99", 0o755)
	must(t, os.Symlink("python3.99", ver+"/bin/python3"))
	for _, n := range []string{"python3", "python3.99"} {
		// pyenv's shim runs `pyenv exec`, which the sandbox does not have
		mustWriteExecutable(t, home+"/.pyenv/shims/"+n, []byte("#!/bin/sh\necho the shim ran; exit 99\n"), 0o755)
	}
	must(t, os.WriteFile(home+"/.pyenv/version", []byte("3.99.0\n"), 0o644))
	must(t, os.WriteFile(home+"/.ssh/id_ed25519", []byte("SECRET-KEY-"+s.id), 0o644))
	must(t, os.Symlink(home+"/.ssh/id_ed25519", home+"/.local/bin/key"))
	must(t, os.MkdirAll(s.ws+"/.venv/bin", 0o755))
	must(t, os.WriteFile(s.ws+"/.venv/pyvenv.cfg", []byte("home = "+ver+"/bin\n"), 0o644))
	must(t, os.Symlink(ver+"/bin/python3", s.ws+"/.venv/bin/python"))
	must(t, os.MkdirAll(s.ws+"/bin", 0o755))
	filepath.Walk(s.base, func(p string, _ os.FileInfo, _ error) error { s.chown(p); return nil })
	path = home + "/.pyenv/shims:" + home + "/.local/bin:" + home + "/.ssh:" + s.ws + "/bin:/usr/bin:/bin"
	return home, path
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	must(t, err)
	if _, err := os.Lstat(dst); err == nil {
		t.Fatalf("copy %s: %s exists", src, dst)
	}
	mustWriteExecutable(t, dst, b, mode) // dst is run: not ETXTBSY then
}

// runWith runs gosbx exec with args as the caller, with home and PATH as its own.
func (s *sandbox) runWith(home, path string, args ...string) result {
	s.t.Helper()
	ctx := s.limitCtx(runLimit)
	cmd := s.command(ctx, args...)
	cmd.Env = append(s.env(), "HOME="+home, "PATH="+path)
	return s.runCmd(ctx, cmd)
}

func TestToolchainAuto(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		home, path := fakeToolchains(t, s)
		ver := home + "/.pyenv/versions/3.99.0"

		// The venv's python (a link to the pyenv version) runs, and its effect lands in
		// the workspace; python3 on PATH is the version's, not the shim nor /usr/bin's.
		r := s.runWith(home, path, "--toolchain", "auto", "--", "sh", "-c",
			`.venv/bin/python -c 'open("venv-ran","w").write("ok")' && python3 -c 'import sys; open("exe","w").write(sys.executable)'`)
		mustSucceed(t, r, "the venv's python and python3 under --toolchain auto")
		if b, err := os.ReadFile(s.ws + "/venv-ran"); err != nil || string(b) != "ok" {
			t.Errorf("the venv's python left no file in the workspace: %v", err)
		}
		if b, _ := os.ReadFile(s.ws + "/exe"); string(b) != ver+"/bin/python3" {
			t.Errorf("python3 inside was %q; want the pyenv version's %s/bin/python3", b, ver)
		}

		// The build profile does the same by default.
		os.Remove(s.ws + "/venv-ran")
		r = s.runWith(home, path, "--policy", "build", "--", ".venv/bin/python", "-c", `open("venv-ran","w").write("ok")`)
		mustSucceed(t, r, "the venv's python under build")
		if _, err := os.Stat(s.ws + "/venv-ran"); err != nil {
			t.Errorf("under build the venv's python left no file: %v", err)
		}

		// Without it: 127, and the message names the host path and the fix.
		r = s.runWith(home, path, "--", ".venv/bin/python", "-c", `open("venv-ran2","w").write("ok")`)
		if r.code != 127 || !strings.Contains(r.stderr, ".venv/bin/python: its interpreter "+ver+"/bin/python3.99") ||
			!strings.Contains(r.stderr, "add --ro "+ver+" or --toolchain auto") {
			t.Errorf("the venv's python without --toolchain: %v; want 127 naming %s", r, ver)
		}
		r = s.runWith(home, path, "--", "python3.99", "-c", "pass")
		want := "python3.99: not found inside the sandbox (on the host it is " + home + "/.pyenv/shims/python3.99): add --toolchain " + ver + " or --toolchain auto"
		if r.code != 127 || !strings.Contains(r.stderr, want) {
			t.Errorf("python3.99 without --toolchain: %v; want 127 and %q", r, want)
		}
		// The hint's first suggestion, followed literally, makes it run (trial: --ro of
		// the version left the shim first on PATH, and the same 127 and hint came back);
		// so does the venv hint's.
		r = s.runWith(home, path, "--toolchain", ver, "--", "python3.99", "-c", `open("hint-ran","w").write("ok")`)
		mustSucceed(t, r, "python3.99 with the hint's --toolchain "+ver)
		wantContent(t, s.ws+"/hint-ran", "ok")
		r = s.runWith(home, path, "--ro", ver, "--", ".venv/bin/python", "-c", `open("hint-ran2","w").write("ok")`)
		mustSucceed(t, r, "the venv's python with the hint's --ro "+ver)
		wantContent(t, s.ws+"/hint-ran2", "ok")
		if _, err := os.Stat(s.ws + "/venv-ran2"); err == nil {
			t.Errorf("the venv's python ran without --toolchain")
		}
	})
}

func TestToolchainNeverCredentials(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		home, path := fakeToolchains(t, s)
		// ~/.ssh is on PATH and ~/.local/bin/key links into it; the workspace's bin is on
		// PATH too, and must stay the workspace's own (read-write), not re-bound.
		r := s.runWith(home, path, "--toolchain", "auto", "--", "sh", "-c",
			`cat `+home+`/.ssh/id_ed25519 `+home+`/.local/bin/key; ls `+home+`/.ssh; touch `+s.ws+`/bin/made-inside; ls `+home+`/.local/bin >listing`)
		if strings.Contains(r.stdout, "SECRET-KEY") {
			t.Fatalf("the key was readable inside: %v", r)
		}
		if _, err := os.Stat(s.ws + "/bin/made-inside"); err != nil {
			t.Errorf("the workspace's bin on PATH is not writable inside: %v (%v)", err, r)
		}
		// ~/.local/bin itself is bound (its link is there, dangling inside)
		if b, _ := os.ReadFile(s.ws + "/listing"); !strings.Contains(string(b), "key") {
			t.Errorf("~/.local/bin not bound: listing %q (%v)", b, r)
		}
		// policy show says what was bound and why, and what was not
		ctx := s.limitCtx(runLimit)
		cmd := s.rawCommand(ctx, "policy", "show", "--workspace", s.ws, "--toolchain", "auto")
		cmd.Env = append(s.env(), "HOME="+home, "PATH="+path)
		r = s.runCmd(ctx, cmd)
		mustSucceed(t, r, "policy show")
		for _, w := range []string{"#   " + home + "/.pyenv/versions/3.99.0  <- PATH entry " + home + "/.pyenv/shims (pyenv version 3.99.0",
			"#   " + home + "/.local/bin  <- PATH entry " + home + "/.local/bin", "#   " + home + "/.ssh  <- PATH entry " + home + "/.ssh: a credential path"} {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("policy show lacks %q:\n%s", w, r.stdout)
			}
		}
	})
}

// `exec --session` gives a missing command's 127 the hint gosbx exec gives, computed by
// the session's supervisor from the host as `session start` saw it: the client here
// has another PATH and HOME, and compiles no policy.
func TestToolchainHintInSession(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		home, path := fakeToolchains(t, e.sandbox)
		ver := home + "/.pyenv/versions/3.99.0"
		ctx := e.limitCtx(runLimit)
		start := e.rawCommand(ctx, "session", "start", "hint", "--workspace", e.ws)
		start.Env = append(start.Env, "XDG_RUNTIME_DIR="+e.rt, "HOME="+home, "PATH="+path)
		mustSucceed(t, e.runCmd(ctx, start), "session start with the fake toolchains' PATH")

		r := e.gosbx("exec", "--session", "hint", "--", "python3.99", "-c", "pass")
		want := "gosbx: python3.99: not found inside the sandbox (on the host it is " + home + "/.pyenv/shims/python3.99): add --toolchain " + ver + " or --toolchain auto"
		if r.code != 127 || !strings.Contains(r.stderr, want) {
			t.Errorf("python3.99 in the session: %v; want 127 and %q", r, want)
		}
		r = e.gosbx("exec", "--session", "hint", "--", ".venv/bin/python", "-c", `open("ran","w").write("ok")`)
		if r.code != 127 || !strings.Contains(r.stderr, ".venv/bin/python: its interpreter "+ver+"/bin/python3.99") ||
			!strings.Contains(r.stderr, "add --ro "+ver+" or --toolchain auto") {
			t.Errorf("the venv's python in the session: %v; want 127 naming %s", r, ver)
		}
		if _, err := os.Stat(e.ws + "/ran"); err == nil {
			t.Errorf("the venv's python ran in the session without its toolchain")
		}
		// a command the host lacks too: the plain 127, no hint
		r = e.gosbx("exec", "--session", "hint", "--", "no-such-command-gosbx")
		if r.code != 127 || strings.Contains(r.stderr, "not found inside the sandbox") {
			t.Errorf("a command the host lacks too: %v; want the plain 127", r)
		}
		// detached: the job is refused with the same hint
		r = e.gosbx("exec", "--session", "hint", "--detach", "--", "python3.99", "-c", "pass")
		if r.code != 127 || !strings.Contains(r.stderr, want) {
			t.Errorf("python3.99 detached in the session: %v; want 127 and %q", r, want)
		}
	})
}

// A PATH entry DIR/bin whose parent holds other things (the trial's /tmp/trial with
// bin/, priv/, proj/): --toolchain auto binds bin (and a prefix's lib) so the tool runs,
// and the siblings stay out of the sandbox: the command cannot read priv's file, checked
// from the host by what it could write to the workspace.
func TestToolchainParentSiblingsHidden(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		trial := filepath.Join(s.base, "trial")
		for _, d := range []string{trial + "/bin", trial + "/lib", trial + "/priv", trial + "/proj"} {
			must(t, os.MkdirAll(d, 0o755))
		}
		mustWriteExecutable(t, trial+"/bin/trialtool", []byte("#!/bin/sh\necho ran > \"$1\"\n"), 0o755)
		must(t, os.WriteFile(trial+"/priv/secret", []byte("SECRET-"+s.id), 0o644))
		must(t, os.MkdirAll(s.base+"/home", 0o755))
		filepath.Walk(s.base, func(p string, _ os.FileInfo, _ error) error { s.chown(p); return nil })
		r := s.runWith(s.base+"/home", trial+"/bin:/usr/bin:/bin", "--toolchain", "auto", "--", "sh", "-c",
			`trialtool tool-ran; cat "$1"/priv/secret > leaked; ls -a "$1" > listing; exit 0`, "_", trial)
		mustSucceed(t, r, "a tool of a PATH entry whose parent holds other directories")
		wantContent(t, s.ws+"/tool-ran", "ran\n")
		if b, _ := os.ReadFile(s.ws + "/leaked"); strings.Contains(string(b), "SECRET-") {
			t.Errorf("the sandbox read %s/priv/secret: the PATH entry's parent was bound whole", trial)
		}
		if b, _ := os.ReadFile(s.ws + "/listing"); strings.Contains(string(b), "priv") || strings.Contains(string(b), "proj") {
			t.Errorf("the sandbox lists %s's other directories:\n%s", trial, b)
		}
	})
}
