package policy

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// gitEnv is what the caller's environment tells the host's git about its config and
// the programs it runs (git-config(1) ENVIRONMENT, git(1) ENVIRONMENT; git 2.39's
// config.c and git.c setup_path). The launcher's environment is the host user's, the
// one their next git inherits.
type gitEnv struct {
	// globals are the system and global config files git reads before a repository's
	// own, a superset (gitEnvOf): /etc/gitconfig, GIT_CONFIG_SYSTEM, GIT_CONFIG_GLOBAL,
	// $XDG_CONFIG_HOME/git/config, and ~/.config/git/config and ~/.gitconfig of every
	// name of the home; whatever GIT_CONFIG_NOSYSTEM says.
	globals []string
	// entries are the settings GIT_CONFIG_PARAMETERS (git -c) and GIT_CONFIG_COUNT,
	// GIT_CONFIG_KEY_<n>, GIT_CONFIG_VALUE_<n> carry, and GIT_TEMPLATE_DIR and
	// GIT_EXEC_PATH as the directories of programs they are; each names its variable.
	entries []configEntry
	// path is the caller's PATH (or /usr/bin:/bin when unset), relative entries as
	// written; execPath git's exec path, which git puts before it for the programs it
	// runs (git.c setup_path), "" when not known.
	path     []string
	cwd      string // the launcher's directory: where the user's shell takes "." from
	execPath string
	// execPathOf, when execPath is not set by GIT_EXEC_PATH, finds it on first use
	// (defaultExecPath): most launches look up no program.
	execPathOf func(r *resolver) string
}

// envCommands are the environment variables whose value is a command git runs, and the
// setting each stands for (git(1) ENVIRONMENT; git-var(1) GIT_EDITOR, GIT_PAGER).
var envCommands = [...]struct{ env, section, key string }{
	{"GIT_PAGER", "core", "pager"}, {"PAGER", "core", "pager"},
	{"GIT_EDITOR", "core", "editor"}, {"VISUAL", "core", "editor"}, {"EDITOR", "core", "editor"},
	{"GIT_SEQUENCE_EDITOR", "sequence", "editor"},
	{"GIT_SSH_COMMAND", "core", "sshcommand"}, {"GIT_SSH", "core", "sshcommand"},
	{"GIT_ASKPASS", "core", "askpass"}, {"SSH_ASKPASS", "core", "askpass"},
	{"GIT_EXTERNAL_DIFF", "diff", "external"},
	{"GIT_PROXY_COMMAND", "core", "gitproxy"},
}

// envLookup is the value of k in env (KEY=VALUE, the last one wins), and whether it is
// set.
func envLookup(env []string, k string) (string, bool) {
	v, ok := "", false
	for _, kv := range env {
		if s, found := strings.CutPrefix(kv, k+"="); found {
			v, ok = s, true
		}
	}
	return v, ok
}

