package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gosbx/gosbx/egress"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gosbx/gosbx/seccomp"
)

// variables that may appear in paths and values.
var variables = []string{"workspace", "home", "uid"}

// validate checks every value that does not depend on the host; errors are *FileError
// naming the field.
func (p *Policy) validate() error {
	bad := func(field, format string, a ...any) error {
		return &FileError{Field: field, Reason: fmt.Sprintf(format, a...)}
	}
	if field := controlChars(reflect.ValueOf(p).Elem(), ""); field != "" {
		return bad(field, "control characters are not allowed")
	}
	switch p.Network.Mode {
	case "", NetNone, NetHost, NetProxy:
	default:
		return bad("network.mode", "%q: want none, host or proxy", p.Network.Mode)
	}
	if (len(p.Network.Allow) > 0 || len(p.Network.Deny) > 0) && p.Network.Mode != NetProxy && p.Network.Mode != "" {
		return bad("network.allow", "host patterns need network.mode proxy (the mode is %s)", p.Network.Mode)
	}
	if _, err := egress.NewPolicy(p.Network.Allow, p.Network.Deny); err != nil {
		return bad("network", "%v", err)
	}
	if _, err := ParsePublish(p.Network.Publish); err != nil {
		return bad("network.publish", "%v", err)
	}
	if len(p.Network.HostPorts) > 0 && p.Network.Mode == NetHost {
		return bad("network.host_ports", "host ports need a network namespace of the sandbox's own (the mode is host)")
	}
	if len(p.Network.Publish) > 0 && p.Network.Mode == NetHost {
		return bad("network.publish", "port forwards need a network namespace of the sandbox's own (the mode is host)")
	}
	switch p.Filesystem.Git {
	case "", GitReadOnly, GitCommit:
	default:
		return bad("filesystem.git", "%q: want readonly or commit", p.Filesystem.Git)
	}
	if p.Process.Timeout != "" {
		if _, err := ParseTimeout(p.Process.Timeout); err != nil {
			return bad("process.timeout", "%v", err)
		}
	}
	if err := p.Filesystem.Toolchains.validate("filesystem.toolchains"); err != nil {
		return err
	}
	if p.Filesystem.ScanLimit < 0 {
		return bad("filesystem.scan_limit", "%d: want a positive number of directories", p.Filesystem.ScanLimit)
	}
	if err := p.Resources.validate("resources"); err != nil {
		return err
	}
	if p.Seccomp != nil {
		// Each rule alone first, so that the error's field (and the file's line) is the
		// rule's: seccomp.rules[i].
		for i, r := range p.Seccomp.Rules {
			field := fmt.Sprintf("seccomp.rules[%d]", i)
			one := &seccomp.Config{Profile: "none", Rules: []seccomp.Rule{r}}
			if err := one.Validate(); err != nil {
				if inner := errors.Unwrap(err); inner != nil {
					err = inner // not "rules[0]", the index in a list of one
				}
				return bad(field, "%v", err)
			}
			s, err := one.Spec()
			if err == nil {
				_, err = seccomp.Compile(s)
			}
			if err != nil {
				return bad(field, "%v", err)
			}
		}
		if err := p.Seccomp.Validate(); err != nil {
			return bad("seccomp", "%v", err)
		}
		// Compiled, not only read, so that a rule no filter can express (a masked_eq
		// that can never hold) is an error of the file (policy check), not of a launch.
		// Only the file's own rules: the built-in profile is compiled by its tests.
		own, err := (&seccomp.Config{Profile: "none", Rules: p.Seccomp.Rules}).Spec()
		if err == nil {
			_, err = seccomp.Compile(own)
		}
		if err != nil {
			return bad("seccomp", "%v", err)
		}
	}
	switch p.RootIdentityMap {
	case "", RootIdentityDeny, RootIdentityAllow:
	default:
		return bad("root_identity_map", "%q: want %s or %s", p.RootIdentityMap, RootIdentityDeny, RootIdentityAllow)
	}
	if p.Process.Hostname != "" && !validHostname(p.Process.Hostname) {
		return bad("process.hostname", "%q: letters, digits, '-' and '.', at most 64 bytes", p.Process.Hostname)
	}
	checkPath := func(field, path string) error {
		if path == "" {
			return bad(field, "empty path")
		}
		if err := checkVars(path); err != nil {
			return bad(field, "%v", err)
		}
		if !strings.HasPrefix(path, "/") && !strings.HasPrefix(path, "${") && path != "~" && !strings.HasPrefix(path, "~/") {
			return bad(field, "%q: want an absolute path (or one starting with ${workspace}, ${home} or ~/)", path)
		}
		return nil
	}
	lists := []struct {
		field string
		paths []string
	}{
		{"filesystem.masked", p.Filesystem.Masked},
		{"filesystem.credentials", p.Filesystem.Credentials},
		{"environment.path_prepend", p.Environment.PathPrepend},
	}
	for _, b := range p.Filesystem.ReadOnly {
		lists = append(lists, struct {
			field string
			paths []string
		}{"filesystem.read_only", []string{b.Path}})
	}
	for _, b := range p.Filesystem.ReadWrite {
		lists = append(lists, struct {
			field string
			paths []string
		}{"filesystem.read_write", []string{b.Path}})
	}
	for _, l := range lists {
		for _, path := range l.paths {
			if err := checkPath(l.field, path); err != nil {
				return err
			}
		}
	}
	for i, t := range p.Filesystem.Tmpfs {
		if err := checkPath("filesystem.tmpfs", t.Path); err != nil {
			return err
		}
		if t.Mode != "" {
			if m, err := strconv.ParseUint(t.Mode, 8, 32); err != nil || m > 0o7777 {
				return bad("filesystem.tmpfs", "mode %q of %s: want octal permissions such as 1777 or 0700", t.Mode, t.Path)
			}
		}
		if err := checkTmpfsSize(t.Size); err != nil {
			return bad(fmt.Sprintf("filesystem.tmpfs[%d].size", i), "size of %s: %v", t.Path, err)
		}
	}
	for _, pr := range p.Filesystem.Protected {
		if pr == "" || strings.HasPrefix(pr, "/") {
			return bad("filesystem.protected", "%q: want a name or a path relative to each writable tree (.git, **/.git/hooks)", pr)
		}
		for _, c := range strings.Split(pr, "/") {
			if c == ".." || c == "." || c == "" {
				return bad("filesystem.protected", "%q: no empty, . or .. components", pr)
			}
		}
	}
	if p.Workspace.Path != "" {
		if err := checkPath("workspace.path", p.Workspace.Path); err != nil {
			return err
		}
		if strings.Contains(p.Workspace.Path, "${workspace}") {
			return bad("workspace.path", "cannot refer to ${workspace}")
		}
	}
	if p.Process.Cwd != "" {
		if err := checkVars(p.Process.Cwd); err != nil {
			return bad("process.cwd", "%v", err)
		}
	}
	for k, v := range p.Environment.Set {
		if !validEnvName(k) {
			return bad("environment.set", "%q is not a variable name", k)
		}
		if err := checkVars(v); err != nil {
			return bad("environment.set."+k, "%v", err)
		}
	}
	for k, v := range p.Environment.Offline {
		if !validEnvName(k) {
			return bad("environment.offline", "%q is not a variable name", k)
		}
		if err := checkVars(v); err != nil {
			return bad("environment.offline."+k, "%v", err)
		}
	}
	for _, k := range p.Environment.Pass {
		if !validEnvName(k) {
			return bad("environment.pass", "%q is not a variable name", k)
		}
	}
	if p.Environment.Path != "" {
		if err := checkVars(p.Environment.Path); err != nil {
			return bad("environment.path", "%v", err)
		}
	}
	return nil
}

