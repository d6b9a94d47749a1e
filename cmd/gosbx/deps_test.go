package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStartPathDeps: packages whose inits every start of gosbx (the launcher, and the
// init stage again) would pay stay out of the binary (docs/decisions.md, "Start path
// (issue 20)"): containerd/cgroups' cgroup1 and cgroup2 (protobuf, cilium/ebpf, godbus),
// a second YAML library (go.yaml.in/yaml/v3 is the one; v4's inits cost more, goccy's
// parser changes values), debug/elf (with DWARF, zlib and zstd: policy reads the ELF
// headers it needs itself), and any crypto package: crypto/rand and crypto/sha256 link
// the FIPS crypto module, 16 inits (internal/namehash is SHA-256 for names; sandbox ids
// come from getrandom(2)) (docs/decisions.md, "Speed, eighth attempt: package inits").
func TestStartPathDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, bad := range []string{"google.golang.org/protobuf/", "github.com/cilium/ebpf",
			"github.com/godbus/", "github.com/coreos/go-systemd", "github.com/containerd/cgroups/v3/",
			"sigs.k8s.io/yaml", "go.yaml.in/yaml/v2", "go.yaml.in/yaml/v4", "github.com/goccy/", "gopkg.in/yaml", "crypto/",
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

// Budgets of the package inits every start of gosbx runs (the launcher, every
// session client, the init stage again), as GODEBUG=inittrace=1 counts them for
// `gosbx version`: allocations are deterministic where time is not. Measured with Go
// 1.26: 413 allocations, 47.5 KB in 38 inits, of which go.yaml.in/yaml/v3's 276 and
// 25.7 KB (468, 55.6 KB in 55 before the eighth speed attempt: docs/decisions.md,
// "Speed, eighth attempt: package inits"). A new dependency whose init allocates, or a
// package-level map, regexp or sync.OnceValue, shows here.
const (
	initAllocBudget = 430
	initByteBudget  = 50 << 10
)

// ownInitAllocs are the allocations gosbx's own packages may make at init: none, but
// for two sync.OnceValue in seccomp (syscall numbers, errno names) and the
// narrowingFlags map of the session client (sessionexec.go).
var ownInitAllocs = map[string]int{"github.com/gosbx/gosbx/seccomp": 4, "main": 2}

// TestStartInits: the package inits of a start stay within their budget, gosbx's own
// packages allocate nothing at init (ownInitAllocs aside), and no package whose init
// was taken off the start path (a second YAML library's, the crypto module's) comes
// back (TestStartPathDeps checks the links; this, what runs).
func TestStartInits(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gosbx")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "version")
	cmd.Env = []string{"GODEBUG=inittrace=1", "PATH=/usr/bin:/bin"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("gosbx version: %v\n%s", err, stderr.String())
	}
	var allocs, bytes, n int
	for _, l := range strings.Split(stderr.String(), "\n") {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(l)
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		pkg := f[1]
		b, err1 := strconv.Atoi(f[7])
		a, err2 := strconv.Atoi(f[9])
		if err1 != nil || err2 != nil {
			t.Fatalf("unreadable inittrace line %q", l)
		}
		n++
		allocs += a
		bytes += b
		for _, bad := range []string{"go.yaml.in/yaml/v2", "go.yaml.in/yaml/v4", "github.com/goccy/", "gopkg.in/yaml",
			"sigs.k8s.io/yaml", "google.golang.org/protobuf/",
			"github.com/cilium/ebpf", "github.com/godbus/", "crypto/"} {
			if strings.HasPrefix(pkg, bad) {
				t.Errorf("%s runs its init at every start", pkg)
			}
		}
		if (pkg == "main" || strings.HasPrefix(pkg, "github.com/gosbx/gosbx/")) && a > ownInitAllocs[pkg] {
			t.Errorf("%s allocates %d times (%d bytes) at init; want at most %d: build it on first use (internal/lazy, a switch, a function)",
				pkg, a, b, ownInitAllocs[pkg])
		}
	}
	if n < 20 {
		t.Fatalf("only %d inittrace lines read:\n%s", n, stderr.String())
	}
	t.Logf("%d package inits: %d allocations, %d bytes", n, allocs, bytes)
	if allocs > initAllocBudget || bytes > initByteBudget {
		t.Errorf("package inits at every start: %d allocations, %d bytes; budget %d, %d", allocs, bytes, initAllocBudget, initByteBudget)
	}
}
