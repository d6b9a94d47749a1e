package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolchainShadowedPathShapes: attack review 23's repros of the shadowed-command
// check, run end to end; what ran is the script's output, seen from the host.
//   - F1: "." and "" on PATH are the working directory (the workspace root) inside: its
//     mytool runs with exit 0, not a 127 naming a later match.
//   - F2: a first match only its owner may execute, owned by a uid the sandbox does not
//     map, is passed by inside; for root (whose lookup runs it) the launch is refused
//     with 127 and a note on its mode; for nobody (whose lookup passes it by too) the
//     next match runs on both sides.
//   - F3: "ws/l/../bin2" with l a symlink out of the sandbox is refused with 127, not
//     run as the next match.
func TestToolchainShadowedPathShapes(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		out := filepath.Join(s.base, "out")
		script := func(p, word string, mode os.FileMode) {
			t.Helper()
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			mustWriteExecutable(t, p, []byte("#!/bin/sh\necho "+word+"\n"), mode)
		}
		link := func(target, p string) {
			t.Helper()
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.Symlink(target, p))
			s.chown(p)
		}
		script(out+"/mytool", "out", 0o755)
		script(out+"/bin2/mytool", "outbin2", 0o755)
		must(t, os.MkdirAll(out+"/sub", 0o755))
		link(out+"/mytool", s.ws+"/bin/mytool")
		script(s.ws+"/bin2/mytool", "bin2", 0o755)
		script(s.ws+"/mytool", "dot", 0o755)
		run := func(path string) result {
			t.Helper()
			return s.run("--env", "PATH="+path, "--", "mytool")
		}
		// F1
		rest := s.ws + "/bin:" + s.ws + "/bin2:/usr/bin:/bin"
		for _, first := range []string{".", ""} {
			if r := run(first + ":" + rest); r.code != 0 || strings.TrimSpace(r.stdout) != "dot" {
				t.Errorf("PATH=%q first: want ./mytool to run\n%v", first, r)
			}
		}
		// F3
		link(out+"/sub", s.ws+"/l")
		script(s.ws+"/bin3/mytool", "bin3", 0o755)
		r := run(s.ws + "/l/../bin2:" + s.ws + "/bin3:/usr/bin:/bin")
		if r.code != 127 || !strings.Contains(r.stderr, "mytool: not run: on the sandbox's PATH it is "+s.ws+"/l/../bin2/mytool") ||
			strings.Contains(r.stdout, "bin3") {
			t.Errorf("l/../bin2 first: want 127 and a note naming it\n%v", r)
		}
		// F2
		tool := s.ws + "/bin4/mytool"
		script(tool, "bin4", 0o744)
		must(t, os.Chown(tool, 1000, 1000))
		r = run(s.ws + "/bin4:" + s.ws + "/bin2:/usr/bin:/bin")
		if c.uid == 0 {
			if r.code != 127 || !strings.Contains(r.stderr, "(mode 0744, owner 1000, group 1000), which the sandbox's user may not execute") {
				t.Errorf("root, owner 1000 0744 first: want 127 and a note on its mode\n%v", r)
			}
		} else if r.code != 0 || strings.TrimSpace(r.stdout) != "bin2" {
			t.Errorf("nobody, owner 1000 0744 first: want bin2, which the host's lookup runs too\n%v", r)
		}
		// owned by the workspace's owner it runs
		s.chown(tool)
		if r := run(s.ws + "/bin4:" + s.ws + "/bin2:/usr/bin:/bin"); r.code != 0 || strings.TrimSpace(r.stdout) != "bin4" {
			t.Errorf("the caller's own 0744 first: want it to run\n%v", r)
		}
	})
}
