package policy

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// maxIncludeDepth is how deep git follows include.path and includeIf.*.path (config.c
// MAX_INCLUDE_DEPTH): past it git stops with an error, and so does the guard.
const maxIncludeDepth = 10

// configTargetKind is how a config setting's value names something git reads or runs.
type configTargetKind int

const (
	notTarget   configTargetKind = iota
	includeFile                  // a config file git reads next (relative: to the including file)
	hooksDir                     // a directory of programs (relative: to the worktree)
	dataFile                     // a file git reads as data the workspace's own files could give (relative: to the worktree)
	trustFile                    // a file git trusts (signers, CAs, cookies): kept or refused, never left to the command
	command                      // a shell command (a word with a slash: a program or script)
)

// configTarget classifies the setting section[.sub].key (git-config(1), "Variables":
// those whose value is a path git reads or a command git runs).
func configTarget(e configEntry) configTargetKind {
	s, k := e.section, e.key
	switch {
	case k == "path" && (s == "include" || s == "includeif"):
		return includeFile
	case s == "core" && k == "hookspath",
		s == "init" && k == "templatedir",    // its hooks/ is copied into each new repository
		s == "instaweb" && k == "modulepath": // httpd loads modules from it
		return hooksDir
	case s == "core" && (k == "attributesfile" || k == "excludesfile"):
		return dataFile
	case s == "gpg" && e.sub == "ssh" && (k == "allowedsignersfile" || k == "revocationfile"),
		// their content git copies into the repository (COMMIT_EDITMSG) or mail headers:
		// a link the command repoints would copy any file the host user can read
		// (attack review 29 F5)
		s == "commit" && k == "template",
		s == "format" && k == "signaturefile", // copied into each patch (attack review 31 F10)
		s == "sendemail" && k == "aliasesfile",
		s == "sendemail" && k == "smtpsslcertpath",
		s == "http" && (k == "sslcapath" || k == "sslcainfo" || k == "cookiefile"):
		return trustFile
	case s == "core" && (k == "fsmonitor" || k == "sshcommand" || k == "pager" || k == "editor" || k == "askpass" || k == "gitproxy" || k == "alternaterefscommand"),
		s == "submodule" && k == "update" && strings.HasPrefix(strings.TrimSpace(e.value), "!"),
		s == "trailer" && (k == "cmd" || k == "command"),
		s == "remote" && (k == "url" || k == "pushurl") && strings.HasPrefix(strings.TrimSpace(e.value), "ext::"),
		s == "url" && (k == "insteadof" || k == "pushinsteadof") && strings.HasPrefix(e.sub, "ext::"),
		s == "guitool" && k == "cmd",
		s == "imap" && k == "tunnel",
		s == "instaweb" && (k == "httpd" || k == "browser"),
		s == "help" && k == "browser",
		s == "sequence" && k == "editor",
		s == "pager",
		s == "alias" && strings.HasPrefix(strings.TrimSpace(e.value), "!"),
		s == "filter" && (k == "clean" || k == "smudge" || k == "process"),
		s == "diff" && (k == "textconv" || k == "command" || k == "external"),
		s == "merge" && k == "driver",
		s == "credential" && k == "helper",
		s == "gpg" && (k == "program" || k == "defaultkeycommand"),
		s == "interactive" && k == "difffilter",
		(s == "difftool" || s == "mergetool" || s == "man" || s == "browser") && (k == "cmd" || k == "path"),
		s == "web" && k == "browser",
		s == "remote" && (k == "uploadpack" || k == "receivepack"),
		s == "uploadpack" && k == "packobjectshook",
		s == "sendemail" && (k == "sendmailcmd" || k == "smtpserver" || k == "tocmd" || k == "cccmd"),
		s == "hook" && k == "command",
		// git archive's compressor for --format=<format>: git-archive(1), not listed
		// by git help --config (attack review 31 F9)
		s == "tar" && k == "command",
		// git-lfs's programs (git-lfs-config(5)): a custom transfer agent, and an
		// extension's clean and smudge commands
		s == "lfs" && strings.HasPrefix(strings.ToLower(e.sub), "customtransfer.") && k == "path",
		s == "lfs" && strings.HasPrefix(strings.ToLower(e.sub), "extension.") && (k == "clean" || k == "smudge"):
		return command
	}
	return notTarget
}

