package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/seccomp"
)

// The annotations that carry a Config's extensions in OCI JSON (ToSpec, FromSpec), each
// a JSON value. They exist only there: the init is sent the typed Config (Encode).
const (
	// SymlinksAnnotation: Symlinks, [{"path": "/bin", "target": "usr/bin"}, …].
	SymlinksAnnotation = "org.gosbx.symlinks"
	// FilesAnnotation: Files, [{"path": P, "content": C, "mode": M}, …].
	FilesAnnotation = "org.gosbx.files"
	// ReadonlyOptionalAnnotation: ReadonlyOptional, an array of paths.
	ReadonlyOptionalAnnotation = "org.gosbx.readonly-optional"
	// LimitsAnnotation: Limits, {"required": [...], "best_effort": b, "cgroup_parent": g};
	// present whenever linux.resources is.
	LimitsAnnotation = "org.gosbx.limits"
	// IDRangeAnnotation: RootID.Range, {"base": B, "count": N}.
	IDRangeAnnotation = "org.gosbx.id-range"
	// RootIdentityAnnotation: "allow" for RootID.AllowHostRoot.
	RootIdentityAnnotation = "org.gosbx.root-identity-map"
	// CleanupAnnotation: Cleanup, [{"kind": K, "path": P, "keep": […], "skip": […],
	// "target": T, "prefix": P, "hash_len": N, "was": […], "since": NS, "mode": M}, …]
	// (cleanup.Entry).
	CleanupAnnotation = "org.gosbx.cleanup"
	// MakeDirsAnnotation: MakeDirs, an array of paths.
	MakeDirsAnnotation = "org.gosbx.make-dirs"
	// TimeoutAnnotation: Timeout, a Go duration ("30s", "1m30s").
	TimeoutAnnotation = "org.gosbx.timeout"
	// EgressAnnotation: Egress, {"allow": [...], "deny": [...]}.
	EgressAnnotation = "org.gosbx.egress"
	// PublishAnnotation: Publish, [{"hostIP": A, "hostPort": H, "port": P}, …].
	PublishAnnotation = "org.gosbx.publish"
	// HostPortsAnnotation: HostPorts, [5432, …].
	HostPortsAnnotation = "org.gosbx.host-ports"
)

// annotationPrefix starts every gosbx annotation: FromSpec refuses one it does not know
// (a misspelt cleanup would be silently dropped).
const annotationPrefix = "org.gosbx."

// ToSpec is c as a runtime-spec config (what `gosbx policy export --oci` prints): the
// runtime-spec fields as they are, root "/" read-only, every capability empty and
// no_new_privs set on the process, linux.seccomp the filter's source (Linux.Seccomp),
// and the extensions as annotations (SymlinksAnnotation…). FromSpec reverses it. An
// extension holding a string that is not valid UTF-8 is an error: JSON would carry
// U+FFFD instead, and the cleanup of a launch from the file would look elsewhere.
func ToSpec(c *Config) (*specs.Spec, error) {
	a := map[string]string{}
	put := func(key string, v any) error {
		if bad := invalidUTF8(reflect.ValueOf(v)); bad != "" {
			return fmt.Errorf("annotation %s: %q is not valid UTF-8, which runtime-spec JSON cannot carry; rename it", key, bad)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("annotation %s: %w", key, err)
		}
		a[key] = string(b)
		return nil
	}
	var err error
	if len(c.Symlinks) > 0 {
		err = put(SymlinksAnnotation, c.Symlinks)
	}
	if err == nil && len(c.Files) > 0 {
		err = put(FilesAnnotation, c.Files)
	}
	if err == nil && len(c.ReadonlyOptional) > 0 {
		err = put(ReadonlyOptionalAnnotation, c.ReadonlyOptional)
	}
	if err == nil && len(c.Cleanup) > 0 {
		err = put(CleanupAnnotation, c.Cleanup)
	}
	if err == nil && len(c.MakeDirs) > 0 {
		err = put(MakeDirsAnnotation, c.MakeDirs)
	}
	if err == nil && c.Linux != nil && c.Linux.Resources != nil {
		err = put(LimitsAnnotation, c.Limits)
	}
	if err == nil && c.Egress != nil {
		err = put(EgressAnnotation, c.Egress)
	}
	if err == nil && len(c.Publish) > 0 {
		err = put(PublishAnnotation, c.Publish)
	}
	if err == nil && len(c.HostPorts) > 0 {
		err = put(HostPortsAnnotation, c.HostPorts)
	}
	if c.Timeout > 0 {
		a[TimeoutAnnotation] = c.Timeout.String()
	}
	if err == nil && c.RootID != nil {
		err = put(IDRangeAnnotation, c.RootID.Range)
		if c.RootID.AllowHostRoot {
			a[RootIdentityAnnotation] = "allow"
		}
	}
	if err != nil {
		return nil, err
	}
	s := &specs.Spec{Version: specs.Version, Root: &specs.Root{Path: "/", Readonly: true}, Hostname: c.Hostname,
		Mounts: c.Mounts, Annotations: a}
	if p := c.Process; p != nil {
		q := *p
		empty := []string{}
		q.Capabilities = &specs.LinuxCapabilities{Bounding: empty, Effective: empty, Inheritable: empty, Permitted: empty, Ambient: empty}
		q.NoNewPrivileges = true
		s.Process = &q
	}
	if l := c.Linux; l != nil {
		s.Linux = &specs.Linux{UIDMappings: l.UIDMappings, GIDMappings: l.GIDMappings, Namespaces: l.Namespaces,
			ReadonlyPaths: l.ReadonlyPaths, MaskedPaths: l.MaskedPaths, Seccomp: l.Seccomp, Resources: l.Resources}
	}
	return s, nil
}

