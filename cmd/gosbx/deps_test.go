package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestStartPathDeps: packages whose inits every start of gosbx (the launcher, and the
// init stage again) would pay stay out of the binary (docs/decisions.md, "Start path
// (issue 20)"): containerd/cgroups' cgroup1 and cgroup2 (protobuf, cilium/ebpf, godbus),
// a second YAML library, the FIPS crypto module of crypto/rand, debug/elf (with DWARF,
// zlib and zstd: policy reads the ELF headers it needs itself).
func TestStartPathDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, bad := range []string{"google.golang.org/protobuf/", "github.com/cilium/ebpf",
			"github.com/godbus/", "github.com/coreos/go-systemd", "github.com/containerd/cgroups/v3/",
			"sigs.k8s.io/yaml", "go.yaml.in/yaml/v2", "gopkg.in/yaml", "crypto/rand",
			"debug/", "compress/", "internal/zstd"} {
			if strings.HasPrefix(pkg, bad) {
				t.Errorf("gosbx links %s", pkg)
			}
		}
	}
}

// TestNoReflectMethod: nothing gosbx links calls a method by name through reflect
// (text/template's field evaluation does; cobra reaches it only through
// SetUsageTemplate, SetHelpTemplate or SetVersionTemplate). Once one such call is
// reachable the linker keeps every exported method of every type that reaches an
// interface: 1.9 MB more binary and ~15 more page faults at every start
// (docs/decisions.md, "Speed, sixth attempt: the launcher's start").
func TestNoReflectMethod(t *testing.T) {
	cmd := exec.Command("go", "build", "-ldflags=-dumpdep", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build -ldflags=-dumpdep: %v\n%.2000s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "<ReflectMethod>") {
			t.Errorf("a method called by name is reachable: %s", l)
		}
	}
}