// configLast is the last value entries set for section.key (no subsection), as git
// takes it; "" when none.
func configLast(entries []configEntry, section, key string) string {
	v := ""
	for _, e := range entries {
		if e.section == section && e.sub == "" && !e.dotted && e.key == key && e.set {
			v = e.value
		}
	}
	return v
}

// settingName is e's name as git-config(1) writes it, for messages.
func settingName(e configEntry) string {
	n := e.section + "." + e.key
	if e.sub != "" {
		n = e.section + "." + e.sub + "." + e.key
	}
	switch {
	case strings.HasPrefix(e.env, "GIT_CONFIG_"):
		return n + " (from the environment's " + e.env + ")"
	case strings.HasPrefix(e.env, "default "):
		return "git's default " + n + " (" + strings.TrimPrefix(e.env, "default ") + ")"
	case e.env != "":
		return "the environment's " + e.env
	}
	return n
}

// guardConfigTargets makes read-only what the config git reads for the checkout
// worktree whose git dir is gd sends git to inside a writable tree: the caller's system
// and global files (rb.globals), gd's config, its common dir's config for a linked
// worktree, and config.worktree (read whether or not extensions.worktreeConfig is set: a
// superset), followed through include.path and includeIf.*.path (every condition taken
// as true) to maxIncludeDepth, and the settings the caller's environment carries
// (gitEnvOf). guardConfigSetting says what each setting gets.
func (plan *gitPlan) guardConfigTargets(worktree, gd string, inWritable func(string) bool) error {
	_, err := plan.configTargets(worktree, gd, inWritable)
	return err
}

// sourcedEntry is a setting and the config file (or "the environment") it was read from.
type sourcedEntry struct {
	file string
	e    configEntry
}

// configTargets is guardConfigTargets, returning every setting it read, in the order
// git reads them (includes in place).
func (plan *gitPlan) configTargets(worktree, gd string, inWritable func(string) bool) ([]sourcedEntry, error) {
	var seen []sourcedEntry
	outer := plan.seen
	plan.seen = &seen
	defer func() { plan.seen = outer }()
	err := plan.guardConfigSources(worktree, gd, inWritable)
	return seen, err
}

func (plan *gitPlan) guardConfigSources(worktree, gd string, inWritable func(string) bool) error {
	files := plan.reads.rb.globalFiles()
	files = append(files, filepath.Join(gd, "config"), filepath.Join(gd, "config.worktree"))
	c, err := plan.reads.commondirOf(gd)
	if err != nil {
		return err
	}
	if c != "" {
		files = append(files, filepath.Join(c, "config"))
	}
	outerDirs := plan.gitDirs
	plan.gitDirs = []string{gd, c}
	defer func() { plan.gitDirs = outerDirs }()
	if plan.mode == "" && plan.writable != nil {
		// an enclosing repository's git dir (outside the trees): its hooks and info/
		// files may still lead into them (attack review 29 F12)
		for _, d := range []string{gd, c} {
			if d == "" || inWritable(d) {
				continue
			}
			if err := plan.guardHooksDir(filepath.Join(d, "hooks"), "", "the git dir "+d, inWritable); err != nil {
				return err
			}
			if err := plan.guardInfoEntries(d, "", inWritable); err != nil {
				return err
			}
		}
	}
	for _, named := range files {
		f, err := resolveWritable(named, "git (a config file it reads)", inWritable)
		if err != nil {
			return err
		}
		plan.nameConfig(f, named)
		if inWritable(f) && filepath.Base(f) == "config.worktree" {
			if _, err := os.Lstat(f); err == nil {
				plan.readOnly = append(plan.readOnly, f)
			}
		}
		if err := plan.guardConfigFile(f, worktree, inWritable, 0); err != nil {
			return err
		}
	}
	if err := plan.guardConfigEntries(envSource, plan.reads.rb.envEntries(), worktree, inWritable, 0); err != nil {
		return err
	}
	return plan.guardHostGit(worktree, inWritable)
}

