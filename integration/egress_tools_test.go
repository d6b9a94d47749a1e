package integration

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// writeZip writes a zip of files (name → content) at p.
func writeZip(t *testing.T, p string, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for name, content := range files {
		w, err := z.Create(name)
		must(t, err)
		_, err = w.Write([]byte(content))
		must(t, err)
	}
	must(t, z.Close())
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, b.Bytes(), 0o644))
	return b.Bytes()
}

// toolsTree lays out, under root, what a plain file server needs to be a package index
// for pip (a PEP 503 simple index and a wheel), a git repository over dumb HTTP, and a
// Go module proxy (GOPROXY protocol).
func toolsTree(t *testing.T, root string) {
	t.Helper()
	whl := writeZip(t, filepath.Join(root, "files", "demo-1.0-py3-none-any.whl"), map[string]string{
		"demo/__init__.py":                 "X = 1\n",
		"demo-1.0.dist-info/METADATA":      "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
		"demo-1.0.dist-info/WHEEL":         "Wheel-Version: 1.0\nGenerator: gosbx-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"demo-1.0.dist-info/RECORD":        "",
		"demo-1.0.dist-info/top_level.txt": "demo\n",
	})
	sum := sha256.Sum256(whl)
	must(t, os.MkdirAll(filepath.Join(root, "simple", "demo"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "simple", "demo", "index.html"), []byte(fmt.Sprintf(
		`<html><body><a href="../../files/demo-1.0-py3-none-any.whl#sha256=%s">demo-1.0-py3-none-any.whl</a></body></html>`,
		hex.EncodeToString(sum[:]))), 0o644))

	mod := filepath.Join(root, "goproxy", "example.test", "m", "@v")
	must(t, os.MkdirAll(mod, 0o755))
	must(t, os.WriteFile(filepath.Join(mod, "list"), []byte("v1.0.0\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(mod, "v1.0.0.info"), []byte(`{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`), 0o644))
	must(t, os.WriteFile(filepath.Join(mod, "v1.0.0.mod"), []byte("module example.test/m\n\ngo 1.21\n"), 0o644))
	writeZip(t, filepath.Join(mod, "v1.0.0.zip"), map[string]string{
		"example.test/m@v1.0.0/go.mod": "module example.test/m\n\ngo 1.21\n",
		"example.test/m@v1.0.0/m.go":   "package m\n\nconst X = 1\n",
	})

	src := filepath.Join(root, "src")
	repo := filepath.Join(root, "repo.git")
	for _, c := range [][]string{
		{"init", "-q", src},
		{"-C", src, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first"},
		{"clone", "-q", "--bare", src, repo},
		{"-C", repo, "update-server-info"},
	} {
		if out, err := exec.Command("git", c...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", c, err, out)
		}
	}
}

const toolsScript = `
p=$1
r() { n=$1; shift; out=$("$@" 2>&1); rc=$?; printf '%s=rc=%s %s\n' "$n" $rc "$(printf %s "$out" | tail -n 3 | tr '\n' ' ')"; }
export GOPATH=/tmp/gopath GOCACHE=/tmp/gocache GOSUMDB=off GOTOOLCHAIN=local GOFLAGS=-modcacherw
r pip python3 -m pip download --disable-pip-version-check --no-deps --index-url http://pkg.test:$p/simple/ --trusted-host pkg.test -d /tmp/dl demo==1.0
r pip-file ls /tmp/dl
r git git clone -q http://pkg.test:$p/repo.git /tmp/repo
r git-log git -C /tmp/repo log --format=%s
r go env GOPROXY=http://pkg.test:$p/goproxy /usr/local/go/bin/go mod download -json example.test/m@v1.0.0
r pip-denied python3 -m pip download --disable-pip-version-check --no-deps --index-url http://evil.test/simple/ --trusted-host evil.test -d /tmp/dl2 demo==1.0
r git-denied git clone -q http://evil.test/repo.git /tmp/repo2
r go-denied env GOPATH=/tmp/gopath2 GOPROXY=http://evil.test/goproxy /usr/local/go/bin/go mod download -json example.test/m@v1.0.0
`

// pip download from a local simple index, git clone over http and go mod download from
// a local GOPROXY work through --net proxy for an allowed name, with no setting but the
// proxy variables gosbx sets, and fail at once, naming the rule, for a name not allowed.
func TestEgressTools(t *testing.T) {
	requireBinary(t)
	for _, tool := range []string{"git", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s: %v", tool, err)
		}
	}
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		t.Skipf("no /usr/local/go/bin/go: %v", err)
	}
	bin, err := testnetBinary()
	if err != nil {
		t.Fatal(err)
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		root := filepath.Join(s.base, "srv")
		toolsTree(t, root)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		srv := &http.Server{Handler: http.FileServer(http.Dir(root))}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		port := l.Addr().(*net.TCPAddr).Port
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--allow-host", fmt.Sprintf("pkg.test:%d", port), "--allow-host", fmt.Sprintf("127.0.0.1:%d", port),
			"--", shellPath, "-c", toolsScript, "_", fmt.Sprint(port))
		cmd.Path, cmd.Args = replaceBinary(cmd, bin)
		cmd.Env = append(cmd.Env, "GOSBX_TEST_HOSTS=pkg.test=127.0.0.1,evil.test=127.0.0.1")
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "tools script")
		got := map[string]string{}
		for _, line := range strings.Split(r.stdout, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				got[k] = v
			}
		}
		for k, want := range map[string]string{
			"pip":        "rc=0",
			"pip-file":   "rc=0 demo-1.0-py3-none-any.whl",
			"git":        "rc=0",
			"git-log":    "rc=0 first",
			"go":         "rc=0",
			"pip-denied": "rc=1",
			"git-denied": "rc=128",
			"go-denied":  "rc=1",
		} {
			if !strings.HasPrefix(got[k], want) {
				t.Errorf("%s: %q, want %q…", k, got[k], want)
			}
		}
		if !strings.Contains(got["go"], `"Sum": "h1:`) || !strings.Contains(got["go"], `"GoModSum": "h1:`) {
			t.Errorf("go mod download: %q", got["go"])
		}
		// git shows the 403's body; go the status; pip only that it found nothing (the
		// reason is on gosbx's stderr)
		if !strings.Contains(got["git-denied"], "blocked by gosbx policy: host evil.test:80 not in network.allow") || !strings.Contains(got["go-denied"], "403 Forbidden") {
			t.Errorf("the denials do not say why: git %q, go %q", got["git-denied"], got["go-denied"])
		}
		if n := strings.Count(r.stderr, "blocked by gosbx policy: host evil.test:80 not in network.allow"); n < 3 {
			t.Errorf("%d denials on stderr, want one per tool at least:\n%s", n, r.stderr)
		}
		if r.elapsed > runLimit/2 {
			t.Errorf("took %v", r.elapsed)
		}
	})
}