// controlChars returns the dotted path of the first string in v holding a C0 or C1
// control character other than tab and newline (a name, a path or a value has no use for
// them, and they cannot be printed back as YAML).
func controlChars(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.String:
		for _, r := range v.String() {
			if (r < 0x20 && r != '\t' && r != '\n') || (r >= 0x7f && r <= 0x9f) || r == 0xfffd {
				return path
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return controlChars(v.Elem(), path)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			tag := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
			if tag == "" || tag == "-" || t.Field(i).Type == reflect.TypeOf(json.RawMessage{}) {
				continue
			}
			if f := controlChars(v.Field(i), join(path, tag)); f != "" {
				return f
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if f := controlChars(v.Index(i), path); f != "" {
				return f
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if f := controlChars(iter.Key(), path); f != "" {
				return f
			}
			if f := controlChars(iter.Value(), join(path, iter.Key().String())); f != "" {
				return f
			}
		}
	}
	return ""
}

func validEnvName(k string) bool {
	return k != "" && !strings.ContainsAny(k, "=\x00")
}

// checkVars refuses a ${name} that is not one of the variables, or an unclosed one.
func checkVars(s string) error {
	_, err := expand(s, map[string]string{"workspace": "/", "home": "/", "uid": "0"})
	return err
}

// expand replaces ${workspace}, ${home}, ${uid} in s, and a leading ~ or ~/ by the home.
func expand(s string, vars map[string]string) (string, error) {
	if s == "~" || strings.HasPrefix(s, "~/") {
		s = "${home}" + s[1:]
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unclosed ${ in %q", s)
		}
		name := s[i+2 : i+j]
		v, ok := vars[name]
		if !ok {
			return "", fmt.Errorf("unknown variable ${%s} (have ${%s})", name, strings.Join(variables, "}, ${"))
		}
		b.WriteString(s[:i] + v)
		s = s[i+j+1:]
	}
}

// ParseTimeout reads a timeout: a Go duration ("30s", "5m") or a number of seconds;
// 0 means none (as timeout(1)). Values that do not fit a time.Duration, or a positive
// value that rounds to nothing, are errors rather than silently unlimited.
func ParseTimeout(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	bad := fmt.Errorf("%q: want 0 or a positive duration such as 30s or 5m", s)
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if n != n || n < 0 || n*float64(time.Second) >= 1<<63-1 {
			return 0, bad
		}
		d := time.Duration(n * float64(time.Second))
		if n > 0 && d <= 0 {
			return 0, bad
		}
		return d, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, bad
	}
	return d, nil
}