// invalidUTF8 returns the first string in v (strings, slices and structs of them) that is
// not valid UTF-8, or "".
func invalidUTF8(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return v.String()
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if bad := invalidUTF8(v.Index(i)); bad != "" {
				return bad
			}
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if bad := invalidUTF8(v.Field(i)); bad != "" {
				return bad
			}
		}
	}
	return ""
}

// Fields of specs.Spec and specs.Linux that gosbx implements; any other field set in a
// spec is refused rather than silently not applied (a sysctl, a device, a hook).
// Slices, not maps: a package-level map is built at every start.
var (
	specFields  = []string{"Version", "Process", "Root", "Hostname", "Mounts", "Annotations", "Linux"}
	linuxFields = []string{"UIDMappings", "GIDMappings", "Namespaces", "Seccomp", "MaskedPaths", "ReadonlyPaths", "Resources"}
)

// FromSpec turns a runtime-spec config (an OCI config.json, such as ToSpec or `gosbx
// policy export --oci` wrote) into a Config: gosbx's annotations become the typed
// extensions, linux.seccomp is compiled (seccomp.Compile) into Linux.Filter, and the
// result is validated (Validate). A field gosbx does not implement is refused, as is an
// org.gosbx.* annotation it does not know; other annotations are ignored. Errors are
// *SpecError, naming the field. The spec is not modified, and the Config shares its
// slices.
func FromSpec(s *specs.Spec) (*Config, error) {
	c, err := fromSpec(s)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// fromSpec is FromSpec, its errors *SpecError.
func fromSpec(s *specs.Spec) (*Config, error) {
	if s == nil {
		return nil, &SpecError{Err: errors.New("no spec")}
	}
	if bad := setFieldsOutside(reflect.ValueOf(s).Elem(), specFields); len(bad) > 0 {
		return nil, &SpecError{Field: bad[0], Err: fmt.Errorf("the spec sets %s, which gosbx does not implement", strings.Join(bad, ", "))}
	}
	if r := s.Root; r != nil && ((r.Path != "" && r.Path != "/") || !r.Readonly) {
		return nil, &SpecError{Field: "root", Err: fmt.Errorf("the spec's root is %q, readonly %v: gosbx builds the root itself, read-only (want path \"/\", readonly true)", r.Path, r.Readonly)}
	}
	c := &Config{Process: s.Process, Hostname: s.Hostname, Mounts: s.Mounts}
	if l := s.Linux; l != nil {
		if bad := setFieldsOutside(reflect.ValueOf(l).Elem(), linuxFields); len(bad) > 0 {
			return nil, &SpecError{Field: "linux." + bad[0], Err: fmt.Errorf("the spec sets linux.%s, which gosbx does not implement", strings.Join(bad, ", linux."))}
		}
		if sc := l.Seccomp; sc != nil && (sc.ListenerPath != "" || sc.ListenerMetadata != "" || len(sc.Flags) > 0) {
			return nil, &SpecError{Field: "linux.seccomp", Err: errors.New("the spec sets linux.seccomp.listenerPath or flags, which gosbx does not implement (the filter is always loaded with SECCOMP_FILTER_FLAG_TSYNC)")}
		}
		c.Linux = &Linux{UIDMappings: l.UIDMappings, GIDMappings: l.GIDMappings, Namespaces: l.Namespaces,
			Seccomp: l.Seccomp, MaskedPaths: l.MaskedPaths, ReadonlyPaths: l.ReadonlyPaths, Resources: l.Resources}
		if l.Seccomp != nil {
			f, err := seccomp.Compile(l.Seccomp)
			if err != nil {
				return nil, &SpecError{Field: "linux.seccomp", Err: fmt.Errorf("linux.seccomp: %w", err)}
			}
			c.Linux.Filter = f
		}
	}
	if p := s.Process; p != nil && p.Capabilities != nil {
		cp := p.Capabilities
		if len(cp.Bounding)+len(cp.Effective)+len(cp.Inheritable)+len(cp.Permitted)+len(cp.Ambient) > 0 {
			return nil, &SpecError{Field: "process.capabilities", Err: errors.New("the spec asks for capabilities (process.capabilities); gosbx drops every one")}
		}
		q := *p
		q.Capabilities = nil // all dropped, as they say
		c.Process = &q
	}
	if err := fromAnnotations(c, s.Annotations); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, &SpecError{Err: err}
	}
	return c, nil
}