// guardHostGit looks up the host user's git on their PATH as their shell would, a
// relative entry (".", empty) taken from dir (the repository's top, or with dir "" the
// launcher's directory): a git in a writable tree's root is read-only, and a writable
// PATH directory before theirs, where the command could put a git of its own, is
// noted (guardPathProgram).
func (plan *gitPlan) guardHostGit(dir string, inWritable func(string) bool) error {
	if dir == "" && plan.reads.rb != nil {
		dir = plan.reads.rb.env.cwd
	}
	return plan.guardPathProgram(envSource, dir, "the host's git command itself", cmdWord{text: "git", program: true}, true, inWritable)
}

// envSource names the caller's environment as where settings come from.
const envSource = "the environment"

// guardGlobalConfig is guardConfigTargets for the caller's system and global files
// alone, with no checkout (relative settings other than includes are left to the
// repositories' guards): host git reads them wherever it runs.
func (plan *gitPlan) guardGlobalConfig(inWritable func(string) bool) error {
	for _, g := range plan.reads.rb.globalFiles() {
		f, err := resolveWritableR(plan.reads.rb.files(), g, "git (a config file it reads)", inWritable)
		if err != nil {
			return err
		}
		plan.nameConfig(f, g)
		if inWritable(f) {
			_, err := os.Lstat(f)
			switch {
			case err == nil:
				plan.readOnly = append(plan.readOnly, f)
			case f != g && os.IsNotExist(err):
				return errorf("protected", f, nil, "the git config file %s is a symlink to this missing file in a tree the sandbox can write: the command could create it; create it or remove the link", g)
			}
		}
		if err := plan.guardConfigFile(f, "", inWritable, 0); err != nil {
			return err
		}
	}
	if err := plan.guardConfigEntries(envSource, plan.reads.rb.envEntries(), "", inWritable, 0); err != nil {
		return err
	}
	return plan.guardHostGit("", inWritable)
}

// guardConfigFile guards the settings of the config file f (a missing one has none)
// and of the files it includes.
func (plan *gitPlan) guardConfigFile(f, worktree string, inWritable func(string) bool, depth int) error {
	if depth > maxIncludeDepth {
		return errorf("protected", f, nil, "git config includes nested more than %d deep (git refuses them too): remove the include loop", maxIncludeDepth)
	}
	plan.reads.rb.stamp(f)
	var b []byte
	var err error
	if inWritable(f) {
		b, err = plan.reads.config(f) // the final component not followed: checked by the includer
	} else {
		var empty bool
		b, empty, err = plan.reads.rb.outsideConfig(f) // the user's own, e.g. a dotfiles repository's link
		if empty {
			return nil // GIT_CONFIG_GLOBAL=/dev/null: nothing
		}
	}
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.ENOTDIR) {
		// none to read; or one the caller (whose uid reads it here) cannot read, which
		// their own git skips too (a global file) or stops at (an include)
		return nil
	}
	if err != nil {
		return errorf("protected", f, err, "cannot read this git config file, so cannot guard what it names")
	}
	entries, ok := parseGitConfig(string(b))
	if !ok {
		return errorf("protected", f, nil, "this git config file does not parse (git refuses it too), so what it names cannot be guarded: fix it")
	}
	return plan.guardConfigEntries(f, entries, worktree, inWritable, depth)
}

// guardConfigEntries guards the settings entries read from f (a config file's path,
// or envSource), noting each in plan.seen when set.
func (plan *gitPlan) guardConfigEntries(f string, entries []configEntry, worktree string, inWritable func(string) bool, depth int) error {
	for _, e := range entries {
		if plan.seen != nil {
			*plan.seen = append(*plan.seen, sourcedEntry{f, e})
		}
		if err := plan.guardConfigSetting(f, worktree, e, inWritable, depth); err != nil {
			return err
		}
	}
	return nil
}

