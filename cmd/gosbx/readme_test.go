package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's install step works as written for a root caller (no sudo: root
// machines and containers have none), and leaves the binary mode 0755.
func TestReadmeInstallStep(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var step string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "bin/gosbx /usr/local/bin/gosbx") {
			step, _, _ = strings.Cut(l, "#")
			break
		}
	}
	f := strings.Fields(step)
	if len(f) == 0 || f[0] != "install" {
		t.Fatalf("README's install step %q: want it to start with install (no sudo)", step)
	}
	if os.Geteuid() != 0 {
		t.Skip("runs the step as root")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "gosbx-built")
	if err := os.WriteFile(src, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "usr-local-bin-gosbx")
	for i := range f {
		switch f[i] {
		case "bin/gosbx":
			f[i] = src
		case "/usr/local/bin/gosbx":
			f[i] = dst
		}
	}
	if out, err := exec.Command(f[0], f[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%q: %v\n%s", f, err, out)
	}
	if st, err := os.Stat(dst); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("installed binary: %v, want mode 0755 (%v)", st, err)
	}
}

// The README's library program ("The core of the first") compiles with CGO_ENABLED=0
// as a main package, with the imports it names, and completes killed launches' journals
// before Compile, with the trees it lets the sandbox write (trial finding T5: README
// named cleanup.CompleteJournals() without its argument, and its program did not call it).
func TestReadmeLibraryProgram(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "The core of the first:\n\n```go\n")
	prog, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatal("README: no go block after \"The core of the first:\"")
	}
	journals, compile := strings.Index(prog, "cleanup.CompleteJournals([]string{ws})"), strings.Index(prog, "policy.Compile(")
	if journals < 0 || compile < 0 || journals > compile {
		t.Errorf("README's program: want cleanup.CompleteJournals([]string{ws}) before policy.Compile:\n%s", prog)
	}
	if strings.Contains(string(b), "CompleteJournals()") {
		t.Error("README names cleanup.CompleteJournals() without its argument")
	}
	if testing.Short() {
		t.Skip("builds the program")
	}
	dir, err := os.MkdirTemp("../..", ".readme-program-") // in the module: its go.mod and go.sum
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	imports := []string{"fmt", "log", "os", "github.com/gosbx/gosbx/nsinit", "github.com/gosbx/gosbx/nsinit/cleanup", "github.com/gosbx/gosbx/policy"}
	src := "package main\n\nimport (\n\t\"" + strings.Join(imports, "\"\n\t\"") + "\"\n)\n\n" +
		"var _, _, _ = fmt.Sprint, log.Print, os.Exit // whichever the program leaves unused\n\n" + prog
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "prog"), "./"+filepath.Base(dir))
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("README's program does not build: %v\n%s\n%s", err, out, src)
	}
}

// README's build step names the Go version go.mod asks for (trial finding T10: an
// older 1.26 toolchain stops, or downloads one, and README named none).
func TestReadmeGoVersion(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var v string
	for _, l := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "go" {
			v = f[1]
		}
	}
	if v == "" {
		t.Fatal("go.mod has no go line")
	}
	if want := "Go " + v + " or later"; !strings.Contains(string(readme), want) {
		t.Errorf("README does not say %q (go.mod: go %s)", want, v)
	}
}
