package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The built-in profiles other than agent: strict and build.

// strict: the /etc files the loader, TLS and name lookup need are there (and
// work: getent, python3's default TLS context), other /etc files are absent.
func TestStrictProfile(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		var absent []string
		for _, f := range []string{"/etc/os-release", "/etc/fstab", "/etc/debian_version", "/etc/shells"} {
			if _, err := os.Stat(f); err == nil {
				absent = append(absent, f) // on the host: must not be inside
			}
		}
		if len(absent) == 0 {
			t.Skip("no /etc file outside strict's list exists on this host")
		}
		r := s.sh([]string{"--policy", "strict"}, `for f in /etc/passwd /etc/hosts /etc/ssl/certs; do test -e "$f" && echo "HAS $f"; done
getent hosts localhost >/dev/null && echo GETENT-OK
`+python+` -c 'import ssl; ssl.create_default_context(); print("TLS-OK")'
for f in "$@"; do test -e "$f" && echo "VISIBLE $f"; done
id -un 2>/dev/null | sed 's/^/USER /'
exit 0`, absent...)
		mustSucceed(t, r, "strict probes")
		for _, want := range []string{"HAS /etc/passwd", "HAS /etc/hosts", "HAS /etc/ssl/certs", "GETENT-OK", "TLS-OK", "USER " + c.name} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("strict: %q missing:\n%v", want, r)
			}
		}
		if strings.Contains(r.stdout, "VISIBLE") {
			t.Errorf("strict: /etc files outside its list are visible:\n%s", r.stdout)
		}
	})
}

// strict refuses the flags that would widen it: --net host, --rw, --env,
// --pass-env; each with 125, naming the policy field, running nothing.
func TestStrictProfileRefusesFlags(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		extra := filepath.Join(s.base, "extra")
		must(t, os.Mkdir(extra, 0o755))
		s.chown(extra)
		cases := []struct {
			name  string
			flags []string
			field string
		}{
			{"net", []string{"--net", "host"}, "network.allow_host"},
			{"rw", []string{"--rw", extra}, "filesystem.allow_extra_read_write"},
			{"env", []string{"--env", "A=b"}, "environment.allow_extra"},
			{"pass-env", []string{"--pass-env", "LANG"}, "environment.allow_extra"},
		}
		for _, tc := range cases {
			m := s.marker("strict-" + tc.name)
			args := append(append([]string{"--policy", "strict"}, tc.flags...), "--", "/usr/bin/touch", m)
			wantRefused(t, "strict "+strings.Join(tc.flags, " "), s.run(args...), m, tc.field)
		}
		m := s.marker("strict-plain")
		mustSucceed(t, s.run("--policy", "strict", "--", "/usr/bin/touch", m), "strict without widening flags")
	})
}

// build: the Go module cache of $HOME is visible read-only, GOPROXY=off (no network), and
// PATH starts with the cargo and go bin directories of $HOME.
func TestBuildProfile(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		home := filepath.Join(s.base, "home")
		mod := filepath.Join(home, "go/pkg/mod/example.com/m@v1.0.0")
		must(t, os.MkdirAll(mod, 0o755))
		must(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m-"+s.id+"\n"), 0o644))
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { s.chown(p); return nil })
		cache := filepath.Join(home, "go/pkg/mod")
		before := treeDigest(t, cache)
		r := s.rawRunEnv([]string{"HOME=" + home}, "exec", "--policy", "build", "--workspace", s.ws, "--", "/bin/sh", "-c",
			`cat "$1/go.mod"
(echo x >> "$1/go.mod") 2>/dev/null && echo WROTE-cache
touch "$2/gosbx-it-new" 2>/dev/null && echo CREATED-cache
echo "GOPROXY[$GOPROXY]"
echo "GOMODCACHE[$GOMODCACHE]"
echo "PATH[$PATH]"`, "_", mod, cache)
		mustSucceed(t, r, "build probes")
		if !strings.Contains(r.stdout, "module example.com/m-"+s.id) {
			t.Errorf("build: the module cache is not visible:\n%v", r)
		}
		if strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "CREATED") {
			t.Errorf("build: the module cache is writable:\n%s", r.stdout)
		}
		if d := digestDiff(before, treeDigest(t, cache)); len(d) > 0 {
			t.Errorf("build: the module cache changed on the host: %v", d)
		}
		if !strings.Contains(r.stdout, "GOPROXY[off]") {
			t.Errorf("build: GOPROXY is not off:\n%s", r.stdout)
		}
		if !strings.Contains(r.stdout, "GOMODCACHE["+cache+"]") {
			t.Errorf("build: GOMODCACHE is not %s:\n%s", cache, r.stdout)
		}
		if want := "PATH[" + home + "/.cargo/bin:" + home + "/go/bin:"; !strings.Contains(r.stdout, want) {
			t.Errorf("build: PATH does not start with the cargo and go bin dirs (%s):\n%s", want, r.stdout)
		}
	})
}