// SpecError is FromSpec's error: Field is the spec's field at fault as its JSON names
// it ("linux.sysctl", "root", "process.capabilities", "annotations.org.gosbx.limits"),
// the first when several are; "" for no spec or a config that fails Validate (Err
// says which field). Error is Err's text.
type SpecError struct {
	Field string
	Err   error
}

func (e *SpecError) Error() string { return e.Err.Error() }
func (e *SpecError) Unwrap() error { return e.Err }

// fromAnnotations sets c's extensions from gosbx's annotations.
func fromAnnotations(c *Config, a map[string]string) error {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var idRange *IDRange
	allow := false
	for _, k := range keys {
		raw := []byte(a[k])
		var err error
		switch k {
		case SymlinksAnnotation:
			err = json.Unmarshal(raw, &c.Symlinks)
		case FilesAnnotation:
			err = json.Unmarshal(raw, &c.Files)
		case ReadonlyOptionalAnnotation:
			err = json.Unmarshal(raw, &c.ReadonlyOptional)
		case LimitsAnnotation:
			err = json.Unmarshal(raw, &c.Limits)
		case IDRangeAnnotation:
			idRange = &IDRange{}
			err = json.Unmarshal(raw, idRange)
		case RootIdentityAnnotation:
			allow = a[k] == "allow"
		case CleanupAnnotation:
			err = json.Unmarshal(raw, &c.Cleanup)
		case MakeDirsAnnotation:
			err = json.Unmarshal(raw, &c.MakeDirs)
		case TimeoutAnnotation:
			c.Timeout, err = time.ParseDuration(a[k])
			if err == nil && c.Timeout <= 0 {
				err = fmt.Errorf("%q is not a positive duration", a[k])
			}
		case EgressAnnotation:
			c.Egress = &Egress{}
			err = json.Unmarshal(raw, c.Egress)
		case PublishAnnotation:
			err = json.Unmarshal(raw, &c.Publish)
		case HostPortsAnnotation:
			err = json.Unmarshal(raw, &c.HostPorts)
		default:
			if strings.HasPrefix(k, annotationPrefix) {
				return &SpecError{Field: "annotations." + k, Err: fmt.Errorf("annotation %s: not one gosbx knows", k)}
			}
		}
		if err != nil {
			return &SpecError{Field: "annotations." + k, Err: fmt.Errorf("annotation %s: %w", k, err)}
		}
	}
	if idRange != nil {
		c.RootID = &RootID{Range: *idRange, AllowHostRoot: allow}
	}
	return nil
}
