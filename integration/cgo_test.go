package integration

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A program linked with cgo cannot clear the capabilities of its init's other threads
// (syscall.AllThreadsSyscall is refused: ENOTSUP), which then kept them in the
// sandbox's user namespace for the sandbox's life: its one-shot launch must stop with
// 125 at "limit capabilities", naming the fix, before the command runs (fail closed;
// found by a new user's trial, examples/run built with the default CGO_ENABLED=1).
func TestCgoProgramRefused(t *testing.T) {
	requireBinary(t)
	if os.Geteuid() != 0 {
		t.Skip("root only (the library program runs as the test's user)")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatal("gcc is needed to link a program with cgo (.ci/run installs it)")
	}
	s := newSandbox(t, rootCaller)
	bin := buildProgram(t, s, "run-cgo", "./examples/run", "CGO_ENABLED=1")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.Command("go", "version", "-m", bin).Output(); err != nil || !strings.Contains(string(out), "CGO_ENABLED=1") {
		t.Fatalf("the program is not built with cgo: %v\n%s", err, out)
	}
	marker := filepath.Join(s.ws, "ran")
	run := exec.CommandContext(ctx, bin, s.ws, "sh", "-c", "touch "+marker)
	out, err := run.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 || !strings.Contains(string(out), "limit capabilities") || !strings.Contains(string(out), "CGO_ENABLED=0") {
		t.Errorf("a cgo program's launch: %v, want exit 125 at limit capabilities naming CGO_ENABLED=0\n%s", err, out)
	}
	if _, err := os.Lstat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran in a cgo program's sandbox (%s: %v)", marker, err)
	}
}

// A CGO_ENABLED=0 program with a stand-in cgo runtime (ebitengine/purego's
// internal/fakecgo sets the runtime's iscgo without runtime/cgo) is refused the same
// way: its init's syscall.AllThreadsSyscall would panic after the command ran (from an
// attack review: the build tag said no cgo). Built from the module cache (GOPROXY=off):
// skipped when purego v0.9.1 is not there.
func TestFakeCgoProgramRefused(t *testing.T) {
	requireBinary(t)
	if os.Geteuid() != 0 {
		t.Skip("root only (the library program runs as the test's user)")
	}
	root, err := filepath.Abs("..")
	must(t, err)
	s := newSandbox(t, rootCaller)
	mod := filepath.Join(s.base, "pg")
	must(t, os.Mkdir(mod, 0o755))
	src, err := os.ReadFile(filepath.Join(root, "examples", "run", "main.go"))
	must(t, err)
	main := strings.Replace(string(src), "import (\n", "import (\n\t_ \"github.com/ebitengine/purego\"\n", 1)
	must(t, os.WriteFile(filepath.Join(mod, "main.go"), []byte(main), 0o644))
	must(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.test/pg\n\ngo 1.26\n\nrequire (\n\tgithub.com/gosbx/gosbx v0.0.0\n\tgithub.com/ebitengine/purego v0.9.1\n)\n\nreplace github.com/gosbx/gosbx => "+root+"\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(s.base, "run-purego")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir = mod
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOPROXY=off", "GOFLAGS=-mod=mod", "GOSUMDB=off")
	if out, err := build.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "purego") && strings.Contains(string(out), "GOPROXY=off") {
			t.Skipf("github.com/ebitengine/purego v0.9.1 is not in the module cache: %s", out)
		}
		t.Fatalf("go build %s with purego: %v\n%s", bin, err, out)
	}
	if out, err := exec.Command("go", "version", "-m", bin).Output(); err != nil || !strings.Contains(string(out), "CGO_ENABLED=0") || !strings.Contains(string(out), "purego") {
		t.Fatalf("the program is not a CGO_ENABLED=0 build with purego: %v\n%s", err, out)
	}
	marker := filepath.Join(s.ws, "ran")
	out, err := exec.CommandContext(ctx, bin, s.ws, "sh", "-c", "touch "+marker).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 || !strings.Contains(string(out), "limit capabilities") || !strings.Contains(string(out), "CGO_ENABLED=0") {
		t.Errorf("a fake-cgo program's launch: %v, want exit 125 at limit capabilities naming CGO_ENABLED=0\n%s", err, out)
	}
	if _, err := os.Lstat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran in a fake-cgo program's sandbox (%s: %v)", marker, err)
	}
}

// A pool in a program linked with cgo is refused by NewPool itself (a *SetupError at
// "limit capabilities", exit 125 in examples/pool), not made and then failing at every
// command: a server learns it at its start (new-user trial, item 11). With no command on
// stdin, a pool that was made exits 0.
func TestCgoPoolRefusedAtNewPool(t *testing.T) {
	requireBinary(t)
	if os.Geteuid() != 0 {
		t.Skip("root only (the library program runs as the test's user)")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatal("gcc is needed to link a program with cgo (.ci/run installs it)")
	}
	s := newSandbox(t, rootCaller)
	bin := buildProgram(t, s, "pool-cgo", "./examples/pool", "CGO_ENABLED=1")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, s.ws).CombinedOutput() // stdin: /dev/null
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 || !strings.Contains(string(out), "limit capabilities") || !strings.Contains(string(out), "CGO_ENABLED=0") {
		t.Errorf("a cgo program's NewPool: %v, want exit 125 at limit capabilities naming CGO_ENABLED=0\n%s", err, out)
	}
}
