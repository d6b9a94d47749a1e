package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/config"
)

func TestHostsContent(t *testing.T) {
	got := string(hostsContent([]byte("127.0.0.1 localhost"), "box.example"))
	if !strings.HasPrefix(got, "127.0.0.1 localhost\n") || !strings.HasSuffix(got, "\n127.0.1.1\tbox.example box\n") {
		t.Errorf("hostsContent: %q", got)
	}
	if got := string(hostsContent(nil, "gosbx")); !strings.HasSuffix(got, "127.0.1.1\tgosbx\n") {
		t.Errorf("hostsContent of an empty file: %q", got)
	}
}

func TestShowing(t *testing.T) {
	b := func(src, dst string) specs.Mount { return specs.Mount{Type: "bind", Source: src, Destination: dst} }
	for _, c := range []struct {
		mounts []specs.Mount
		at     int
		exact  bool
	}{
		{[]specs.Mount{b("/etc", "/etc")}, 0, false},
		{[]specs.Mount{b("/", "/"), b("/etc", "/etc")}, 1, false},
		{[]specs.Mount{b("/etc", "/etc"), b("/etc/hosts", "/etc/hosts")}, 1, true},
		{[]specs.Mount{b("/usr", "/usr")}, -1, false},
		{[]specs.Mount{b("/etc", "/etc"), {Type: "tmpfs", Source: "tmpfs", Destination: "/etc"}}, -1, false},
		{[]specs.Mount{b("/srv/etc", "/etc")}, -1, false},
	} {
		at, exact := showing(c.mounts, "/etc/hosts")
		if at != c.at || exact != c.exact {
			t.Errorf("showing(%v) = %d, %v; want %d, %v", c.mounts, at, exact, c.at, c.exact)
		}
	}
}

// TestWithHostsFile: a spec with a UTS namespace that shows /etc gets a read-only bind
// of a file holding the host's hosts and its name; one without a UTS namespace, or with
// egress, is left as it is.
func TestWithHostsFile(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	os.Chmod(os.Getenv("XDG_RUNTIME_DIR"), 0o700)
	mk := func(ns ...specs.LinuxNamespaceType) *config.Config {
		c := &config.Config{Hostname: "gosbx", Linux: &config.Linux{}, Mounts: []specs.Mount{{Type: "bind", Source: "/etc", Destination: "/etc"}}}
		for _, n := range ns {
			c.Linux.Namespaces = append(c.Linux.Namespaces, specs.LinuxNamespace{Type: n})
		}
		return c
	}
	c := mk(specs.UTSNamespace)
	withHostsFile(c)
	if len(c.Mounts) != 2 {
		t.Fatalf("mounts: %v", c.Mounts)
	}
	m := c.Mounts[1]
	b, err := os.ReadFile(m.Source)
	if err != nil || !strings.Contains(string(b), "127.0.1.1\tgosbx\n") || m.Destination != "/etc/hosts" || !strings.Contains(strings.Join(m.Options, ","), "ro") {
		t.Errorf("the hosts bind: %+v: %q %v", m, b, err)
	}
	if filepath.Dir(filepath.Dir(m.Source)) != filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "gosbx") {
		t.Errorf("the hosts file %s is not in the runtime directory", m.Source)
	}
	for _, c := range []*config.Config{mk(), mk(specs.UTSNamespace)} {
		if c.Linux.Namespaces != nil {
			c.Egress = &config.Egress{}
		}
		withHostsFile(c)
		if len(c.Mounts) != 1 {
			t.Errorf("no UTS namespace, or egress: mounts %v", c.Mounts)
		}
	}
}

func BenchmarkWithHostsFile(b *testing.B) {
	b.Setenv("XDG_RUNTIME_DIR", b.TempDir())
	os.Chmod(os.Getenv("XDG_RUNTIME_DIR"), 0o700)
	for i := 0; i < b.N; i++ {
		c := &config.Config{Hostname: "gosbx", Linux: &config.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.UTSNamespace}}},
			Mounts: []specs.Mount{{Type: "bind", Source: "/etc", Destination: "/etc"}}}
		withHostsFile(c)
	}
}