// charDevice reports whether p is a character device (/dev/null), which git reads as
// an empty config.
func charDevice(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// guardConfigSetting guards what one setting of the config file f names in a writable
// tree: an included file read-only (a missing one, or a symlink, refused: the command
// could write config there), then its own settings; core.hooksPath read-only as a tree
// (created empty when missing); a data file read-only when there; for a command, each
// word with a slash that names a file read-only (a missing first word, or a symlink,
// refused). A command word with no slash is looked up on PATH (guardPathProgram:
// read-only in a writable tree's root, else noted; README, Known limits).
func (plan *gitPlan) guardConfigSetting(f, worktree string, e configEntry, inWritable func(string) bool, depth int) error {
	kind := configTarget(e)
	if e.section == "alias" && e.set && kind == notTarget {
		// a git alias without "!" may carry settings of its own (git -c KEY=VALUE)
		return plan.guardGitOptions(f, worktree, settingName(e), e.value, inWritable)
	}
	if kind == notTarget || !e.set {
		return nil
	}
	name := settingName(e)
	v := strings.TrimSpace(e.value)
	if kind == command {
		if e.section == "url" {
			v = e.sub // the URL the rewrite gives
		}
		// git-remote-ext(1): "ext::<command> <args>" runs the command (%S, %G: ours)
		v = strings.TrimPrefix(strings.TrimPrefix(v, "ext::"), "!")
		if e.section == "core" && e.key == "fsmonitor" || e.section == "pager" {
			switch strings.ToLower(v) {
			case "", "true", "false", "yes", "no", "on", "off", "1", "0":
				return nil
			}
		}
		if e.section == "credential" && !strings.HasPrefix(strings.TrimSpace(e.value), "!") && !filepath.IsAbs(v) {
			// credential.c: a helper "foo --opt" runs `git credential-foo --opt`, which
			// runs git-credential-foo from git's exec path, then PATH
			if w := strings.Fields(v); len(w) > 0 && !strings.Contains(w[0], "/") {
				v = "git-credential-" + v
			}
		}
		return plan.guardCommand(f, worktree, name, v, cmdWord{}, 0, inWritable)
	}
	base := worktree
	if kind == includeFile {
		base = ""
		if filepath.IsAbs(f) { // git refuses a relative include from the command line
			base = filepath.Dir(f)
			if n, ok := plan.configNames[f]; ok {
				// git takes a relative include from the file as it named it, not from
				// where its links lead (~/.gitconfig -> dotfiles/x/gitconfig: from ~)
				base = filepath.Dir(n)
			}
		}
	}
	for _, named := range plan.configPaths(v, base) {
		if err := plan.guardConfigPath(f, worktree, name, named, e, v, kind, inWritable, depth); err != nil {
			return err
		}
	}
	return nil
}

// guardConfigPath is guardConfigSetting for one path, named, that its setting names (kind
// configTarget's; v the value as written).
func (plan *gitPlan) guardConfigPath(f, worktree, name, named string, e configEntry, v string, kind configTargetKind, inWritable func(string) bool, depth int) error {
	p, err := resolveWritable(named, "git config "+name+" (in "+f+")", inWritable)
	if err != nil {
		return err
	}
	if kind == includeFile {
		plan.nameConfig(p, named)
	}
	if inWritable(p) {
		st, err := os.Lstat(p)
		switch {
		case err == nil && kind == dataFile && !st.Mode().IsRegular() && !nonBlocking(p):
			// a FIFO, a device, or a link to one: the host's git would block or read
			// without end (attack review 29 F18)
			return errorf("protected", p, nil, "git config %s (in %s) names it and it is (or leads to) a FIFO, socket or device, which the host's git would block on or read without end: remove it", name, f)
		case err == nil && st.Mode()&os.ModeSymlink != 0 && kind == dataFile:
			// data the workspace's own .gitattributes or .gitignore could say anyway:
			// not followed, not refused (an earlier command could have planted it where
			// the file was missing, and a refusal would stop every later launch)
		case err == nil && st.Mode()&os.ModeSymlink != 0:
			return errorf("protected", p, nil, "git config %s (in %s) names it and it is a symlink: it cannot be kept read-only", name, f)
		case err == nil:
			plan.readOnly = append(plan.readOnly, p)
		case os.IsNotExist(err) && kind == hooksDir:
			plan.makeDirs = append(plan.makeDirs, p)
			plan.readOnly = append(plan.readOnly, p)
			plan.reads.rb.noteMadeHooks(p, name)
		case os.IsNotExist(err) && kind == trustFile:
			return errorf("protected", p, nil, "git config %s (in %s) trusts it but it does not exist: the command could create it; create it or remove the setting", name, f)
		case os.IsNotExist(err) && kind == includeFile:
			return errorf("protected", p, nil, "git config %s (in %s) includes it but it does not exist: the command could write config there; create it or remove the setting", name, f)
		case os.IsNotExist(err):
			// data only (attributes, excludes, a template): what the workspace's own
			// .gitattributes or .gitignore could say anyway
		default:
			return errorf("protected", p, err, "cannot check the path git config %s names", name)
		}
	}
	if kind == includeFile {
		return plan.guardConfigFile(p, worktree, inWritable, depth+1)
	}
	if kind == hooksDir {
		return plan.guardHooksSetting(f, name, e, v, p, inWritable)
	}
	return nil
}

// guardHooksSetting guards the hooks a hooks-directory setting (core.hooksPath,
// init.templateDir) at p gives git, entry by entry (guardHooksDir: links into a
// writable tree, hard links); and for a relative core.hooksPath the directory git's push
// hooks take it from, <gitdir>/<value> and <commondir>/<value> (they run with $GIT_DIR
// as their directory, githooks(5)): read-only when there, created empty and read-only
// when missing in a writable git dir (attack review 29 F3).
func (plan *gitPlan) guardHooksSetting(f, name string, e configEntry, v, p string, inWritable func(string) bool) error {
	what := "git config " + name + " (in " + f + ")"
	switch {
	case e.section == "core":
		if err := plan.guardHooksDir(p, pinnedIf(p, inWritable), what, inWritable); err != nil {
			return err
		}
	case e.section == "init":
		hooks := filepath.Join(p, "hooks")
		if err := plan.guardHooksDir(hooks, pinnedIf(p, inWritable), what, inWritable); err != nil {
			return err
		}
		return nil
	default:
		return nil
	}
	if filepath.IsAbs(v) || strings.HasPrefix(v, "~") {
		return nil
	}
	for _, d := range plan.gitDirs {
		if d == "" {
			continue
		}
		q, err := resolveWritable(filepath.Join(d, v), what, inWritable)
		if err != nil {
			return err
		}
		if inWritable(q) {
			st, err := os.Lstat(q)
			switch {
			case err == nil && st.Mode()&os.ModeSymlink != 0:
				return errorf("protected", q, nil, "%s is relative, so git's push hooks take it from the git dir, where it is a symlink: it cannot be kept read-only; remove it", what)
			case err == nil:
				plan.readOnly = append(plan.readOnly, q)
			case os.IsNotExist(err) && plan.mode != GitReadOnly:
				plan.makeDirs = append(plan.makeDirs, q)
				plan.readOnly = append(plan.readOnly, q)
			case os.IsNotExist(err):
				// the git dir is read-only whole: the command cannot create it
			default:
				return errorf("protected", q, err, "cannot check the hooks directory %s gives git's push hooks", what)
			}
		}
		if err := plan.guardHooksDir(q, pinnedIf(q, inWritable), what+" (for push hooks, from "+d+")", inWritable); err != nil {
			return err
		}
	}
	return nil
}

// pinnedIf is p when it lies in a writable tree (its guard keeps it read-only), else "".
func pinnedIf(p string, inWritable func(string) bool) string {
	if inWritable(p) {
		return p
	}
	return ""
}

// nonBlocking reports whether the data file p, followed, is a regular file, a
// directory, or missing: what git reads to an end without blocking.
func nonBlocking(p string) bool {
	st, err := os.Stat(p)
	if err == nil && st.Mode()&os.ModeCharDevice != 0 {
		r, _ := filepath.EvalSymlinks(p)
		return r == "/dev/null" // empty
	}
	return err != nil || st.Mode().IsRegular() || st.IsDir()
}

// nameConfig notes that git reads the config file f under the name named (where its
// links lead differs), for the relative includes in it.
func (plan *gitPlan) nameConfig(f, named string) {
	if f == named {
		return
	}
	if plan.configNames == nil {
		plan.configNames = map[string]string{}
	}
	plan.configNames[f] = named
}

// configPath is the path a config value v names for the launcher's git (configPaths'
// first), or "" when it cannot be told.
func (plan *gitPlan) configPath(v, base string) string {
	if ps := plan.configPaths(v, base); len(ps) > 0 {
		return ps[0]
	}
	return ""
}

// configPaths are the paths a config value v names: "~/" expanded as git does with each
// name of the caller's home (rb.homes: the launcher's $HOME first, then the passwd
// home the account's other shells have; attack review 38 F1), "~user/" with that user's
// home, a relative one joined to base (none when base is ""); none when it cannot be
// told.
func (plan *gitPlan) configPaths(v, base string) []string {
	if v == "" {
		return nil
	}
	if strings.HasPrefix(v, "~") {
		u, rest, _ := strings.Cut(v[1:], "/")
		var homes, out []string
		if u == "" {
			homes = plan.reads.rb.homeDirs()
		} else if pw, err := user.Lookup(u); err == nil {
			homes = []string{pw.HomeDir}
		}
		for _, home := range homes {
			if p := filepath.Join(home, rest); filepath.IsAbs(home) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
		return out
	}
	if p := plan.configPathOne(v, base); p != "" {
		return []string{p}
	}
	return nil
}

// configPathOne is configPaths for a v that does not start with "~".
func (plan *gitPlan) configPathOne(v, base string) string {
	if filepath.IsAbs(v) {
		return filepath.Clean(v)
	}
	if base == "" {
		return ""
	}
	return filepath.Join(base, v)
}

// guardCommandWord guards what one word of the command git config name (in f) runs
// names in a writable tree: the path in an option (-o...=PATH, -FPATH) or the word, when
// it holds a slash, taken relative to the worktree and, after a `cd DIR`, to DIR too:
// each that is a regular file made read-only; a symlink refused; a missing program or
// path-like argument (pathLike; in the cd's directory) refused, since the command could
// create it; such a word whose path the guard cannot tell (an expansion, a cd it cannot
// follow) refused. Other words with a slash (origin/main, a URL) are left alone.
func (plan *gitPlan) guardCommandWord(f, worktree, name string, w cmdWord, inWritable func(string) bool) error {
	t := w.text
	if w.program && !strings.Contains(t, "/") {
		return plan.guardPathProgram(f, worktree, "git config "+name, w, false, inWritable)
	}
	if strings.HasPrefix(t, "-") {
		if i := strings.IndexByte(t, '='); i >= 0 {
			t = t[i+1:]
		} else if len(t) > 2 && t[1] != '-' {
			t = t[2:]
		} else {
			return nil
		}
	}
	if strings.ContainsAny(t, "*?[") {
		if w.program || w.named || w.input || hasScriptExt(t) {
			// the shell runs whatever matches: the guard cannot tell which files
			return errorf("protected", f, nil, "git config %s runs a shell command that runs or reads the files a glob %q matches, which the guard cannot keep read-only: name each file literally, or remove the setting", name, w.text)
		}
		return nil
	}
	if !strings.Contains(t, "/") {
		// a bare name the program opens from the directory it runs in (sh lint.sh,
		// python3 conv.py, make -f ci.mk, sh < x): attack review 29 F1
		return plan.guardBareWord(f, worktree, name, t, w, inWritable)
	}
	named := w.program || w.named || w.input || pathLike(t) // what the shell runs or hands over as a file
	if w.unknown && !named {
		return nil // e.g. HEAD:refs/for/$1: a ref, not a file
	}
	if w.unknown {
		return errorf("protected", f, nil, "git config %s runs a shell command whose path %q depends on an expansion or a cd the guard cannot follow, so what it runs cannot be kept read-only: name the program by a literal path (relative to the repository's top or absolute), or remove the setting", name, w.text)
	}
	runs := plan.configPath(t, worktree) // the one the shell uses
	var paths []string
	if w.dir != "" {
		if d := plan.configPath(w.dir, worktree); d != "" {
			if runs != "" {
				paths = append(paths, runs)
			}
			runs = plan.configPath(t, d)
		}
	}
	if runs == "" {
		return nil
	}
	paths = append(paths, runs)
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
			return errorf("protected", p, nil, "git config %s names it in its command (in %s) and it is a symlink: it cannot be kept read-only; name its target, or remove the setting", name, f)
		case err == nil && st.IsDir() && w.script:
			return scriptDirError(f, name, p)
		case err == nil && st.Mode().IsRegular():
			plan.readOnly = append(plan.readOnly, p)
		case os.IsNotExist(err) && i == len(paths)-1 && named:
			// a program, or a script or file handed to one: the command could create it
			return errorf("protected", p, nil, "git config %s (in %s) names it in its command but it does not exist: the command could create it; create it or remove the setting", name, f)
		case err != nil && !os.IsNotExist(err):
			return errorf("protected", p, err, "cannot check the program git config %s names", name)
		}
	}
	return nil
}

