package nsinit

import (
	"fmt"
	"reflect"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/seccomp"
)

// wireSpec is the part of specs.Spec that gosbx implements (the JSON names are the
// runtime-spec's): the launcher encodes it (wirecodec.go) and the init decodes it
// (toSpec gives the specs.Spec). Linux.Resources is applied by the launcher (the
// cgroup) and not sent; linux.seccomp is sent compiled (Filter).
type wireSpec struct {
	Version     string            `json:"ociVersion"`
	Process     *wireProcess      `json:"process,omitempty"`
	Root        *specs.Root       `json:"root,omitempty"`
	Hostname    string            `json:"hostname,omitempty"`
	Mounts      []wireMount       `json:"mounts,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Linux       *wireLinux        `json:"linux,omitempty"`
}

// wireProcess is what checkProcess lets through of specs.Process (capabilities are
// all dropped, so not sent).
type wireProcess struct {
	User            wireUser            `json:"user"`
	Args            []string            `json:"args,omitempty"`
	Env             []string            `json:"env,omitempty"`
	Cwd             string              `json:"cwd"`
	Rlimits         []specs.POSIXRlimit `json:"rlimits,omitempty"`
	NoNewPrivileges bool                `json:"noNewPrivileges,omitempty"`
}

type wireUser struct {
	UID   uint32  `json:"uid"`
	GID   uint32  `json:"gid"`
	Umask *uint32 `json:"umask,omitempty"`
}

type wireMount struct {
	Destination string   `json:"destination"`
	Type        string   `json:"type,omitempty"`
	Source      string   `json:"source,omitempty"`
	Options     []string `json:"options,omitempty"`
}

type wireLinux struct {
	UIDMappings []specs.LinuxIDMapping `json:"uidMappings,omitempty"`
	GIDMappings []specs.LinuxIDMapping `json:"gidMappings,omitempty"`
	Namespaces  []specs.LinuxNamespace `json:"namespaces,omitempty"`
	// Filter is the seccomp program compiled from linux.seccomp (seccomp.Program.Bytes):
	// the init loads it as it is.
	Filter        []byte   `json:"filter,omitempty"`
	MaskedPaths   []string `json:"maskedPaths,omitempty"`
	ReadonlyPaths []string `json:"readonlyPaths,omitempty"`
}

func toWireProcess(p *specs.Process) *wireProcess {
	if p == nil {
		return nil
	}
	return &wireProcess{User: wireUser{UID: p.User.UID, GID: p.User.GID, Umask: p.User.Umask}, Args: p.Args,
		Env: p.Env, Cwd: p.Cwd, Rlimits: p.Rlimits, NoNewPrivileges: p.NoNewPrivileges}
}

func (w *wireProcess) toProcess() *specs.Process {
	if w == nil {
		return nil
	}
	return &specs.Process{User: specs.User{UID: w.User.UID, GID: w.User.GID, Umask: w.User.Umask}, Args: w.Args,
		Env: w.Env, Cwd: w.Cwd, Rlimits: w.Rlimits, NoNewPrivileges: w.NoNewPrivileges}
}

// toSpec is the specs.Spec the init works from.
func (w *wireSpec) toSpec() *specs.Spec {
	s := &specs.Spec{Version: w.Version, Process: w.Process.toProcess(), Root: w.Root, Hostname: w.Hostname,
		Annotations: w.Annotations}
	for _, m := range w.Mounts {
		s.Mounts = append(s.Mounts, specs.Mount{Destination: m.Destination, Type: m.Type, Source: m.Source, Options: m.Options})
	}
	if l := w.Linux; l != nil {
		s.Linux = &specs.Linux{UIDMappings: l.UIDMappings, GIDMappings: l.GIDMappings, Namespaces: l.Namespaces,
			MaskedPaths: l.MaskedPaths, ReadonlyPaths: l.ReadonlyPaths}
	}
	return s
}

// Fields of specs.Spec and specs.Linux that gosbx implements; any other field set in a
// spec is refused rather than silently not applied (a sysctl, a device, a hook).
var (
	specFields  = map[string]bool{"Version": true, "Process": true, "Root": true, "Hostname": true, "Mounts": true, "Annotations": true, "Linux": true}
	linuxFields = map[string]bool{"UIDMappings": true, "GIDMappings": true, "Namespaces": true, "Seccomp": true,
		"MaskedPaths": true, "ReadonlyPaths": true, "Resources": true}
)

// processFields are the fields of specs.Process gosbx implements. The user is the one
// the id mappings name; every capability is dropped, and no_new_privs always set.
var processFields = map[string]bool{"Args": true, "Env": true, "Cwd": true, "Rlimits": true, "User": true,
	"Capabilities": true, "NoNewPrivileges": true}

// checkProcess refuses a process that asks for what gosbx does not do: a field it does
// not implement, capabilities (all are dropped), supplementary groups, or a user other
// than the one the id mappings of linux (if any) put the command in.
func checkProcess(p *specs.Process, l *specs.Linux) error {
	if p == nil {
		return nil
	}
	if bad := setFieldsOutside(reflect.ValueOf(p).Elem(), processFields); len(bad) > 0 {
		return fmt.Errorf("the spec sets process.%s, which gosbx does not implement", strings.Join(bad, ", process."))
	}
	if c := p.Capabilities; c != nil && len(c.Bounding)+len(c.Effective)+len(c.Inheritable)+len(c.Permitted)+len(c.Ambient) > 0 {
		return fmt.Errorf("the spec asks for capabilities (process.capabilities); gosbx drops every one")
	}
	if len(p.User.AdditionalGids) > 0 || p.User.Username != "" {
		return fmt.Errorf("the spec sets process.user.additionalGids or username, which gosbx does not implement")
	}
	if l != nil && len(l.UIDMappings) == 1 && len(l.GIDMappings) == 1 &&
		(p.User.UID != l.UIDMappings[0].ContainerID || p.User.GID != l.GIDMappings[0].ContainerID) {
		return fmt.Errorf("process.user %d:%d is not the uid:gid the id mappings put the command in (%d:%d)",
			p.User.UID, p.User.GID, l.UIDMappings[0].ContainerID, l.GIDMappings[0].ContainerID)
	}
	return nil
}

// checkSpec refuses a spec that sets a field gosbx does not implement, so that nothing
// asked for is silently left out.
func checkSpec(spec *specs.Spec) error {
	if bad := setFieldsOutside(reflect.ValueOf(spec).Elem(), specFields); len(bad) > 0 {
		return fmt.Errorf("the spec sets %s, which gosbx does not implement", strings.Join(bad, ", "))
	}
	if r := spec.Root; r != nil && ((r.Path != "" && r.Path != "/") || !r.Readonly) {
		return fmt.Errorf("the spec's root is %q, readonly %v: gosbx builds the root itself, read-only (want path \"/\", readonly true)", r.Path, r.Readonly)
	}
	if err := checkProcess(spec.Process, spec.Linux); err != nil {
		return err
	}
	for _, m := range spec.Mounts {
		if len(m.UIDMappings) > 0 || len(m.GIDMappings) > 0 {
			return fmt.Errorf("the spec sets uidMappings or gidMappings on the mount of %s, which gosbx does not implement", m.Destination)
		}
	}
	if l := spec.Linux; l != nil {
		if bad := setFieldsOutside(reflect.ValueOf(l).Elem(), linuxFields); len(bad) > 0 {
			return fmt.Errorf("the spec sets linux.%s, which gosbx does not implement", strings.Join(bad, ", linux."))
		}
		if sc := l.Seccomp; sc != nil && (sc.ListenerPath != "" || sc.ListenerMetadata != "" || len(sc.Flags) > 0) {
			return fmt.Errorf("the spec sets linux.seccomp.listenerPath or flags, which gosbx does not implement (the filter is always loaded with SECCOMP_FILTER_FLAG_TSYNC)")
		}
		if err := checkResources(l.Resources); err != nil {
			return err
		}
	}
	return nil
}

// toWire returns what the init is sent for a spec checkSpec accepted: the seccomp
// filter compiled here (seccomp.Compile), so the init only loads it. An error is the
// filter's.
func toWire(spec *specs.Spec) (*wireSpec, error) {
	w := &wireSpec{Version: spec.Version, Process: toWireProcess(spec.Process), Root: spec.Root, Hostname: spec.Hostname,
		Annotations: spec.Annotations}
	for _, m := range spec.Mounts {
		w.Mounts = append(w.Mounts, wireMount{Destination: m.Destination, Type: m.Type, Source: m.Source, Options: m.Options})
	}
	if l := spec.Linux; l != nil {
		w.Linux = &wireLinux{UIDMappings: l.UIDMappings, GIDMappings: l.GIDMappings, Namespaces: l.Namespaces,
			MaskedPaths: l.MaskedPaths, ReadonlyPaths: l.ReadonlyPaths}
		if l.Seccomp != nil {
			p, err := seccomp.Compile(l.Seccomp)
			if err != nil {
				return nil, err
			}
			w.Linux.Filter = p.Bytes()
		}
	}
	return w, nil
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
			return fmt.Errorf("the spec sets linux.resources.memory fields other than limit and swap, which gosbx does not apply")
		}
	}
	if cpu := c.CPU; cpu != nil {
		rest := *cpu
		rest.Quota, rest.Period = nil, nil
		if !reflect.ValueOf(rest).IsZero() {
			return fmt.Errorf("the spec sets linux.resources.cpu fields other than quota and period, which gosbx does not apply")
		}
	}
	c.Memory, c.CPU, c.Pids = nil, nil, nil
	if bad := setFieldsOutside(reflect.ValueOf(&c).Elem(), nil); len(bad) > 0 {
		return fmt.Errorf("the spec sets linux.resources.%s, which gosbx does not apply", strings.Join(bad, ", linux.resources."))
	}
	return nil
}

// setFieldsOutside returns the JSON names of v's non-zero fields not in allowed.
func setFieldsOutside(v reflect.Value, allowed map[string]bool) []string {
	var bad []string
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if allowed[f.Name] || v.Field(i).IsZero() {
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
