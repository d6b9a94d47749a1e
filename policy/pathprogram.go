package policy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gosbx/gosbx/nsinit/cleanup"
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
	r, link, err := resolveConfigPathR(rb.files(), d, inWritable)
	pd := pathDir{resolved: r, link: link, err: err, writable: inWritable(d) || inWritable(r) || link != ""}
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
// child looks it up (git's exec path first, then rb.env.path; a relative entry, "." or
// empty, taken from the directory the command runs in: the worktree's top, or its
// literal cd). The first match that lies in a writable tree, or is reached through a
// symlink into one, is made read-only when that pins nothing the command could remove
// (keepOrNote). A PATH directory in a writable tree searched before it (each, when
// nothing matches) is not guarded: the command could put its own program of that name
// there, and the launch notes the entry (notePath, pathNoteText). No placeholder is made:
// one left directories on the host and pinned their parents (rm -rf .venv failed with
// EBUSY). A PATH directory reached through a symlink in a writable tree is refused. A
// shell builtin or keyword, when sh runs the command, and a variable assignment are no
// program. For the host's git itself (hostGit), the caller's PATH alone is searched
// (the user's shell finds git).
func (plan *gitPlan) guardPathProgram(f, worktree, name string, w cmdWord, hostGit bool, inWritable func(string) bool) error {
	rb := plan.reads.rb
	prog := w.text
	if rb == nil || len(rb.env.path) == 0 || prog == "" || w.unknown || w.shell && shellBuiltin(prog) || strings.Contains(prog, "=") {
		return nil
	}
	base := worktree
	if w.dir != "" {
		base = plan.configPath(w.dir, worktree)
	}
	key := prog + "\x00" + base
	if hostGit {
		key += "\x00git"
	}
	if rb.pathSeen[key] {
		return nil // planned already in this launch (a global setting, for each repository)
	}
	if rb.pathSeen == nil {
		rb.pathSeen = map[string]bool{}
	}
	rb.pathSeen[key] = true
	path := rb.env.path
	if !hostGit {
		if rb.env.execPath == "" && rb.env.execPathOf != nil {
			rb.env.execPath, rb.env.execPathOf = rb.env.execPathOf(rb.files()), nil
		}
		if rb.env.execPath != "" {
			path = append([]string{rb.env.execPath}, path...)
		}
	}
	for _, e := range path {
		d := e
		if !filepath.IsAbs(d) {
			if base == "" {
				continue // no checkout: each repository's guard takes it from its own top
			}
			d = filepath.Join(base, d)
		}
		d = filepath.Clean(d)
		pd := plan.pathDirOf(d, inWritable)
		if pd.err != nil {
			return errorf("protected", d, pd.err, "cannot resolve this PATH directory, so cannot tell which %s %s runs", prog, name)
		}
		c := filepath.Join(pd.resolved, prog)
		if pd.writable {
			if pd.link != "" {
				return errorf("protected", pd.link, nil, "%s (in %s) runs %s, which the host looks up on PATH, and the PATH entry %s leads through this symlink, which lies in a tree the sandbox can write (the command could repoint it): take the entry off PATH or name the directory itself", name, f, prog, e)
			}
			st, err := rb.files().lstat(c)
			switch {
			case err == nil && isProgram(st):
				plan.keepOrNote(c, e, d, prog)
				return nil // the match
			case err == nil && st.Mode()&os.ModeSymlink != 0:
				found, err := plan.pathSymlink(c, e, d, name, f, inWritable)
				if err != nil || found {
					return err
				}
			case err == nil && (st.Mode().IsRegular() || st.IsDir()):
				plan.keepOrNote(c, e, d, prog) // passed over by the lookup, and kept so where that pins nothing
			case err == nil || errors.Is(err, os.ErrNotExist):
				// missing, or a FIFO, socket or device (passed over too, not bound: opening
				// one to bind it could block): the command could put its own there
				rb.notePath(e, d, prog)
			default:
				return errorf("protected", c, err, "cannot check the PATH entry %s for the %s that %s (in %s) runs", e, prog, name, f)
			}
			continue
		}
		if _, err := rb.files().lstat(c); err != nil {
			continue
		}
		r, err := resolveWritableR(rb.files(), c, name+" (in "+f+", found on PATH)", inWritable)
		if err != nil {
			return err
		}
		if inWritable(r) {
			if st, err := rb.files().lstat(r); err == nil && isProgram(st) {
				plan.keepOrNote(r, e, d, prog)
				return nil
			}
			return errorf("protected", c, nil, "%s (in %s) runs %s, found on PATH here, a symlink to %s in a tree the sandbox can write that is not a program: the command could create it; fix the link or remove the setting", name, f, prog, r)
		}
		if st, err := rb.files().stat(c); err == nil && isProgram(st) {
			return nil // the host's own
		}
	}
	return nil
}

