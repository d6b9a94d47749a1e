package policy

import "github.com/gosbx/gosbx/nsinit/config"

// NotFoundContext is what NotFoundHint reads of an effective policy and its host, in a
// form that goes through encoding/json whole: a session's supervisor is handed it at
// `session start` and explains its commands' exit 127 as gosbx exec does, from the host
// as the session's start saw it (its PATH, HOME and environment: those the session's
// binds and toolchains were chosen from).
type NotFoundContext struct {
	Workspace  string     `json:"workspace"`  // the effective workspace, canonical
	Home       string     `json:"home"`       // what ${home} expanded to
	Filesystem Filesystem `json:"filesystem"` // binds, credentials, toolchains
	Host       Host       `json:"host"`
}

// NotFoundContext is p's and h's context for NotFoundHint.
func (p *Policy) NotFoundContext(h Host) NotFoundContext {
	return NotFoundContext{Workspace: p.Workspace.Path, Home: p.home, Filesystem: p.Filesystem, Host: h}
}

// NotFoundHint is (*Policy).NotFoundHint of the policy and host c was taken from, for
// a command of spec (its mounts, its process's args and working directory); "" when the
// host has nothing to offer either.
func (c NotFoundContext) NotFoundHint(spec *config.Config, name, path string) string {
	p := &Policy{Workspace: Workspace{Path: c.Workspace}, Filesystem: c.Filesystem, home: c.Home}
	return p.NotFoundHint(c.Host, spec, name, path)
}
