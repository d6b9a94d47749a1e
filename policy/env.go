package policy

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// DefaultPath is PATH inside when neither the policy nor the caller has one.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// envAllow are the caller's variables kept; LC_* too. the design's list (README.md, "The boundary") plus the
// caller's identity and shell (USER, LOGNAME, SHELL): tmux and shells read them, and
// they reveal nothing the uid does not.
var envAllow = []string{"PATH", "LANG", "TZ", "TERM", "USER", "LOGNAME", "SHELL"}

// environment builds the command's environment: the caller's PATH, LANG, LC_*, TZ,
// TERM, USER, LOGNAME and SHELL (default /bin/sh); the caller's VIRTUAL_ENV when that
// directory is visible inside (mounts: the sandbox's, as Build made them); HOME and
// TMPDIR pointing at the private ones; the policy's environment.pass (the caller's
// values), environment.path and path_prepend (prependPath), then environment.set (with
// the caller's --env), with git: commit's identity (GitIdentity) and, in network mode
// none only, environment.offline below those two.
// Everything else of the caller (secrets, LD_PRELOAD,
// SSH_AUTH_SOCK) is dropped.
func environment(p *Policy, h Host, home string, mounts []specs.Mount) ([]string, error) {
	caller := map[string]string{}
	for _, kv := range h.Environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			caller[k] = v
		}
	}
	set := map[string]string{}
	var order []string
	put := func(k, v string) {
		if _, ok := set[k]; !ok {
			order = append(order, k)
		}
		set[k] = v
	}
	for _, kv := range h.Environ {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "LC_") || contains(envAllow, k) {
			put(k, v)
		}
	}
	e := p.Environment
	if e.Path != "" {
		put("PATH", e.Path)
	}
	if _, ok := set["PATH"]; !ok {
		put("PATH", DefaultPath)
	}
	set["PATH"] = p.substPath(set["PATH"])
	venv := caller["VIRTUAL_ENV"]
	if len(e.PathPrepend) > 0 {
		put("PATH", prependPath(e.PathPrepend, set["PATH"], venv))
	}
	if venv != "" && visibleDir(venv, mounts) {
		put("VIRTUAL_ENV", venv)
	}
	if _, ok := set["SHELL"]; !ok {
		put("SHELL", "/bin/sh") // else tmux and others fall back to the passwd shell, often nologin
	}
	put("HOME", home)
	put("TMPDIR", "/tmp")
	if p.Network.Mode == NetProxy {
		for _, kv := range proxyEnv {
			k, v, _ := strings.Cut(kv, "=")
			put(k, v)
		}
	}
	if p.cache != nil {
		dir := home + "/.cache"
		for _, v := range cacheVars {
			if _, set := e.Set[v[0]]; !set {
				put(v[0], strings.TrimSuffix(dir+"/"+v[1], "/"))
			}
		}
	}
	if p.Network.Mode == NetNone && len(p.Network.HostPorts) == 0 && len(e.Offline) > 0 {
		// no network: none, and no host port (a host's loopback service, a local
		// package index, is one; a published port is inbound only). Below Pass and
		// Set: a policy's or the caller's own value wins
		keys := make([]string, 0, len(e.Offline))
		for k := range e.Offline {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			put(k, e.Offline[k])
		}
	}
	for _, kv := range e.gitIdent {
		k, v, _ := strings.Cut(kv, "=")
		put(k, v) // below Pass and Set: the caller's explicit values win
	}
	for _, k := range e.Pass {
		if v, ok := caller[k]; ok {
			put(k, v)
		}
	}
	keys := make([]string, 0, len(e.Set))
	for k := range e.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		put(k, e.Set[k])
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+set[k])
	}
	return env, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// prependPath puts the policy's path_prepend dirs in front of the PATH list path, but
// after the caller's activated virtual environments (the leading entries of path that
// are venv/bin or hold a pyvenv.cfg beside them, PEP 405): an activated venv's python
// and pip keep precedence over a toolchain's. A prepend dir path already holds keeps
// the caller's place and is not repeated.
func prependPath(prepend []string, path, venv string) string {
	entries := filepath.SplitList(path)
	lead := 0
	for lead < len(entries) && isVenvBin(entries[lead], venv) {
		lead++
	}
	had := map[string]bool{}
	for _, e := range entries {
		had[filepath.Clean(e)] = true
	}
	out := append([]string{}, entries[:lead]...)
	for _, d := range prepend {
		if !had[filepath.Clean(d)] {
			had[filepath.Clean(d)] = true
			out = append(out, d)
		}
	}
	return strings.Join(append(out, entries[lead:]...), ":")
}

// isVenvBin reports whether the PATH entry e is a Python virtual environment's bin
// directory: $VIRTUAL_ENV/bin, or a directory whose parent holds pyvenv.cfg (PEP 405).
func isVenvBin(e, venv string) bool {
	if e == "" || !filepath.IsAbs(e) || filepath.Base(filepath.Clean(e)) != "bin" {
		return false
	}
	if venv != "" && filepath.Clean(e) == filepath.Join(venv, "bin") {
		return true
	}
	st, err := os.Stat(filepath.Join(filepath.Dir(filepath.Clean(e)), "pyvenv.cfg"))
	return err == nil && st.Mode().IsRegular()
}

// visibleDir reports whether the absolute path dir names a directory that the sandbox
// shows at the same path: the deepest of mounts holding it (and holding its canonical
// path, when it was named through a symlink) is a bind of a host tree at its own path.
// A dir under a private tmpfs (the HOME) or in no bind at all is not visible.
func visibleDir(dir string, mounts []specs.Mount) bool {
	if !filepath.IsAbs(dir) {
		return false
	}
	dir = filepath.Clean(dir)
	canon, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	if st, err := os.Stat(canon); err != nil || !st.IsDir() {
		return false
	}
	for _, d := range []string{dir, canon} {
		var m *specs.Mount
		for i := range mounts {
			if under(d, mounts[i].Destination) && (m == nil || len(mounts[i].Destination) > len(m.Destination)) {
				m = &mounts[i]
			}
		}
		if m == nil || m.Type != "bind" || m.Source != m.Destination {
			return false
		}
	}
	return true
}
