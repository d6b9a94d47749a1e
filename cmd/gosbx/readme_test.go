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
