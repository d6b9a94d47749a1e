package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolchainShadowedRefused: an activated venv whose python3 links into a tree the
// sandbox does not bind (pyenv's ~/.pyenv/versions/X; here also a plain directory
// beside the workspace) is first on PATH; the lookup inside skipped the link it cannot
// follow and ran /usr/bin/python3 with exit 0 and no note (trial finding F1). Now the
// command is refused with 127 and a note naming the skipped file, what would have run
// and the fix, in gosbx exec and in a session (run and detached); checked from the
// host: the script's file is not written. With the tree bound (--ro) it runs.
func TestToolchainShadowedRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		home, _ := fakeToolchains(t, s)
		ver := home + "/.pyenv/versions/3.99.0"
		other := filepath.Join(s.base, "opt-py", "bin")
		must(t, os.MkdirAll(other, 0o755))
		real, err := filepath.EvalSymlinks("/usr/bin/python3")
		must(t, err)
		copyFile(t, real, other+"/python3", 0o755)
		venv := s.ws + "/.venv/bin"
		path := venv + ":" + home + "/.pyenv/shims:/usr/bin:/bin" // activated, with pyenv on PATH
		script := `open("ran","w").write("ok")`
		ran := filepath.Join(s.ws, "ran")
		check := func(what string, r result, want ...string) {
			t.Helper()
			if r.code != 127 || !strings.Contains(r.stderr, "python3: not run: on the sandbox's PATH it is ") ||
				!strings.Contains(r.stderr, "would skip it and run /usr/bin/python3 instead") {
				t.Errorf("%s: want 127 and a note naming the skipped link and /usr/bin/python3\n%v", what, r)
			}
			for _, w := range want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("%s: the note lacks %q\n%v", what, w, r)
				}
			}
			if _, err := os.Stat(ran); err == nil {
				t.Errorf("%s: a python3 ran", what)
				os.Remove(ran)
			}
		}
		for _, tc := range []struct{ target, root, fix string }{
			{ver + "/bin/python3", ver, "add --ro " + ver + " or --toolchain auto"},
			{other + "/python3", filepath.Dir(other), "--ro DIR, or use --toolchain auto"},
		} {
			link := venv + "/python3"
			os.Remove(link)
			must(t, os.Symlink(tc.target, link))
			s.chown(link)
			check("exec via "+tc.target, s.runWith(home, path, "python3", "-c", script), tc.fix)
			// bound, the venv's python3 is what runs
			r := s.runWith(home, path, "--ro", tc.root, "python3", "-c", script)
			if _, err := os.Stat(ran); r.code != 0 || err != nil {
				t.Errorf("with --ro %s: want the venv's python3 to run\n%v", tc.root, r)
			}
			os.Remove(ran)
		}

		e := &sessionEnv{s, filepath.Join(s.base, "rt"), newCgroupScope(t)}
		must(t, os.Mkdir(e.rt, 0o700))
		s.chown(e.rt)
		t.Cleanup(e.stopAll)
		ctx := e.limitCtx(runLimit)
		start := e.rawCommand(ctx, "session", "start", "shadow", "--workspace", e.ws)
		start.Env = append(start.Env, "XDG_RUNTIME_DIR="+e.rt, "HOME="+home, "PATH="+path)
		mustSucceed(t, e.runCmd(ctx, start), "session start with the venv's PATH")
		check("in a session", e.gosbx("exec", "--session", "shadow", "--", "python3", "-c", script))
		check("detached in a session", e.gosbx("exec", "--session", "shadow", "--detach", "--", "python3", "-c", script))
		mustSucceed(t, e.gosbx("session", "stop", "shadow"), "session stop")
	})
}
