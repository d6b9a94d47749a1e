package config

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/egress"
)

// MaxID is the highest id an IDRange may hold: ids of 2^31 and above are read as
// negative numbers by tools such as ps(1), and systemd reserves them (UIDS-GIDS.md).
const MaxID = 2147483647

// Check refuses a range that is empty, starts below 65536 (the ids of accounts and
// nobody) or runs past MaxID.
func (r IDRange) Check() error {
	switch {
	case r.Count == 0:
		return fmt.Errorf("id range %d:%d is empty", r.Base, r.Count)
	case r.Base < 65536:
		return fmt.Errorf("id range %d:%d starts below 65536, among the ids of accounts", r.Base, r.Count)
	case uint64(r.Base)+uint64(r.Count)-1 > MaxID:
		return fmt.Errorf("id range %d:%d runs past %d (ids of 2^31 and above read as negative in ps and others)", r.Base, r.Count, MaxID)
	}
	return nil
}

// knownNamespace reports whether gosbx creates namespaces of type t.
func knownNamespace(t specs.LinuxNamespaceType) bool {
	switch t {
	case specs.UserNamespace, specs.MountNamespace, specs.PIDNamespace, specs.NetworkNamespace,
		specs.IPCNamespace, specs.UTSNamespace, specs.CgroupNamespace:
		return true
	}
	return false
}

