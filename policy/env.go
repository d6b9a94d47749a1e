package policy

import "strings"

// DefaultPath is PATH inside when the caller has none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// environment builds the command's environment: the caller's PATH, LANG, LC_*, TZ,
// TERM, USER, LOGNAME and SHELL (default /bin/sh); HOME and TMPDIR pointing at the
// private ones; the variables named by PassEnv;
// then Env. Everything else of the caller (secrets, LD_PRELOAD, SSH_AUTH_SOCK) is dropped.
func environment(o Options, h Host, home string) ([]string, error) {
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
	if _, ok := set["PATH"]; !ok {
		put("PATH", DefaultPath)
	}
	if _, ok := set["SHELL"]; !ok {
		put("SHELL", "/bin/sh") // else tmux and others fall back to the passwd shell, often nologin
	}
	put("HOME", home)
	put("TMPDIR", "/tmp")
	for _, k := range o.PassEnv {
		if k == "" || strings.Contains(k, "=") {
			return nil, errorf("pass-env", "", nil, "bad variable name %q", k)
		}
		if v, ok := caller[k]; ok {
			put(k, v)
		}
	}
	for _, kv := range o.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, errorf("env", "", nil, "want KEY=VALUE, got %q", kv)
		}
		put(k, v)
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
