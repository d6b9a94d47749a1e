package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gosbx/gosbx/internal/rundir"
	"github.com/gosbx/gosbx/internal/session"
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// checkRunDirHidden refuses a spec that binds the caller's sessions' runtime directory
// into the sandbox, read-only or not, or a tree that holds it, or anything inside it (a
// --ro, --rw or a policy's bind; the workspace is refused already, as the cleanup
// journals' directory): a command that can open a session's lock file can hold a shared
// flock(2) on it, and the sweep would take that session's supervisor for alive for as
// long (its leftovers kept, its name taken) (from an attack review, F7). A caller with
// no runtime directory for sessions has nothing to hide.
// Not only this environment's directory: every one a gosbx of the caller's under
// another environment would use (rundir.Candidates: /run/user/UID/gosbx,
// /tmp/gosbx-UID, /run/gosbx), whether or not it exists yet (attack review 34 F6).
// Not only by name: a bind source that is another name of one (a bind mount of it, of a
// directory above it, or inside the source) is refused the same (attack review rsess
// F1), told from the mount table (policy.MountTable.NestsByMount); a table that cannot
// be read stops the launch.
func checkRunDirHidden(spec *config.Config) error {
	uid := os.Getuid()
	current, err := session.DirPath()
	if err != nil {
		current = ""
	}
	dirs := rundir.Candidates(uid, os.Getenv("XDG_RUNTIME_DIR"))
	if current != "" && !slices.Contains(dirs, current) {
		dirs = append(dirs, current)
	}
	// each bind's source resolved once, not once per candidate directory (a launch
	// has ~10 binds and 3 candidates: 50 lstats were 30 repeats), and each lstat made
	// once over the check (the binds share /dev, /usr, /run): it creates nothing
	eval := policy.EvalSymlinksOnce()
	srcs := make([]string, len(spec.Mounts))
	for i, m := range spec.Mounts {
		if m.Type == "bind" && filepath.IsAbs(m.Source) {
			srcs[i] = canonicalPath(eval, m.Source)
		}
	}
	var table *policy.MountTable
	for _, d := range dirs {
		rd := canonicalPath(eval, d)
		for i, m := range spec.Mounts {
			if m.Type != "bind" || !filepath.IsAbs(m.Source) {
				continue
			}
			src := srcs[i]
			if !within(rd, src) && !within(src, rd) {
				if table == nil {
					t, err := policy.ReadMountTable()
					if err != nil {
						return fmt.Errorf("bind %s: read the mount table to tell whether it reaches the runtime directory %s: %w", m.Source, rd, err)
					}
					table = t
				}
				via, ok := table.NestsByMount(src, rd)
				if !ok {
					continue
				}
				how := "it is, holds or lies in the runtime directory " + rd + " under another name (a bind mount)"
				if via != src {
					how = "it holds the mount " + via + ", which is, holds or lies in the runtime directory " + rd + " under another name"
				}
				return fmt.Errorf("bind %s: %s (the sessions' sockets and lock files, the cleanup journals): a command that reaches it could hold a session's lock to stop the cleanup of a crashed session, or plant a cleanup journal; bind a narrower tree, or set XDG_RUNTIME_DIR to a directory of yours outside it", m.Source, how)
			}
			if d == current {
				return fmt.Errorf("bind %s: it holds, or is in, the runtime directory %s (the sessions' sockets and lock files, the cleanup journals): a command that reaches it could hold a session's lock to stop the cleanup of a crashed session, or plant a cleanup journal; bind a narrower tree, or set XDG_RUNTIME_DIR to a directory of yours outside it", m.Source, rd)
			}
			return fmt.Errorf("bind %s: it holds, or is in, %s, the runtime directory gosbx uses for you under another environment (without XDG_RUNTIME_DIR: cron, ssh, sudo -u; the sessions' sockets and lock files, the cleanup journals): a command that reaches it could plant a cleanup journal that such a launch carries out, or hold a session's lock; bind a narrower tree", m.Source, rd)
		}
	}
	return nil
}

// canonicalPath is p with every symlink resolved (eval: filepath.EvalSymlinks or one
// that answers as it does); a missing tail stays as named.
func canonicalPath(eval func(string) (string, error), p string) string {
	if c, err := eval(p); err == nil {
		return c
	}
	if c, err := eval(filepath.Dir(p)); err == nil {
		return filepath.Join(c, filepath.Base(p))
	}
	return filepath.Clean(p)
}

// within reports whether p is dir or lies under it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