// scriptExts are the extensions of files a command hands to an interpreter.
var scriptExts = [...]string{".sh", ".bash", ".py", ".pl", ".rb", ".js", ".mjs", ".cjs", ".ts", ".php", ".lua", ".tcl"}

// pathLike reports whether a command's argument word t (holding a slash) reads as a file
// path rather than a ref or URL: it starts with ./ ../ / ~ $ or a backquote, or ends in a
// script's extension.
func pathLike(t string) bool {
	for _, p := range [...]string{"./", "../", "/", "~", "$", "`"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	for _, e := range scriptExts {
		if strings.HasSuffix(t, e) {
			return true
		}
	}
	return false
}

// guardCommand guards each word of the shell command v (commandWords), in the directory
// and with the unknowns of outer (the word of an enclosing command v was quoted in: sh -c
// 'cd web && ./x.sh', ProxyCommand=...). A word that holds a blank or an operator is
// such a nested command (depth at most 4; deeper is refused as not followed).
func (plan *gitPlan) guardCommand(f, worktree, name, v string, outer cmdWord, depth int, inWritable func(string) bool) error {
	if depth > 4 {
		return errorf("protected", f, nil, "git config %s nests shell commands in quotes too deep to follow: simplify it", name)
	}
	var a argState
	for _, w := range commandWords(v) {
		w.unknown = w.unknown || outer.unknown
		if outer.dir != "" {
			if w.dir == "" || !(filepath.IsAbs(w.dir) || strings.HasPrefix(w.dir, "~")) {
				w.dir = filepath.Join(outer.dir, w.dir)
			}
		}
		w.shell = depth > 0 || strings.ContainsAny(v, shellMeta)
		prev, prog := a.prev, a.prog
		module := a.next(&w)
		if prog == "git" && !w.program && !w.input {
			// git -c KEY=VALUE, --config-env: a setting of its own (attack review 29 F10)
			if done, err := plan.guardGitOption(f, worktree, name, prev, w, inWritable); done || err != nil {
				if err != nil {
					return err
				}
				continue
			}
		}
		if module != "" {
			if err := plan.guardPythonModule(f, worktree, name, module, w, inWritable); err != nil {
				return err
			}
			continue
		}
		if val, ok := assignment(w.text); ok && !strings.HasPrefix(w.text, "-") {
			// KEY=VALUE (ProxyCommand=./x, an environment assignment): the value is a
			// path or a command of its own (attack review 29 F11)
			vw := w
			vw.text, vw.program, vw.named, vw.script = val, false, false, false
			if strings.ContainsAny(val, " \t\n;&|()<>") {
				if err := plan.guardCommand(f, worktree, name, val, vw, depth+1, inWritable); err != nil {
					return err
				}
			} else if err := plan.guardCommandWord(f, worktree, name, vw, inWritable); err != nil {
				return err
			}
			continue
		}
		if strings.ContainsAny(w.text, " \t\n;&|()<>") {
			if err := plan.guardCommand(f, worktree, name, w.text, w, depth+1, inWritable); err != nil {
				return err
			}
			continue
		}
		if err := plan.guardCommandWord(f, worktree, name, w, inWritable); err != nil {
			return err
		}
	}
	return nil
}
