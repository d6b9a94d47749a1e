package nsinit

import (
	"fmt"
	"reflect"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// wireSpec is the part of specs.Spec that gosbx implements, under the same JSON names:
// the launcher encodes it and the init decodes the result as a specs.Spec. On first use
// encoding/json builds an encoder for every type reachable from a type; for specs.Spec
// (Windows, Solaris, VM, every cgroup resource) that took ~0.6 ms of each launch.
// Linux.Resources is applied by the launcher (the cgroup) and not sent.
type wireSpec struct {
	Version     string            `json:"ociVersion"`
	Process     *specs.Process    `json:"process,omitempty"`
	Root        *specs.Root       `json:"root,omitempty"`
	Hostname    string            `json:"hostname,omitempty"`
	Mounts      []specs.Mount     `json:"mounts,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Linux       *wireLinux        `json:"linux,omitempty"`
}

type wireLinux struct {
	UIDMappings   []specs.LinuxIDMapping `json:"uidMappings,omitempty"`
	GIDMappings   []specs.LinuxIDMapping `json:"gidMappings,omitempty"`
	Namespaces    []specs.LinuxNamespace `json:"namespaces,omitempty"`
	Seccomp       *specs.LinuxSeccomp    `json:"seccomp,omitempty"`
	MaskedPaths   []string               `json:"maskedPaths,omitempty"`
	ReadonlyPaths []string               `json:"readonlyPaths,omitempty"`
}

// Fields of specs.Spec and specs.Linux that gosbx implements; any other field set in a
// spec is refused rather than silently not applied (a sysctl, a device, a hook).
var (
	specFields  = map[string]bool{"Version": true, "Process": true, "Root": true, "Hostname": true, "Mounts": true, "Annotations": true, "Linux": true}
	linuxFields = map[string]bool{"UIDMappings": true, "GIDMappings": true, "Namespaces": true, "Seccomp": true,
		"MaskedPaths": true, "ReadonlyPaths": true, "Resources": true}
)

// toWire checks that spec sets only fields gosbx implements and returns what the init
// is sent.
func toWire(spec *specs.Spec) (*wireSpec, error) {
	if bad := setFieldsOutside(reflect.ValueOf(spec).Elem(), specFields); len(bad) > 0 {
		return nil, fmt.Errorf("the spec sets %s, which gosbx does not implement", strings.Join(bad, ", "))
	}
	w := &wireSpec{Version: spec.Version, Process: spec.Process, Root: spec.Root, Hostname: spec.Hostname,
		Mounts: spec.Mounts, Annotations: spec.Annotations}
	if l := spec.Linux; l != nil {
		if bad := setFieldsOutside(reflect.ValueOf(l).Elem(), linuxFields); len(bad) > 0 {
			return nil, fmt.Errorf("the spec sets linux.%s, which gosbx does not implement", strings.Join(bad, ", linux."))
		}
		w.Linux = &wireLinux{UIDMappings: l.UIDMappings, GIDMappings: l.GIDMappings, Namespaces: l.Namespaces,
			Seccomp: l.Seccomp, MaskedPaths: l.MaskedPaths, ReadonlyPaths: l.ReadonlyPaths}
	}
	return w, nil
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
