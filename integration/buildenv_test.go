package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Under --policy build the caller's activated venv stays first on PATH (the toolchain
// dirs come after it), a prepend dir the caller has already is not repeated, and
// VIRTUAL_ENV is kept when the venv is visible inside, dropped when it is not (attack
// review 13, F5).
func TestBuildProfileKeepsVenv(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		venv := filepath.Join(s.ws, ".venv")
		if out, err := s.hostAs(python, "-m", "venv", "--without-pip", venv); err != nil {
			t.Skipf("python3 venv unavailable: %v %s", err, out)
		}
		home := filepath.Join(s.base, "home")
		must(t, os.Mkdir(home, 0o755))
		s.chown(home)
		probe := `echo "PATH[$PATH]"; echo "VENV[$VIRTUAL_ENV]"; python -c 'import sys; print("PREFIX", sys.prefix)'`
		for _, pol := range []string{"build", "agent"} {
			r := s.rawRunEnv([]string{"HOME=" + home, "PATH=" + venv + "/bin:/usr/local/go/bin:/usr/bin:/bin", "VIRTUAL_ENV=" + venv},
				"exec", "--policy", pol, "--workspace", s.ws, "--", "/bin/sh", "-c", probe)
			mustSucceed(t, r, pol+" venv probe")
			if !strings.Contains(r.stdout, "PATH["+venv+"/bin:") {
				t.Errorf("%s: the caller's venv is not first on PATH:\n%s", pol, r.stdout)
			}
			if strings.Count(r.stdout, "/usr/local/go/bin") != 1 {
				t.Errorf("%s: /usr/local/go/bin is not on PATH exactly once:\n%s", pol, r.stdout)
			}
			if !strings.Contains(r.stdout, "VENV["+venv+"]") {
				t.Errorf("%s: VIRTUAL_ENV of a venv in the workspace is not kept:\n%s", pol, r.stdout)
			}
			if !strings.Contains(r.stdout, "PREFIX "+venv+"\n") {
				t.Errorf("%s: python inside is not the venv's:\n%s", pol, r.stdout)
			}
		}
		// a venv that is not visible inside (the caller's real home): not named
		hidden := filepath.Join(home, ".venvs/x")
		must(t, os.MkdirAll(hidden, 0o755))
		r := s.rawRunEnv([]string{"HOME=" + home, "VIRTUAL_ENV=" + hidden}, "exec", "--workspace", s.ws, "--", "/bin/sh", "-c", `echo "VENV[$VIRTUAL_ENV]"`)
		mustSucceed(t, r, "hidden venv")
		if !strings.Contains(r.stdout, "VENV[]") {
			t.Errorf("VIRTUAL_ENV of a venv not visible inside (under the private HOME) is kept:\n%s", r.stdout)
		}
	})
}

// --policy build as uid 65534 with HOME=/root (a home it cannot enter): the build
// profile's optional ${home} binds that give EACCES are left out and the command runs;
// a bind that is not optional still stops the launch (attack review 13, F6).
func TestBuildProfileUnreadableHome(t *testing.T) {
	requireBinary(t)
	if st, err := os.Stat("/root"); err != nil || st.Mode().Perm()&0o001 != 0 {
		t.Skip("/root is searchable by others here")
	}
	s := newSandbox(t, nobodyCaller)
	m := s.marker("build-root-home")
	r := s.rawRunEnv([]string{"HOME=/root"}, "exec", "--policy", "build", "--no-cache", "--workspace", s.ws, "--", "/usr/bin/touch", m)
	mustSucceed(t, r, "build as nobody with HOME=/root")
	if _, err := os.Stat(m); err != nil {
		t.Errorf("the command did not run: %v", err)
	}
	m2 := s.marker("required-unreadable")
	r = s.rawRunEnv([]string{"HOME=/root"}, "exec", "--policy", "build", "--no-cache", "--workspace", s.ws, "--ro", "/root/.gosbx-it-"+s.id, "--", "/usr/bin/touch", m2)
	if r.code != 125 || !strings.Contains(r.stderr, "permission denied") {
		t.Errorf("a required bind the caller cannot reach: want 125 naming EACCES\n%v", r)
	}
	if _, err := os.Stat(m2); err == nil {
		t.Errorf("the command ran despite a required bind it cannot reach")
	}
}