// Validate checks that c can be launched as it is, so that nothing asked for is
// silently left out: the linux section with new user, mount and pid namespaces (no
// namespace joined by path) and id mappings; the process (ValidateProcess; a nil
// Process is a Pool's template); mounts without id mappings; only the cgroup resources
// gosbx applies; a compiled Filter for a Seccomp source; a root caller's id range and
// single mappings; absolute symlink paths, cleanup entries of known kinds on canonical
// paths (cleanup.Entry.Check), canonical directories to make. The error says which
// field and why.
func (c *Config) Validate() error {
	if c == nil {
		return errors.New("no config")
	}
	l := c.Linux
	if l == nil {
		return errors.New("the config has no linux section")
	}
	if c.Timeout < 0 {
		return fmt.Errorf("timeout %v is negative", c.Timeout)
	}
	have := map[specs.LinuxNamespaceType]bool{}
	for _, ns := range l.Namespaces {
		if !knownNamespace(ns.Type) {
			return fmt.Errorf("unsupported namespace %q", ns.Type)
		}
		if ns.Path != "" {
			return fmt.Errorf("joining namespace %s (%s) is not supported", ns.Type, ns.Path)
		}
		have[ns.Type] = true
	}
	if !have[specs.UserNamespace] || !have[specs.MountNamespace] || !have[specs.PIDNamespace] {
		return errors.New("the user, mount and pid namespaces are required")
	}
	if len(l.UIDMappings) == 0 || len(l.GIDMappings) == 0 {
		return errors.New("the config has no uid/gid mappings")
	}
	if c.Process != nil {
		if err := c.ValidateProcess(c.Process); err != nil {
			return err
		}
	}
	for _, m := range c.Mounts {
		if len(m.UIDMappings) > 0 || len(m.GIDMappings) > 0 {
			return fmt.Errorf("the mount of %s sets uidMappings or gidMappings, which gosbx does not implement", m.Destination)
		}
	}
	if sc := l.Seccomp; sc != nil {
		if len(l.Filter) == 0 {
			return errors.New("linux.seccomp is set but not compiled (linux.filter is empty): compile it with seccomp.Compile")
		}
		if sc.ListenerPath != "" || sc.ListenerMetadata != "" || len(sc.Flags) > 0 {
			return errors.New("linux.seccomp sets listenerPath or flags, which gosbx does not implement (the filter is always loaded with SECCOMP_FILTER_FLAG_TSYNC)")
		}
	}
	if err := checkResources(l.Resources); err != nil {
		return err
	}
	for _, u := range c.UserCounts {
		if !slices.Contains(UserCountNames, u.Name) {
			return fmt.Errorf("userCounts names %q; want one of %s", u.Name, strings.Join(UserCountNames, ", "))
		}
		if u.Max < 1 {
			return fmt.Errorf("userCounts %s is %d; want at least 1", u.Name, u.Max)
		}
	}
	for _, r := range c.Limits.Required {
		if r != "memory" && r != "pids" && r != "cpu" {
			return fmt.Errorf("limits.required names %q; want memory, pids or cpu", r)
		}
	}
	if id := c.RootID; id != nil {
		if err := id.Range.Check(); err != nil {
			return err
		}
		if len(l.UIDMappings) != 1 || len(l.GIDMappings) != 1 || l.UIDMappings[0].Size != 1 || l.GIDMappings[0].Size != 1 {
			return errors.New("an id range needs exactly one uid and one gid mapping, each of size 1")
		}
	}
	for _, s := range c.Symlinks {
		if !filepath.IsAbs(s.Path) {
			return fmt.Errorf("symlink %q: not an absolute path", s.Path)
		}
	}
	for _, f := range c.Files {
		if err := c.checkFile(f); err != nil {
			return err
		}
	}
	for _, e := range c.Cleanup {
		if err := e.Check(); err != nil {
			return err
		}
	}
	for _, p := range c.Publish {
		if !have[specs.NetworkNamespace] {
			return errors.New("publish needs a network namespace of the sandbox's own")
		}
		if a, err := netip.ParseAddr(p.HostIP); err != nil || a.Zone() != "" || p.HostPort == 0 || p.Port == 0 {
			return fmt.Errorf("publish %s:%d:%d: want an IP address and two ports 1-65535", p.HostIP, p.HostPort, p.Port)
		}
		// the init's own listeners at Port: no server of the sandbox can be published
		// there, and host clients would get the proxy (the sandbox's allow list) or the
		// host's loopback-only service (on HostIP: every interface for 0.0.0.0)
		if c.Egress != nil && slices.Contains([]uint16{EgressDNSPort, EgressHTTPPort, EgressSOCKSPort, CaptureHTTPPort, CaptureTLSPort}, p.Port) {
			return fmt.Errorf("publish %s:%d:%d: port %d inside is the egress proxy's own (53, 80, 443, 1080, 3128), which would serve host clients with the sandbox's allow list; publish the port a server of the sandbox listens on", p.HostIP, p.HostPort, p.Port, p.Port)
		}
		if slices.Contains(c.HostPorts, p.Port) {
			return fmt.Errorf("publish %s:%d:%d: port %d inside is a host port (--host-port %d), a forward to the host's own loopback service, which publishing would re-export on %s; reach it on the host directly", p.HostIP, p.HostPort, p.Port, p.Port, p.Port, p.HostIP)
		}
	}
	if len(c.HostPorts) > 0 && !have[specs.NetworkNamespace] {
		return errors.New("host ports need a network namespace of the sandbox's own")
	}
	if len(c.HostPorts) > MaxHostPorts {
		return fmt.Errorf("%d host ports: at most %d", len(c.HostPorts), MaxHostPorts)
	}
	for i, p := range c.HostPorts {
		if p == 0 || slices.Contains(c.HostPorts[:i], p) || p == EgressDNSPort && c.Egress != nil ||
			c.Egress != nil && slices.Contains([]uint16{EgressHTTPPort, EgressSOCKSPort, CaptureHTTPPort, CaptureTLSPort}, p) {
			return fmt.Errorf("host port %d: want a port 1-65535, each once, none of the proxy's (53, 80, 443, 1080, 3128)", p)
		}
	}
	if c.Egress != nil {
		if !have[specs.NetworkNamespace] {
			return errors.New("egress needs a network namespace of the sandbox's own")
		}
		if _, err := egress.NewPolicy(c.Egress.Allow, c.Egress.Deny); err != nil {
			return fmt.Errorf("egress: %w", err)
		}
		if len(c.Egress.CapturePorts) > MaxCapturePorts {
			return fmt.Errorf("egress: %d capture ports: at most %d", len(c.Egress.CapturePorts), MaxCapturePorts)
		}
		for i, p := range c.Egress.CapturePorts {
			if p == 0 || slices.Contains(c.Egress.CapturePorts[:i], p) || slices.Contains(c.HostPorts, p) ||
				slices.Contains([]uint16{EgressDNSPort, EgressHTTPPort, EgressSOCKSPort, CaptureHTTPPort, CaptureTLSPort}, p) ||
				slices.ContainsFunc(c.Publish, func(pub Publish) bool { return pub.Port == p }) {
				return fmt.Errorf("egress: capture port %d: want a port 1-65535, each once, none of the proxy's (53, 80, 443, 1080, 3128), the host ports' or the published ports'", p)
			}
		}
	}
	for _, d := range c.MakeDirs {
		if !filepath.IsAbs(d) || filepath.Clean(d) != d || d == "/" {
			return fmt.Errorf("directory to create %q: want a canonical absolute path other than /", d)
		}
	}
	return nil
}

// processFields are the fields of specs.Process gosbx implements. The user is the one
// the id mappings name; every capability is dropped, and no_new_privs always set.
var processFields = []string{"Args", "Env", "Cwd", "Rlimits", "User", "Capabilities", "NoNewPrivileges"}

