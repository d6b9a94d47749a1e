package config

import (
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Validate refuses, naming the field, every config the launcher cannot build as
// asked; a Pool's template (no process) and the full config pass.
func TestValidate(t *testing.T) {
	if err := fullConfig().Validate(); err != nil {
		t.Fatalf("a full config: %v", err)
	}
	template := fullConfig()
	template.Process = nil
	if err := template.Validate(); err != nil {
		t.Errorf("a template without a process: %v", err)
	}
	without := func(typ specs.LinuxNamespaceType) func(*Config) {
		return func(c *Config) {
			var ns []specs.LinuxNamespace
			for _, n := range c.Linux.Namespaces {
				if n.Type != typ {
					ns = append(ns, n)
				}
			}
			c.Linux.Namespaces = ns
		}
	}
	mem := int64(1)
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no linux", func(c *Config) { c.Linux = nil }, "linux"},
		{"no user ns", without(specs.UserNamespace), "required"},
		{"no mount ns", without(specs.MountNamespace), "required"},
		{"no pid ns", without(specs.PIDNamespace), "required"},
		{"namespace path", func(c *Config) { c.Linux.Namespaces[1].Path = "/proc/1/ns/mnt" }, "/proc/1/ns/mnt"},
		{"unknown namespace", func(c *Config) {
			c.Linux.Namespaces = append(c.Linux.Namespaces, specs.LinuxNamespace{Type: specs.TimeNamespace})
		}, "unsupported"},
		{"no uid mappings", func(c *Config) { c.Linux.UIDMappings = nil }, "mappings"},
		{"no gid mappings", func(c *Config) { c.Linux.GIDMappings = nil }, "mappings"},
		{"no args", func(c *Config) { c.Process.Args = nil }, "no args"},
		{"apparmor", func(c *Config) { c.Process.ApparmorProfile = "x" }, "process.apparmorProfile"},
		{"terminal", func(c *Config) { c.Process.Terminal = true }, "process.terminal"},
		{"capabilities", func(c *Config) {
			c.Process.Capabilities = &specs.LinuxCapabilities{Effective: []string{"CAP_SYS_ADMIN"}}
		}, "capabilities"},
		{"additional gids", func(c *Config) { c.Process.User.AdditionalGids = []uint32{0} }, "additionalGids"},
		{"user not mapped", func(c *Config) { c.Process.User.UID = 0 }, "id mappings"},
		{"mount idmap", func(c *Config) {
			c.Mounts[0].UIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1000, Size: 1}}
		}, "uidMappings"},
		{"seccomp not compiled", func(c *Config) { c.Linux.Filter = nil }, "not compiled"},
		{"seccomp flags", func(c *Config) { c.Linux.Seccomp.Flags = []specs.LinuxSeccompFlag{"SECCOMP_FILTER_FLAG_LOG"} }, "flags"},
		{"cpuset", func(c *Config) { c.Linux.Resources = &specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: "0"}} }, "cpu fields"},
		{"devices cgroup", func(c *Config) {
			c.Linux.Resources = &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Access: "rwm"}}}
		}, "linux.resources.devices"},
		{"memory reservation", func(c *Config) {
			c.Linux.Resources = &specs.LinuxResources{Memory: &specs.LinuxMemory{Reservation: &mem}}
		}, "memory fields"},
		{"unknown required limit", func(c *Config) { c.Limits.Required = []string{"io"} }, "io"},
		{"empty id range", func(c *Config) { c.RootID.Range.Count = 0 }, "empty"},
		{"id range below 65536", func(c *Config) { c.RootID.Range.Base = 1000 }, "below 65536"},
		{"id range past MaxID", func(c *Config) { c.RootID.Range = IDRange{Base: MaxID, Count: 2} }, "past"},
		{"id range, two mappings", func(c *Config) {
			c.Linux.UIDMappings = append(c.Linux.UIDMappings, specs.LinuxIDMapping{ContainerID: 0, HostID: 0, Size: 1})
			c.Process = nil
		}, "exactly one"},
		{"relative symlink path", func(c *Config) { c.Symlinks[0].Path = "bin" }, "absolute"},
		{"unknown cleanup kind", func(c *Config) { c.Cleanup[0].Kind = "absent" }, "unknown kind"},
		{"relative cleanup path", func(c *Config) { c.Cleanup[0].Path = "w/.git" }, "clean path"},
		{"unclean cleanup path", func(c *Config) { c.Cleanup[0].Path = "/w/../etc" }, "clean path"},
		{"cleanup of /", func(c *Config) { c.Cleanup[2].Path = "/" }, "clean path"},
		{"relative directory to make", func(c *Config) { c.MakeDirs[0] = "w/.git/hooks" }, "canonical"},
		{"directory to make /", func(c *Config) { c.MakeDirs[0] = "/" }, "canonical"},
		{"egress without a network namespace", func(c *Config) { c.Linux.Namespaces = c.Linux.Namespaces[:3]; c.Publish, c.HostPorts = nil, nil }, "egress needs a network namespace"},
		{"publish without a network namespace", func(c *Config) { c.Linux.Namespaces = c.Linux.Namespaces[:3]; c.HostPorts = nil }, "publish needs a network namespace"},
		{"bad egress pattern", func(c *Config) { c.Egress.Allow = []string{"*"} }, "network.allow[0]"},
		{"bad publish address", func(c *Config) { c.Publish[0].HostIP = "localhost" }, "want an IP address"},
		{"publish port 0", func(c *Config) { c.Publish[0].Port = 0 }, "two ports"},
		{"publish a proxy port", func(c *Config) { c.Publish[0].Port = 3128 }, "port 3128 inside is the egress proxy's own"},
		{"publish the DNS stub", func(c *Config) { c.Publish[0].Port = 53 }, "port 53 inside is the egress proxy's own"},
		{"publish capture :80", func(c *Config) { c.Publish[0].Port = 80 }, "port 80 inside is the egress proxy's own"},
		{"publish a host port", func(c *Config) { c.Publish[0] = Publish{HostIP: "0.0.0.0", HostPort: 15432, Port: 5432} }, "port 5432 inside is a host port"},
		{"host port twice", func(c *Config) { c.HostPorts = []uint16{5432, 5432} }, "each once"},
		{"host port of the proxy", func(c *Config) { c.HostPorts = []uint16{3128} }, "none of the proxy's"},
		{"capture port of the proxy", func(c *Config) { c.Egress.CapturePorts = []uint16{443} }, "capture port 443"},
		{"capture port twice", func(c *Config) { c.Egress.CapturePorts = []uint16{8443, 8443} }, "capture port 8443"},
		{"capture port of a host port", func(c *Config) { c.Egress.CapturePorts = []uint16{5432} }, "capture port 5432"},
		{"capture port of a forward", func(c *Config) { c.Egress.CapturePorts = []uint16{8000} }, "capture port 8000"},
		{"too many capture ports", func(c *Config) {
			c.Egress.CapturePorts = nil
			for p := 10000; p <= 10000+MaxCapturePorts; p++ {
				c.Egress.CapturePorts = append(c.Egress.CapturePorts, uint16(p))
			}
		}, "capture ports: at most"},
		{"host ports without a network namespace", func(c *Config) {
			c.Linux.Namespaces = c.Linux.Namespaces[:3]
			c.Egress, c.Publish = nil, nil
		}, "host ports need a network namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fullConfig()
			tt.mutate(c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v; want an error naming %q", err, tt.want)
			}
		})
	}
	if err := (*Config)(nil).Validate(); err == nil {
		t.Error("a nil config passed")
	}
}

// Without egress nothing of the proxy listens inside: a server of the sandbox may be
// published at 3128 or 53.
func TestValidatePublishWithoutEgress(t *testing.T) {
	c := fullConfig()
	c.Egress, c.HostPorts = nil, nil
	c.Publish = []Publish{{HostIP: "127.0.0.1", HostPort: 13128, Port: 3128}, {HostIP: "127.0.0.1", HostPort: 1053, Port: 53}}
	if err := c.Validate(); err != nil {
		t.Errorf("publish 3128 and 53 without egress: %v", err)
	}
}
