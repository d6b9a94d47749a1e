package policy

import (
	"os"
	"path/filepath"
	"strings"
)

// Attack review 29 F1, F10, F11: the words of a command-valued setting that name what
// the program opens without a slash (sh lint.sh, python3 -m tools.lint, make -f ci.mk,
// sh < x), the settings a git word carries (git -c KEY=VALUE), and the value of a
// KEY=VALUE word (ssh -o ProxyCommand=./x).

// argState follows the simple commands of one command as guardCommand walks its words:
// the program and the word before, to tell an interpreter's script and a file option's
// argument from other words.
type argState struct {
	prog       string // the current simple command's program, base name ("" none yet)
	prev       string // the word before, in the same simple command
	scriptDone bool   // the interpreter's script (or code, -c/-e) has been seen
}

// next notes the word w, marking it named when it is a file the program opens (an
// interpreter's script, the argument of -f/-F, an input redirection's target, a glob
// of scripts), and returns the module of python -m ("" none).
func (a *argState) next(w *cmdWord) (module string) {
	prev := a.prev
	a.prev = w.text
	if w.program {
		a.prev = ""
		if _, ok := assignment(w.text); ok || shellLead(w.text) {
			return ""
		}
		a.prog, a.scriptDone = filepath.Base(w.text), false
		a.prev = w.text
		return ""
	}
	if strings.ContainsAny(w.text, "*?[") && hasScriptExt(w.text) && a.prog != "git" {
		w.named = true // for f in checks/*.sh: the scripts a later word runs
	}
	interp := interpreter(a.prog)
	switch {
	case w.input:
		if interp && !a.scriptDone {
			a.scriptDone = true
		}
		return ""
	case a.prog == "git-credential-store" && prev == "--file":
		// the helper's credentials file: data it reads and writes, created on the
		// first store, so a missing one is no script to refuse (attack review 31;
		// decisions.md "r31cfg"); an existing one is still kept read-only
		return ""
	case a.prog != "git" && fileOption(prev) && !strings.HasPrefix(w.text, "-"):
		w.named = true
		return ""
	case !interp || a.scriptDone:
		return ""
	case valueOption(prev):
		return "" // -W ignore, -o pipefail, -I dir: an option's value
	case codeOption(a.prog, prev):
		a.scriptDone = true // code, not a file: a nested command when it holds blanks
		return ""
	case prev == "-m" && strings.HasPrefix(a.prog, "python"):
		a.scriptDone = true
		return w.text
	case strings.HasPrefix(w.text, "-"):
		return ""
	}
	w.named, w.script, a.scriptDone = true, true, true
	return ""
}

// interpreter reports whether prog (a base name) runs a script file its first
// argument names.
func interpreter(prog string) bool {
	p := strings.TrimRight(prog, "0123456789.")
	switch p {
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "python", "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "luajit", "tclsh", "wish", "Rscript", "source", ".":
		return true
	}
	return false
}

// valueOption reports whether prev is an interpreter's option that takes the next word
// as its value (python -W/-X, perl -I/-M, node -r, sh -o).
func valueOption(prev string) bool {
	switch prev {
	case "-W", "-X", "-I", "-M", "-r", "--require", "--import", "-o", "+o", "-O":
		return true
	}
	return false
}

// interpreterOf reports whether prog (a base name, a version suffix ignored) is one of
// names.
func interpreterOf(prog string, names ...string) bool {
	p := strings.TrimRight(prog, "0123456789.")
	for _, n := range names {
		if p == n {
			return true
		}
	}
	return false
}

