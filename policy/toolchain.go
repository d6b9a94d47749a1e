package policy

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// Toolchain modes (filesystem.toolchains, --toolchain).
const (
	ToolchainAuto = "auto" // bind the roots of the caller's PATH entries and workspace venvs' interpreters
	ToolchainNone = "none" // bind no toolchain beyond the policy's own binds
)

// Toolchains is filesystem.toolchains: "auto", "none", or a list of toolchain roots
// (each bound read-only, its bin/ put first on PATH). In a file it is a string or a list
// of paths, which may hold "auto" too.
type Toolchains struct {
	Mode  string   // ToolchainAuto, ToolchainNone, or "" for Paths
	Paths []string // the roots named, when Mode is ""
}

// UnmarshalJSON accepts "auto", "none" or ["PATH", ...].
func (t *Toolchains) UnmarshalJSON(data []byte) error {
	var s string
	if json.Unmarshal(data, &s) == nil {
		*t = Toolchains{Mode: s}
		return nil
	}
	var paths []string
	if err := json.Unmarshal(data, &paths); err != nil {
		return fmt.Errorf("toolchains is auto, none or a list of paths: %w", err)
	}
	*t = Toolchains{}
	for _, p := range paths {
		if p == ToolchainAuto {
			t.Mode = ToolchainAuto // [auto, /opt/x]: resolve, and bind the list besides
			continue
		}
		t.Paths = append(t.Paths, p)
	}
	return nil
}

// MarshalJSON writes the mode, or the list (auto first when both).
func (t Toolchains) MarshalJSON() ([]byte, error) {
	if len(t.Paths) == 0 {
		return json.Marshal(t.Mode)
	}
	if t.Mode == ToolchainAuto {
		return json.Marshal(append([]string{ToolchainAuto}, t.Paths...))
	}
	return json.Marshal(t.Paths)
}

func (t *Toolchains) validate(field string) error {
	if t == nil {
		return nil
	}
	switch t.Mode {
	case ToolchainNone:
		return nil
	case ToolchainAuto:
	case "":
		if len(t.Paths) == 0 {
			return &FileError{Field: field, Reason: "an empty list: say none"}
		}
	default:
		return &FileError{Field: field, Reason: fmt.Sprintf("%q: want auto, none or a list of paths", t.Mode)}
	}
	for _, p := range t.Paths {
		if strings.TrimSpace(p) == "" {
			return &FileError{Field: field, Reason: "an empty path"}
		}
	}
	return nil
}

// ToolchainBind is a toolchain root bound read-only by filesystem.toolchains (or
// --toolchain), and what led to it: a PATH entry, a venv's interpreter, a link in a
// bound directory, or the policy's list.
type ToolchainBind struct {
	Path string `json:"path"` // canonical host path, bound read-only at the same path
	Why  string `json:"why"`
}

// ToolchainSkip is a toolchain path auto mode looked at and did not bind, and why.
type ToolchainSkip struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// Toolchains are the roots this effective policy binds read-only for the caller's
// toolchains (filesystem.toolchains), and what auto mode left out, each with its reason.
func (p *Policy) Toolchains() (bound []ToolchainBind, skipped []ToolchainSkip) {
	return p.toolchains.binds, p.toolchains.skipped
}

// toolchainFlags applies the --toolchain flags (auto, none, or a root) to the policy's
// filesystem.toolchains: none always narrows; auto and a root add read-only binds, so
// they need filesystem.allow_extra_read_only.
func toolchainFlags(policy *Toolchains, flags []string, allowExtra bool) (*Toolchains, error) {
	if len(flags) == 0 {
		return policy, nil
	}
	out := &Toolchains{}
	if policy != nil {
		out.Mode, out.Paths = policy.Mode, clone(policy.Paths)
	}
	var none, auto bool
	var paths []string
	for _, f := range flags {
		switch {
		case f == ToolchainNone:
			none = true
		case f == ToolchainAuto:
			auto = true
		case strings.TrimSpace(f) == "":
			return nil, errorf("toolchain", "", nil, "empty value (want auto, none or a path)")
		default:
			paths = append(paths, f)
		}
	}
	if none {
		if auto || len(paths) > 0 {
			return nil, errorf("toolchain", "", nil, "--toolchain none with --toolchain auto or a path: choose one")
		}
		return &Toolchains{Mode: ToolchainNone}, nil
	}
	if !allowExtra && !(auto && out.Mode == ToolchainAuto && len(paths) == 0) {
		return nil, errorf("toolchain", "", nil, "the policy does not allow extra read-only binds (filesystem.allow_extra_read_only)")
	}
	if auto {
		out.Mode = ToolchainAuto
	}
	if len(paths) > 0 {
		// auto and a list together: auto resolves, the list is bound besides
		if out.Mode == ToolchainNone {
			out.Mode = ""
		}
		out.Paths = append(out.Paths, paths...)
	}
	return out, nil
}

// resolveToolchains resolves filesystem.toolchains of the effective policy p (paths
// expanded by exPath) on host h, the workspace being ws (canonical): Build binds what it
// found, environment puts the versions' bin directories in place of their shims.
func (p *Policy) resolveToolchains(h Host, ws string, exPath func(field, s string) (string, error)) error {
	tc := p.Filesystem.Toolchains
	if tc == nil || tc.Mode == ToolchainNone && len(tc.Paths) == 0 {
		return nil
	}
	list := &Toolchains{Mode: tc.Mode}
	for _, s := range tc.Paths {
		v, err := exPath("toolchains", s)
		if err != nil {
			return err
		}
		list.Paths = append(list.Paths, v)
	}
	th := p.toolchainHost(h, ws)
	var err error
	if p.toolchains, err = resolveToolchains(list, th); err != nil {
		return err
	}
	p.Environment.PathPrepend = append(p.Environment.PathPrepend, p.toolchains.prepend...)
	return nil
}

// toolchainBinds are the read-only binds filesystem.toolchains resolved to.
func (p *Policy) toolchainBinds() []Bind {
	var out []Bind
	for _, b := range p.toolchains.binds {
		out = append(out, Bind{Path: b.Path, Optional: true})
	}
	return out
}

// substPath replaces the shim directories in the PATH list path by the bin directories
// of the versions they would run.
func (p *Policy) substPath(path string) string {
	if len(p.toolchains.subst) == 0 {
		return path
	}
	var out []string
	for _, e := range filepath.SplitList(path) {
		if dirs, ok := p.toolchains.subst[filepath.Clean(e)]; ok && filepath.IsAbs(e) {
			out = append(out, dirs...)
			continue
		}
		out = append(out, e)
	}
	return strings.Join(out, ":")
}

// checkToolchains is checkFields for filesystem.toolchains: a string or a list of strings.
func checkToolchains(v any, path string) (field, reason string) {
	switch x := v.(type) {
	case string:
		return "", ""
	case []any:
		for i, e := range x {
			if _, ok := e.(string); !ok {
				return fmt.Sprintf("%s[%d]", path, i), fmt.Sprintf("want a path, got %s", jsonKind(e))
			}
		}
		return "", ""
	}
	return path, fmt.Sprintf("want auto, none or a list of paths, got %s", jsonKind(v))
}