// keepOrNote makes c (a program, or a name the lookup passes over, in a writable tree)
// read-only when it lies in a writable tree's root: that bind pins only c's own name
// (the root is a mount point already). Deeper, the bind and the pinning of every
// directory above it (compile.go) would keep the command from removing them (rm -rf
// .venv fails with EBUSY, measured), so c is left writable and the PATH entry e
// (resolved d) is noted for prog instead.
func (plan *gitPlan) keepOrNote(c, e, d, prog string) {
	rb := plan.reads.rb
	if slices.Contains(rb.trees, filepath.Dir(c)) {
		plan.readOnly = append(plan.readOnly, c)
		return
	}
	rb.notePath(e, d, prog)
}

// pathSymlink guards the symlink c found in a writable PATH directory (a venv's
// bin/python -> python3 -> /usr/bin/python3.11): no mount can keep a symlink, so each
// link of its chain that lies in a writable tree is put back as it was after the run
// (cleanup.RestoreSymlink, as a .git symlink is: a link whose directory is gone is not
// made again), and the program it leads to, when in a writable tree, is read-only or
// its PATH entry e (resolved d) noted (keepOrNote). found reports whether it leads to
// a program (the match); one that does not is passed over by the lookup. A directory
// on the way that is a symlink in a writable tree is refused (the command could
// repoint it).
func (plan *gitPlan) pathSymlink(c, e, d, name, f string, inWritable func(string) bool) (found bool, err error) {
	res := plan.reads.rb.files()
	cur := c
	for hops := 0; ; hops++ {
		if hops > maxConfigLinks {
			return false, errorf("protected", c, nil, "%s (in %s) runs the program at this symlink on PATH, whose links do not end", name, f)
		}
		st, err := res.lstat(cur)
		if err != nil {
			return false, nil // dangling: the lookup passes it over (restored after the run)
		}
		if st.Mode()&os.ModeSymlink == 0 {
			if !isProgram(st) {
				return false, nil
			}
			if inWritable(cur) {
				plan.keepOrNote(cur, e, d, filepath.Base(c))
			}
			return true, nil
		}
		text, err := res.readlink(cur)
		if err != nil {
			return false, errorf("protected", cur, err, "cannot read this symlink, which %s (in %s) runs through PATH", name, f)
		}
		if inWritable(cur) {
			plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RestoreSymlink, Path: cur, Target: text})
		}
		next := text
		if !filepath.IsAbs(next) {
			next = filepath.Join(filepath.Dir(cur), next)
		}
		dir, link, err := resolveConfigPathR(res, filepath.Dir(next), inWritable)
		if err != nil {
			return false, errorf("protected", next, err, "cannot resolve the symlink %s, which %s (in %s) runs through PATH", cur, name, f)
		}
		if link != "" {
			return false, errorf("protected", link, nil, "%s (in %s) runs the program the symlink %s on PATH leads to, through this symlink, which lies in a tree the sandbox can write (the command could repoint it): link to the program's own directory", name, f, cur)
		}
		cur = filepath.Join(dir, filepath.Base(next))
	}
}