// codeOption reports whether the word after prev is code for prog, not a file.
func codeOption(prog, prev string) bool {
	shell := !interpreterOf(prog, "python", "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "luajit", "tclsh", "wish", "Rscript")
	if shell && len(prev) > 1 && prev[0] == '-' && prev[1] != '-' && strings.HasSuffix(prev, "c") {
		return true // sh -c, bash -lc, sh -ec
	}
	switch prev {
	case "-c":
		return true
	case "-e", "-E", "--eval", "-p", "--print", "-r":
		return !strings.HasPrefix(strings.TrimRight(prog, "0123456789."), "python")
	}
	return false
}

// fileOption reports whether the word after prev is a file its program reads
// (make -f ci.mk, ssh -F ssh_config, bash --rcfile x).
func fileOption(prev string) bool {
	switch prev {
	case "-f", "-F", "--file", "--makefile", "--rcfile", "--init-file":
		return true
	}
	return false
}

// assignment splits a KEY=VALUE word whose KEY is a name (letters, digits, _ . -),
// returning VALUE.
func assignment(t string) (string, bool) {
	k, v, ok := strings.Cut(t, "=")
	if !ok || k == "" {
		return "", false
	}
	for _, c := range k {
		if !(c == '_' || c == '.' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return "", false
		}
	}
	return v, true
}

// hasScriptExt reports whether t ends in a script's extension (scriptExts).
func hasScriptExt(t string) bool {
	for _, e := range scriptExts {
		if strings.HasSuffix(t, e) {
			return true
		}
	}
	return false
}

// bareWordPaths are the files a word t without a slash names: relative to the worktree
// and, after a literal cd, to its directory (the last is the one the shell uses).
func (plan *gitPlan) bareWordPaths(worktree, t string, w cmdWord) []string {
	var paths []string
	if p := plan.configPath(t, worktree); p != "" {
		paths = append(paths, p)
	}
	if w.dir != "" {
		if d := plan.configPath(w.dir, worktree); d != "" {
			paths = append(paths, filepath.Join(d, t))
		}
	}
	return paths
}

// guardBareWord guards the argument word t, without a slash, of the command git config
// name (in f) runs: a regular file of that name in a writable tree (where the command
// runs) is made read-only; a symlink there refused when the program opens it (w.named,
// w.input) or it reads as a script; a missing one refused when the program opens it.
func (plan *gitPlan) guardBareWord(f, worktree, name, t string, w cmdWord, inWritable func(string) bool) error {
	named := w.named || w.input
	if t == "" || (t == "." || t == "..") && !w.script {
		return nil
	}
	if w.unknown {
		if named {
			return errorf("protected", f, nil, "git config %s runs a shell command whose script or input %q depends on an expansion or a cd the guard cannot follow, so what it runs cannot be kept read-only: name it by a literal path, or remove the setting", name, w.text)
		}
		return nil
	}
	paths := plan.bareWordPaths(worktree, t, w)
	for i, p := range paths {
		p, err := resolveWritable(p, "git config "+name+" (in "+f+")", inWritable)
		if err != nil {
			return err
		}
		if !inWritable(p) {
			continue
		}
		st, err := os.Lstat(p)
		switch {
		case err == nil && st.Mode()&os.ModeSymlink != 0:
			if named || hasScriptExt(t) {
				return errorf("protected", p, nil, "git config %s (in %s) runs a command that opens it and it is a symlink: it cannot be kept read-only; name its target, or remove the setting", name, f)
			}
		case err == nil && st.IsDir() && w.script:
			return scriptDirError(f, name, p)
		case err == nil && st.Mode().IsRegular():
			plan.readOnly = append(plan.readOnly, p)
		case os.IsNotExist(err) && i == len(paths)-1 && named:
			return errorf("protected", p, nil, "git config %s (in %s) runs a command that opens it (a script, or a file option's argument) but it does not exist: the command could create it; create it or remove the setting", name, f)
		case err != nil && !os.IsNotExist(err):
			return errorf("protected", p, err, "cannot check the file git config %s opens", name)
		}
	}
	return nil
}

// scriptDirError refuses a setting name (in f) whose command hands the directory p in
// a writable tree to a program as its script or file (python3 tool runs
// tool/__main__.py, node . runs package.json's main or index.js): what the program
// loads from it is chosen by files the command could add or rewrite, so no fixed set
// of read-only files keeps it exact (attack review 31 F5).
func scriptDirError(f, name, p string) error {
	return errorf("protected", p, nil, "git config %s (in %s) runs a command that opens this directory as its script (python runs its __main__.py, node its package.json's main or index.js), which the guard cannot keep read-only: name the script file itself, or remove the setting", name, f)
}

// guardPythonModule guards the module mod of `python -m mod` in the command git config
// name runs: when its top-level package or module lies in the directory the command
// runs in (python puts it first on sys.path), its files (mod.py or mod/__main__.py,
// and each package's __init__.py) are made read-only, and a missing one is refused.
// A module not found there is python's own or installed (README, Known limits).
func (plan *gitPlan) guardPythonModule(f, worktree, name, mod string, w cmdWord, inWritable func(string) bool) error {
	if w.unknown {
		return errorf("protected", f, nil, "git config %s runs python -m %q, whose name depends on an expansion: name the module literally, or remove the setting", name, w.text)
	}
	paths := plan.bareWordPaths(worktree, "x", w)
	if len(paths) == 0 {
		return nil
	}
	base := filepath.Dir(paths[len(paths)-1])
	rel := strings.ReplaceAll(mod, ".", "/")
	first, _, _ := strings.Cut(rel, "/")
	_, e1 := os.Lstat(filepath.Join(base, first))
	_, e2 := os.Lstat(filepath.Join(base, first+".py"))
	if e1 != nil && e2 != nil {
		return nil
	}
	cands := []string{rel + ".py", rel + "/__main__.py"}
	parts := strings.Split(rel, "/")
	for i := 1; i <= len(parts); i++ {
		cands = append(cands, strings.Join(parts[:i], "/")+"/__init__.py")
	}
	found := false
	for i, c := range cands {
		p, err := resolveWritable(filepath.Join(base, c), "git config "+name+" (in "+f+")", inWritable)
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		switch {
		case err != nil:
			continue
		case !inWritable(p):
			found = found || i < 2
		case st.Mode()&os.ModeSymlink != 0:
			return errorf("protected", p, nil, "git config %s (in %s) runs python -m %s, which loads it, and it is a symlink: it cannot be kept read-only; remove the setting or the link", name, f, mod)
		case st.Mode().IsRegular():
			plan.readOnly = append(plan.readOnly, p)
			found = found || i < 2
		}
	}
	if !found {
		return errorf("protected", filepath.Join(base, rel+".py"), nil, "git config %s (in %s) runs python -m %s, whose package lies in a tree the sandbox can write but whose module does not exist: the command could create it; create it or remove the setting", name, f, mod)
	}
	return nil
}

// guardGitOption guards the setting a word of a git command carries after prev (git -c
// KEY=VALUE: the setting KEY as guardConfigSetting does; --config-env, which takes the
// value from an environment variable at the time git runs: refused when KEY is a
// setting the guard reads). done reports whether w was such a word.
func (plan *gitPlan) guardGitOption(f, worktree, name, prev string, w cmdWord, inWritable func(string) bool) (bool, error) {
	kv := ""
	switch {
	case prev == "-c":
		kv = w.text
	case prev == "--config-env" || strings.HasPrefix(w.text, "--config-env="):
		t := strings.TrimPrefix(w.text, "--config-env=")
		key, _, _ := strings.Cut(t, "=")
		if e, ok := settingEntry(key, ""); ok && (configTarget(e) != notTarget || e.section == "alias") {
			return true, errorf("protected", f, nil, "git config %s runs git --config-env %s, whose value the guard cannot read at launch: use -c with a literal value, or remove the setting", name, key)
		}
		return true, nil
	default:
		return false, nil
	}
	if w.unknown {
		return true, errorf("protected", f, nil, "git config %s runs git -c %q, which depends on an expansion the guard cannot follow: write the setting literally, or remove it", name, w.text)
	}
	key, val, _ := strings.Cut(kv, "=")
	e, ok := settingEntry(key, val)
	if !ok {
		return true, nil // git refuses it
	}
	return true, plan.guardConfigSetting(f+" (the setting "+key+" that "+name+" gives git -c)", worktree, e, inWritable, 0)
}

// guardGitOptions guards the -c and --config-env settings in v, the value of a git
// alias without "!" (git-config(1): "alias.dft = -c diff.external=difft diff").
func (plan *gitPlan) guardGitOptions(f, worktree, name, v string, inWritable func(string) bool) error {
	prev := ""
	for _, w := range commandWords(v) {
		if _, err := plan.guardGitOption(f, worktree, name, prev, w, inWritable); err != nil {
			return err
		}
		prev = w.text
	}
	return nil
}

// settingEntry is the setting KEY=VALUE as git -c reads it: section.key or
// section.sub.key, section and key case-insensitive; ok false when KEY has no dot.
func settingEntry(key, val string) (configEntry, bool) {
	i, j := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
	if i <= 0 || j == len(key)-1 {
		return configEntry{}, false
	}
	e := configEntry{section: strings.ToLower(key[:i]), key: strings.ToLower(key[j+1:]), value: val, set: true}
	if i != j {
		e.sub = key[i+1 : j]
	}
	return e, true
}
