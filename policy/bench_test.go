package policy

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gosbx/gosbx/nsinit/config"
)

// The launcher's policy step, as `gosbx exec --workspace DIR -- /bin/true` runs it
// (cmd/gosbx/exec.go execute): CurrentHost, Effective with the default policy, Build.
func launchPolicy(ws string) (*config.Config, error) {
	h, err := CurrentHost()
	if err != nil {
		return nil, err
	}
	o := Options{Workspace: ws, Args: []string{"/bin/true"}}
	eff, err := Effective(o, h)
	if err != nil {
		return nil, err
	}
	return Build(eff, o.Args, h)
}

// benchWorkspace makes a workspace under dir: "plain" (a few files and directories) or
// "git" (the same, holding a repository: .git with HEAD, config, objects, refs and
// hooks, no index).
func benchWorkspace(tb testing.TB, dir, kind string) string {
	tb.Helper()
	ws := filepath.Join(dir, kind)
	for i := range 8 {
		d := filepath.Join(ws, "src", "pkg"+strconv.Itoa(i), "sub")
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		for j := range 4 {
			if err := os.WriteFile(filepath.Join(d, "f"+strconv.Itoa(j)+".go"), nil, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(ws, "node_modules", "x"), 0o755); err != nil {
		tb.Fatal(err)
	}
	if kind == "git" {
		gd := filepath.Join(ws, ".git")
		for _, d := range []string{"objects/pack", "refs/heads", "hooks", "info", "logs"} {
			if err := os.MkdirAll(filepath.Join(gd, d), 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		files := map[string]string{
			"HEAD":        "ref: refs/heads/main\n",
			"config":      "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n",
			"description": "x\n",
		}
		for f, c := range files {
			if err := os.WriteFile(filepath.Join(gd, f), []byte(c), 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
	ws, err := filepath.EvalSymlinks(ws)
	if err != nil {
		tb.Fatal(err)
	}
	return ws
}

func benchLaunchPolicy(b *testing.B, kind string) {
	ws := benchWorkspace(b, b.TempDir(), kind)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := launchPolicy(ws); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLaunchPolicyPlain(b *testing.B) { benchLaunchPolicy(b, "plain") }
func BenchmarkLaunchPolicyGit(b *testing.B)   { benchLaunchPolicy(b, "git") }

// TestLaunchPolicyCold times the first policy step of a fresh process, as the launcher
// runs it once per launch. Only when GOSBX_COLD=plain or git, in a process of its own:
//
//	go test -c -o /tmp/policy.test ./policy
//	GOSBX_COLD=git /tmp/policy.test -test.run '^TestLaunchPolicyCold$' -test.v
func TestLaunchPolicyCold(t *testing.T) {
	kind := os.Getenv("GOSBX_COLD")
	if kind == "" {
		t.Skip("set GOSBX_COLD=plain or git, in a fresh process")
	}
	ws := benchWorkspace(t, t.TempDir(), kind)
	t0 := time.Now()
	h, err := CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	o := Options{Workspace: ws, Args: []string{"/bin/true"}}
	eff, err := Effective(o, h)
	if err != nil {
		t.Fatal(err)
	}
	t2 := time.Now()
	if _, err := Build(eff, o.Args, h); err != nil {
		t.Fatal(err)
	}
	t3 := time.Now()
	t.Logf("cold %s: CurrentHost %v, Effective %v, Build %v, total %v", kind, t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t3.Sub(t0))
}

// BenchmarkLaunchConfig is the launcher's share of a launch's config work, as `gosbx
// exec --workspace DIR -- /bin/true` does it: the policy step (which compiles the
// seccomp filter), the config's validation and its encoding for the init; and the
// init's decoding. docs/decisions.md compares it with the annotations it replaced.
func BenchmarkLaunchConfig(b *testing.B) {
	ws := filepath.Join(b.TempDir(), "plain")
	if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		c, err := launchPolicy(ws)
		if err == nil {
			err = c.Validate()
		}
		if err == nil {
			_, err = config.Decode(config.Encode(c))
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
