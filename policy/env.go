package policy

import (
	"sort"
	"strings"
)

// DefaultPath is PATH inside when neither the policy nor the caller has one.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// envAllow are the caller's variables kept; LC_* too. DESIGN.md's list plus the
// caller's identity and shell (USER, LOGNAME, SHELL): tmux and shells read them, and
// they reveal nothing the uid does not.
var envAllow = []string{"PATH", "LANG", "TZ", "TERM", "USER", "LOGNAME", "SHELL"}

// environment builds the command's environment: the caller's PATH, LANG, LC_*, TZ,
// TERM, USER, LOGNAME and SHELL (default /bin/sh); HOME and TMPDIR pointing at the
// private ones; the policy's environment.pass (the caller's values), environment.path
// and path_prepend, then environment.set (with the caller's --env). Everything else of
// the caller (secrets, LD_PRELOAD, SSH_AUTH_SOCK) is dropped.
func environment(p *Policy, h Host, home string) ([]string, error) {
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
	if len(e.PathPrepend) > 0 {
		put("PATH", strings.Join(e.PathPrepend, ":")+":"+set["PATH"])
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