// gitEnvOf reads env (the caller's, KEY=VALUE) as git does. homes are every name of
// the caller's home ("~": $HOME and the passwd entry's); cwd the caller's working
// directory, against which a relative path in a variable is taken (git takes it against
// the directory it runs in). An error (*Error, field "protected") is a
// GIT_CONFIG_PARAMETERS or GIT_CONFIG_COUNT that git would refuse too.
//
// globals are a superset: what a git with env reads, and what the account's git in
// another shell reads (its passwd home, no GIT_CONFIG_* narrowing; attack review 38 F1):
// /etc/gitconfig whatever GIT_CONFIG_NOSYSTEM or GIT_CONFIG_SYSTEM say, and
// ~/.config/git/config and ~/.gitconfig of every home whatever GIT_CONFIG_GLOBAL or
// XDG_CONFIG_HOME say. A guard that reads one file more only makes more read-only.
func gitEnvOf(env []string, homes []string, cwd string) (gitEnv, error) {
	g := gitEnv{cwd: cwd}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) || cwd == "" {
			return p
		}
		return filepath.Join(cwd, p)
	}
	add := func(f string) {
		if !slices.Contains(g.globals, f) {
			g.globals = append(g.globals, f)
		}
	}
	add("/etc/gitconfig")
	if v, ok := envLookup(env, "GIT_CONFIG_SYSTEM"); ok && v != "" { // even under GIT_CONFIG_NOSYSTEM: a superset
		add(abs(v))
	}
	if v, ok := envLookup(env, "GIT_CONFIG_GLOBAL"); ok && v != "" {
		add(abs(v))
	}
	if xdg, _ := envLookup(env, "XDG_CONFIG_HOME"); xdg != "" {
		add(filepath.Join(abs(xdg), "git/config"))
	}
	for _, home := range homes {
		if filepath.IsAbs(home) {
			add(filepath.Join(home, ".config/git/config"))
		}
	}
	for _, home := range homes {
		if filepath.IsAbs(home) {
			add(filepath.Join(home, ".gitconfig"))
		}
	}
	params, err := gitConfigParameters(env)
	if err != nil {
		return g, err
	}
	g.entries = params
	// commands the environment names (git(1) ENVIRONMENT, git-var(1)), read as the
	// settings they stand for
	for _, c := range envCommands {
		if v, ok := envLookup(env, c.env); ok && v != "" {
			g.entries = append(g.entries, configEntry{section: c.section, key: c.key, value: v, set: true, env: c.env})
		}
	}
	// and the programs git runs when nothing names one (its built-in defaults): a
	// superset, whether or not a setting overrides them
	for _, d := range [...][3]string{{"core", "pager", "less"}, {"core", "editor", "vi"}, {"core", "sshcommand", "ssh"}, {"gpg", "program", "gpg"}} {
		g.entries = append(g.entries, configEntry{section: d[0], key: d[1], value: d[2], set: true, env: "default " + d[2]})
	}
	if v, ok := envLookup(env, "GIT_TEMPLATE_DIR"); ok && v != "" {
		g.entries = append(g.entries, configEntry{section: "init", key: "templatedir", value: abs(v), set: true, env: "GIT_TEMPLATE_DIR"})
	}
	execPath, ok := envLookup(env, "GIT_EXEC_PATH")
	if ok && execPath != "" {
		execPath = abs(execPath)
		g.entries = append(g.entries, configEntry{section: "core", key: "hookspath", value: execPath, set: true, env: "GIT_EXEC_PATH"})
		g.execPath = execPath
	} else {
		g.execPathOf = func(r *resolver) string { return defaultExecPath(r, env) }
	}
	if p, ok := envLookup(env, "PATH"); ok {
		g.path = append(g.path, strings.Split(p, ":")...)
	} else {
		g.path = append(g.path, "/usr/bin", "/bin") // glibc's _PATH_DEFPATH
	}
	return g, nil
}

// defaultExecPath is the exec path git was built with (git --exec-path, which is not
// run here: the git on PATH could be the command's), found beside the first git on
// env's PATH: <prefix>/lib/git-core or <prefix>/libexec/git-core, whichever holds git;
// "" when neither does. git puts it before PATH for every program it runs.
func defaultExecPath(r *resolver, env []string) string {
	p, _ := envLookup(env, "PATH")
	for _, d := range strings.Split(p, ":") {
		if !filepath.IsAbs(d) {
			continue
		}
		if _, err := r.lstat(filepath.Join(d, "git")); err != nil {
			continue // one call where most entries have none
		}
		b, err := r.evalSymlinks(filepath.Join(d, "git"))
		if err != nil {
			continue
		}
		if st, err := r.stat(b); err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
			continue
		}
		prefix := filepath.Dir(filepath.Dir(b))
		for _, c := range []string{"lib/git-core", "libexec/git-core"} {
			x := filepath.Join(prefix, c)
			if st, err := r.stat(filepath.Join(x, "git")); err == nil && st.Mode().IsRegular() {
				return x
			}
		}
		return ""
	}
	return ""
}

