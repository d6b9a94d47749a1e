package policy

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/gosbx/gosbx/nsinit/config"
)

// Shadowed reports a command name (no slash) that the sandbox of spec would run as a
// different file than the host's lookup on the same PATH finds: the first match on the
// sandbox's PATH (spec.Process.Env), resolved as execvp(3) on the host would, is a file
// seen inside whose symlink chain or #! interpreter leads out of the sandbox, so the
// lookup inside skips it (ENOENT) and runs a later match, which is seen inside whole.
// It returns the path of the skipped match and of the one that would run, or "", ""
// when there is no such pair (the trial's finding F1: an activated venv whose python3
// links into ~/.pyenv/versions/X ran /usr/bin/python3 with exit 0). It reads the host
// only.
func Shadowed(spec *config.Config, name string) (skipped, runs string) {
	if name == "" || strings.Contains(name, "/") || spec.Process == nil {
		return "", ""
	}
	var path string
	for _, kv := range spec.Process.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	r := newResolver()
	v := visibility(spec)
	// whole: the file at p is seen inside, and every hop of its symlink chain and of its
	// #! interpreter's
	whole := func(p string) bool {
		c, err := followChain(r, p, nil)
		if err != nil {
			return false
		}
		for _, h := range c.hops {
			if !v(h) {
				return false
			}
		}
		if interp := shebang(c.last()); filepath.IsAbs(interp) {
			ic, err := followChain(r, interp, nil)
			if err != nil {
				return false
			}
			for _, h := range ic.hops {
				if !v(h) {
					return false
				}
			}
		}
		return true
	}
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			continue // the host's lookup passes it by too
		}
		if skipped == "" {
			if dir, err := r.evalSymlinks(d); err != nil || !v(filepath.Join(dir, name)) || whole(p) {
				return "", "" // not seen inside (the sandbox passes it by too), or it runs
			}
			skipped = p
			continue
		}
		if whole(p) {
			return skipped, p
		}
	}
	return "", ""
}

// ShadowedHint is the message for a command Shadowed found, from the policy and host c
// was taken from: the host's view of the skipped file (NotFoundHint's, naming the
// flags that bind its target), or a generic fix when that view names no root.
func (c NotFoundContext) ShadowedHint(spec *config.Config, name, skipped, runs string) string {
	why := c.NotFoundHint(spec, name, skipped)
	if why == "" {
		why = Shown(skipped) + ": where its symlink or #! interpreter leads is outside the sandbox: bind that tree with --ro DIR, or use --toolchain auto"
	}
	return Shown(name) + ": not run: on the sandbox's PATH it is " + why + "; the sandbox's lookup would skip it and run " + Shown(runs) + " instead"
}