// ValidateProcess refuses a process (c's own, or a pooled command's for the template
// c) that asks for what gosbx does not do: no args, a field it does not implement,
// capabilities (all are dropped), supplementary groups, or a user other than the one
// c's id mappings put the command in.
func (c *Config) ValidateProcess(p *specs.Process) error {
	if p == nil || len(p.Args) == 0 {
		return errors.New("the process has no args")
	}
	if bad := setFieldsOutside(reflect.ValueOf(p).Elem(), processFields); len(bad) > 0 {
		return fmt.Errorf("the config sets process.%s, which gosbx does not implement", strings.Join(bad, ", process."))
	}
	if cp := p.Capabilities; cp != nil && len(cp.Bounding)+len(cp.Effective)+len(cp.Inheritable)+len(cp.Permitted)+len(cp.Ambient) > 0 {
		return fmt.Errorf("the config asks for capabilities (process.capabilities); gosbx drops every one")
	}
	if len(p.User.AdditionalGids) > 0 || p.User.Username != "" {
		return fmt.Errorf("the config sets process.user.additionalGids or username, which gosbx does not implement")
	}
	if l := c.Linux; l != nil && len(l.UIDMappings) == 1 && len(l.GIDMappings) == 1 &&
		(p.User.UID != l.UIDMappings[0].ContainerID || p.User.GID != l.GIDMappings[0].ContainerID) {
		return fmt.Errorf("process.user %d:%d is not the uid:gid the id mappings put the command in (%d:%d)",
			p.User.UID, p.User.GID, l.UIDMappings[0].ContainerID, l.GIDMappings[0].ContainerID)
	}
	return nil
}

// checkResources refuses cgroup resources gosbx does not apply: only the memory limit
// and memory+swap, the pids limit, and the CPU quota and period are.
func checkResources(r *specs.LinuxResources) error {
	if r == nil {
		return nil
	}
	c := *r
	if m := c.Memory; m != nil {
		rest := *m
		rest.Limit, rest.Swap = nil, nil
		if !reflect.ValueOf(rest).IsZero() {
			return fmt.Errorf("the config sets linux.resources.memory fields other than limit and swap, which gosbx does not apply")
		}
	}
	if cpu := c.CPU; cpu != nil {
		rest := *cpu
		rest.Quota, rest.Period = nil, nil
		if !reflect.ValueOf(rest).IsZero() {
			return fmt.Errorf("the config sets linux.resources.cpu fields other than quota and period, which gosbx does not apply")
		}
	}
	c.Memory, c.CPU, c.Pids = nil, nil, nil
	if bad := setFieldsOutside(reflect.ValueOf(&c).Elem(), nil); len(bad) > 0 {
		return fmt.Errorf("the config sets linux.resources.%s, which gosbx does not apply", strings.Join(bad, ", linux.resources."))
	}
	return nil
}

// setFieldsOutside returns the JSON names of v's non-zero fields not in allowed.
func setFieldsOutside(v reflect.Value, allowed []string) []string {
	var bad []string
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if slices.Contains(allowed, f.Name) || v.Field(i).IsZero() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		bad = append(bad, name)
	}
	return bad
}

// checkFile: a Files entry is a clean absolute path strictly below a tmpfs mount's
// destination (never a host tree's bind), of at most MaxFileSize bytes, with permission
// bits only.
func (c *Config) checkFile(f File) error {
	if !filepath.IsAbs(f.Path) || filepath.Clean(f.Path) != f.Path {
		return fmt.Errorf("file %q: not a clean absolute path", f.Path)
	}
	if len(f.Content) > MaxFileSize {
		return fmt.Errorf("file %q: %d bytes, more than %d", f.Path, len(f.Content), MaxFileSize)
	}
	if f.Mode&^0o777 != 0 {
		return fmt.Errorf("file %q: mode %#o has more than permission bits", f.Path, f.Mode)
	}
	// the mount that holds it: the last one whose destination holds it, each destination
	// read as the mount step reads it (cleaned, rooted: "/root//" and "root/." are
	// /root; compared as text, a bind at "/root//" over a tmpfs at /root slipped by)
	holder := ""
	for _, m := range c.Mounts {
		dest := filepath.Clean("/" + m.Destination)
		if dest != f.Path && (dest == "/" || strings.HasPrefix(f.Path, dest+"/")) {
			holder = m.Type
		}
	}
	if holder != "tmpfs" {
		return fmt.Errorf("file %q: not inside a tmpfs mount of the config", f.Path)
	}
	return nil
}
