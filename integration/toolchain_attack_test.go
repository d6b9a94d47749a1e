package integration

// From an attack review (review3 F1, F2, F4, F5): what a sandbox can write (the
// workspace, a --rw SRC:DST tree's source) never chooses what the next `--toolchain
// auto` launch binds, version files planted there are not read through links nor
// printed, and the 127 hint is no oracle of hidden host paths. Each check reads the
// secret from inside and looks for it in what the caller sees.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolchainPlantedVenv: a first run writes a venv in a --rw SRC:DST tree (pyvenv.cfg
// home naming a 0600 credential-like file and a private directory) and links the
// workspace's .venv to its source; the next --toolchain auto run must not show either.
func TestToolchainPlantedVenv(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		home, path := fakeToolchains(t, s)
		must(t, os.RemoveAll(s.ws+"/.venv"))
		data := filepath.Join(s.base, "data")
		must(t, os.MkdirAll(home+"/private/bin", 0o755))
		must(t, os.WriteFile(home+"/.pgpass", []byte("PGPASS-"+s.id), 0o600))
		must(t, os.WriteFile(home+"/private/bin/token", []byte("PRIVATE-"+s.id), 0o600))
		must(t, os.MkdirAll(data, 0o755))
		filepath.Walk(s.base, func(p string, _ os.FileInfo, _ error) error { s.chown(p); return nil })
		for _, target := range []string{home + "/.pgpass", home + "/private/bin"} {
			plant := `rm -rf /data/v .venv; mkdir -p /data/v/bin && printf 'home = ` + target + `\n' > /data/v/pyvenv.cfg && ln -s ` +
				home + `/private/bin/token /data/v/bin/python3 && ln -s ` + data + `/v .venv`
			mustSucceed(t, s.runWith(home, path, "--rw", data+":/data", "--", "sh", "-c", plant), "plant the venv")
			r := s.runWith(home, path, "--rw", data+":/data", "--toolchain", "auto", "--", "sh", "-c",
				"cat "+home+"/.pgpass "+home+"/private/bin/token; ls "+home+"/private/bin")
			if strings.Contains(r.stdout, s.id) || strings.Contains(r.stdout, "token") {
				t.Errorf("home = %s: a venv the sandbox wrote made --toolchain auto show it: %v", target, r)
			}
		}
	})
}

// TestToolchainWorkspaceLinkOtherHome: a workspace venv's python linked to a directory
// shaped like a Python installation (another user's ~/.local behind a 0700 home) is
// not bound, for a root caller either.
func TestToolchainWorkspaceLinkOtherHome(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		home, path := fakeToolchains(t, s)
		must(t, os.RemoveAll(s.ws+"/.venv"))
		alice := filepath.Join(s.base, "alice")
		for _, d := range []string{"bin", "lib/python3.11", "share/secret"} {
			must(t, os.MkdirAll(alice+"/.local/"+d, 0o755))
		}
		must(t, os.WriteFile(alice+"/.local/share/secret/token", []byte("ALICE-"+s.id), 0o644))
		must(t, os.Chmod(alice, 0o700)) // root's, another user's to the nobody caller
		must(t, os.MkdirAll(s.ws+"/.venv/bin", 0o755))
		must(t, os.WriteFile(s.ws+"/.venv/pyvenv.cfg", []byte("home = "+alice+"/.local/bin\n"), 0o644))
		must(t, os.Symlink(alice+"/.local", s.ws+"/.venv/bin/python3"))
		filepath.Walk(s.ws, func(p string, _ os.FileInfo, _ error) error { s.chown(p); return nil })
		r := s.runWith(home, path, "--toolchain", "auto", "--", "cat", alice+"/.local/share/secret/token")
		if strings.Contains(r.stdout, s.id) {
			t.Errorf("a workspace link made --toolchain auto bind another user's tree: %v", r)
		}
	})
}

// TestToolchainVersionFileLink: a .python-version planted as a symlink to the caller's
// credential file is not read: policy show does not print its words.
func TestToolchainVersionFileLink(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		home, path := fakeToolchains(t, s)
		must(t, os.WriteFile(home+"/.netrc", []byte("s3cr3t-"+s.id+"\n"), 0o600))
		s.chown(home + "/.netrc")
		must(t, os.Symlink(home+"/.netrc", s.ws+"/.python-version"))
		ctx := s.limitCtx(runLimit)
		cmd := s.rawCommand(ctx, "policy", "show", "--workspace", s.ws, "--toolchain", "auto")
		cmd.Env = append(s.env(), "HOME="+home, "PATH="+path)
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "policy show")
		if strings.Contains(r.stdout+r.stderr, s.id) {
			t.Errorf("policy show printed the file a workspace .python-version links to:\n%s", r.stdout)
		}
		// not read: pyenv's global version is the one chosen
		if !strings.Contains(r.stdout, "(pyenv version 3.99.0 from "+home+"/.pyenv/version)") {
			t.Errorf("policy show does not fall back to the global version:\n%s", r.stdout)
		}
	})
}

// TestNotFoundHintNoOracle: a workspace link onto a hidden host path gets the same
// plain 127 whether the path exists or not, and no "add --ro" naming it.
func TestNotFoundHintNoOracle(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		priv := filepath.Join(s.base, "priv")
		must(t, os.MkdirAll(priv, 0o755))
		must(t, os.WriteFile(priv+"/hist", []byte("x"), 0o644))
		must(t, os.Symlink(priv+"/hist", s.ws+"/tool"))
		must(t, os.Symlink(priv+"/nope", s.ws+"/tool2"))
		r1, r2 := s.run("--", "./tool"), s.run("--", "./tool2")
		if r1.code != 127 || r2.code != 127 {
			t.Fatalf("want 127 for both: %v / %v", r1, r2)
		}
		if strings.Contains(r1.stderr, priv) || strings.Replace(r1.stderr, "./tool", "./tool2", 1) != r2.stderr {
			t.Errorf("the hint differs by whether the hidden host path exists:\n%q\n%q", r1.stderr, r2.stderr)
		}
	})
}
