package policy

import (
	"os"
	"path/filepath"
	"strings"
)

// pathDir is one PATH directory as the guard sees it: resolved (resolveConfigPath),
// whether it lies in a writable tree, and the symlink in a writable tree it is reached
// through ("" none: such a link the command could repoint).
type pathDir struct {
	resolved, link string
	writable       bool
	err            error
}

// pathDirOf is d's pathDir, resolved once per launch.
func (plan *gitPlan) pathDirOf(d string, inWritable func(string) bool) pathDir {
	rb := plan.reads.rb
	if pd, ok := rb.pathDirs[d]; ok {
		return pd
	}
	pd := pathDir{resolved: d, writable: inWritable(d)}
	if !pd.writable {
		r, link, err := resolveConfigPath(d, inWritable)
		pd.link, pd.err = link, err
		if err == nil {
			pd.resolved, pd.writable = r, inWritable(r) || link != ""
		}
	}
	if rb.pathDirs == nil {
		rb.pathDirs = map[string]pathDir{}
	}
	rb.pathDirs[d] = pd
	return pd
}

// shellBuiltin reports whether sh runs word itself (a POSIX special or regular
// built-in of dash and bash, or a reserved word): no PATH lookup.
func shellBuiltin(word string) bool {
	switch word {
	case ":", ".", "[", "[[", "]]", "!", "{", "}", "alias", "bg", "break", "case", "cd", "command", "continue",
		"do", "done", "echo", "elif", "else", "esac", "eval", "exec", "exit", "export", "false", "fg",
		"fi", "for", "function", "getopts", "hash", "if", "in", "jobs", "kill", "local", "printf",
		"pwd", "read", "readonly", "return", "select", "set", "shift", "source", "test", "then",
		"times", "trap", "true", "type", "ulimit", "umask", "unalias", "unset", "until", "wait", "while":
		return true
	}
	return false
}

// isProgram reports whether st is what execvp(3) and git's locate_in_PATH run: a
// regular file with an execute bit.
func isProgram(st os.FileInfo) bool { return st.Mode().IsRegular() && st.Mode()&0o111 != 0 }

// guardPathProgram guards the program w (a word without a slash in a program's place)
// of the command git config name (in f) runs, looked up on the caller's PATH as git's
// child looks it up (rb.env.path: git's exec path first; a relative entry, "." or
// empty, taken from the directory the command runs in: the worktree's top, or its
// literal cd): the first match that lies in a writable tree, or is reached through a
// symlink into one, is made read-only; a PATH directory in a writable tree that comes
// before the match (or any, when nothing matches) is refused, naming the setting and
// the entry, since the command could create the program there (attack review 27's
// known limit). A shell builtin or keyword, when sh runs the command, and a variable
// assignment are no program.
func (plan *gitPlan) guardPathProgram(f, worktree, name string, w cmdWord, inWritable func(string) bool) error {
	rb := plan.reads.rb
	prog := w.text
	if rb == nil || len(rb.env.path) == 0 || prog == "" || w.unknown || w.shell && shellBuiltin(prog) || strings.Contains(prog, "=") {
		return nil
	}
	base := worktree
	if w.dir != "" {
		base = plan.configPath(w.dir, worktree)
	}
	for _, e := range rb.env.path {
		d := e
		if !filepath.IsAbs(d) {
			if base == "" {
				continue // no checkout: each repository's guard takes it from its own top
			}
			d = filepath.Join(base, d)
		}
		pd := plan.pathDirOf(filepath.Clean(d), inWritable)
		if pd.err != nil {
			return errorf("protected", d, pd.err, "cannot resolve this PATH directory, so cannot tell which %s git config %s (in %s) runs", prog, name, f)
		}
		c := filepath.Join(pd.resolved, prog)
		if pd.writable {
			if st, err := os.Lstat(c); err == nil && isProgram(st) && pd.link == "" {
				plan.readOnly = append(plan.readOnly, c)
				return nil
			}
			return errorf("protected", d, nil, "git config %s (in %s) runs %s, which the host's git looks up on PATH, and this PATH entry (%s), searched before any %s is found, lies in a tree the sandbox can write: the command could put its own %s there. Remove the entry from PATH or put it after the directory that holds %s, name the program by its absolute path, or remove the setting", name, f, prog, e, prog, prog, prog)
		}
		if _, err := os.Lstat(c); err != nil {
			continue
		}
		r, err := resolveWritable(c, "git config "+name+" (in "+f+", found on PATH)", inWritable)
		if err != nil {
			return err
		}
		if inWritable(r) {
			if st, err := os.Lstat(r); err == nil && isProgram(st) {
				plan.readOnly = append(plan.readOnly, r)
				return nil
			}
			return errorf("protected", c, nil, "git config %s (in %s) runs %s, found on PATH here, a symlink to %s in a tree the sandbox can write that is not a program: the command could create it; fix the link or remove the setting", name, f, prog, r)
		}
		if st, err := os.Stat(c); err == nil && isProgram(st) {
			return nil // the host's own
		}
	}
	return nil // nowhere, and no writable directory on the way: nothing to plant
}
