package policy

import (
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// UnseenFirst reports a command name (no slash) whose first match on the sandbox's PATH
// (spec.Process.Env, looked up as Shadowed looks it up), executable by the caller, lies
// where the sandbox shows nothing (a PATH entry under the caller's home under agent:
// pyenv's shims, nvm's bin), while a later match is seen inside whole and runs there:
// the sandbox's lookup passes the first by, as the sandbox is meant to (agent binds no
// toolchain of the caller's), and runs another interpreter, without the first's
// packages, with no word of it (new-user trial 2026-12-02 T6). It returns the host's
// first match and the file that runs inside, or "", "" (no such pair, or a relative
// entry the host does not see as the sandbox does). Shadowed reports the other case,
// a first match that is seen inside but leads out. It reads the host only.
func UnseenFirst(spec *config.Config, name string) (hostFirst, runs string) {
	if name == "" || strings.Contains(name, "/") || spec.Process == nil {
		return "", ""
	}
	path := sandboxDefaultPath
	for _, kv := range spec.Process.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	r := newResolver()
	v := visibility(spec)
	for _, d := range strings.Split(path, ":") {
		raw := d
		if raw == "" {
			raw = "."
		}
		if !filepath.IsAbs(raw) {
			if !filepath.IsAbs(spec.Process.Cwd) {
				return "", ""
			}
			raw = strings.TrimSuffix(spec.Process.Cwd, "/") + "/" + raw
		}
		dir, view, err := walkEntry(r, spec, v, raw)
		if view == viewUnseen && raw != d {
			return "", ""
		}
		if err != nil {
			continue
		}
		p := strings.TrimSuffix(dir, "/") + "/" + name
		var st syscall.Stat_t
		if syscall.Stat(p, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			continue
		}
		if hostFirst == "" {
			if unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS) != nil {
				continue // the host's lookup passes it by too
			}
			if view != viewUnseen && (view != viewSame || v(p)) {
				return "", "" // seen inside (it runs, or Shadowed has its say)
			}
			hostFirst = raw + "/" + name
			continue
		}
		if view == viewSame && v(p) && seenWhole(r, v, p) && execInside(spec, resolvedPath(r, p), &st) == execYes {
			return hostFirst, p
		}
	}
	return "", ""
}
