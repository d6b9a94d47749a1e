package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStartPathDeps: packages whose inits every start of gosbx (the launcher, and the
// init stage again) would pay stay out of the binary (docs/decisions.md, "Start path
// (issue 20)"): containerd/cgroups' cgroup1 and cgroup2 (protobuf, cilium/ebpf, godbus),
// a second YAML library, the FIPS crypto module of crypto/rand.
func TestStartPathDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, bad := range []string{"google.golang.org/protobuf/", "github.com/cilium/ebpf",
			"github.com/godbus/", "github.com/coreos/go-systemd", "github.com/containerd/cgroups/v3/",
			"sigs.k8s.io/yaml", "go.yaml.in/yaml/v2", "gopkg.in/yaml", "crypto/rand"} {
			if strings.HasPrefix(pkg, bad) {
				t.Errorf("gosbx links %s", pkg)
			}
		}
	}
}