// gitConfigParameters are the settings of GIT_CONFIG_PARAMETERS ('key'='value' or the
// older 'key=value' words, shell-single-quoted, as git -c passes them to its children;
// config.c parse_config_env_list) and of GIT_CONFIG_COUNT with GIT_CONFIG_KEY_<n> and
// GIT_CONFIG_VALUE_<n> (git_config_from_env), in that order.
func gitConfigParameters(env []string) ([]configEntry, error) {
	var out []configEntry
	bad := func(what string) error {
		return errorf("protected", "", nil, "the environment's %s does not parse as git reads it (git refuses it too), so the settings it carries cannot be guarded: fix or unset it", what)
	}
	if v, ok := envLookup(env, "GIT_CONFIG_PARAMETERS"); ok {
		cur := v
		for cur != "" {
			key, rest, ok := sqDequoteStep(cur)
			if !ok {
				return nil, bad("GIT_CONFIG_PARAMETERS")
			}
			var value string
			hasValue := false
			switch {
			case rest == "" || isSpace(rest[0]):
				key, value, hasValue = strings.Cut(key, "=") // old style 'key=value'
				key = strings.TrimSpace(key)
			case rest[0] == '=':
				rest = rest[1:]
				switch {
				case rest != "" && rest[0] == '\'':
					value, rest, ok = sqDequoteStep(rest)
					if !ok || rest != "" && !isSpace(rest[0]) {
						return nil, bad("GIT_CONFIG_PARAMETERS")
					}
					hasValue = true
				case rest == "" || isSpace(rest[0]):
				default:
					return nil, bad("GIT_CONFIG_PARAMETERS")
				}
			default:
				return nil, bad("GIT_CONFIG_PARAMETERS")
			}
			e, ok := envConfigEntry(key, value, hasValue, "GIT_CONFIG_PARAMETERS")
			if !ok {
				return nil, bad("GIT_CONFIG_PARAMETERS")
			}
			out = append(out, e)
			cur = strings.TrimLeft(rest, " \t\n\v\f\r")
		}
	}
	if v, _ := envLookup(env, "GIT_CONFIG_COUNT"); v != "" {
		n, err := strconv.ParseUint(v, 10, 31)
		if err != nil || n > uint64(len(env)) { // more than env holds: a key is missing
			return nil, bad("GIT_CONFIG_COUNT")
		}
		for i := range int(n) {
			k, ok1 := envLookup(env, "GIT_CONFIG_KEY_"+strconv.Itoa(i))
			val, ok2 := envLookup(env, "GIT_CONFIG_VALUE_"+strconv.Itoa(i))
			if !ok1 || !ok2 {
				return nil, bad("GIT_CONFIG_COUNT (a GIT_CONFIG_KEY_<n> or GIT_CONFIG_VALUE_<n> missing)")
			}
			e, ok := envConfigEntry(k, val, true, "GIT_CONFIG_KEY_"+strconv.Itoa(i))
			if !ok {
				return nil, bad("GIT_CONFIG_KEY_" + strconv.Itoa(i))
			}
			out = append(out, e)
		}
	}
	return out, nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// sqDequoteStep undoes one shell-single-quoted word at the start of s (quote.c
// sq_dequote_step: '...' runs, joined by \' or \!), returning it and what follows.
func sqDequoteStep(s string) (word, rest string, ok bool) {
	if s == "" || s[0] != '\'' {
		return "", "", false
	}
	var b strings.Builder
	i := 1
	for {
		j := strings.IndexByte(s[i:], '\'')
		if j < 0 {
			return "", "", false
		}
		b.WriteString(s[i : i+j])
		i += j + 1
		if i+2 < len(s) && s[i] == '\\' && (s[i+1] == '\'' || s[i+1] == '!') && s[i+2] == '\'' {
			b.WriteByte(s[i+1])
			i += 3
			continue
		}
		return b.String(), s[i:], true
	}
}

// envConfigEntry is the setting key (section[.sub].name; config.c git_config_parse_key:
// section and name case-insensitive) with value, carried by the variable env; ok is
// false for a key git refuses.
func envConfigEntry(key, value string, hasValue bool, env string) (configEntry, bool) {
	first, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
	if first <= 0 || last == len(key)-1 {
		return configEntry{}, false
	}
	e := configEntry{section: strings.ToLower(key[:first]), key: strings.ToLower(key[last+1:]), value: value, set: hasValue, env: env}
	if last > first {
		e.sub = key[first+1 : last]
	}
	return e, true
}
