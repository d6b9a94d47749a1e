package main

import (
	"strings"

	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// withNotFoundHint is gosbx exec's withNotFoundHint for a session's command of spec:
// the hint comes from the context `session start` handed over, the command's working
// directory standing for the caller's (where version files are looked for).
// Its fix names the flags of session start, the session's name and the restart:
// exec --session refuses --ro and --toolchain (the session's mounts are fixed).
func (sv *supervisor) withNotFoundHint(err error, spec *config.Config) error {
	c := sv.notFound()
	if spec.Process != nil {
		c.Host.Cwd = spec.Process.Cwd
	}
	err = withNotFoundHint(err, spec, c)
	if nf, ok := err.(*notFound); ok {
		nf.hint = sessionMountFix(nf.hint, sv.name)
	}
	return err
}

// checkShadowed is gosbx exec's checkShadowed for a session's command of spec, with the
// context withNotFoundHint uses, its fix in the session's form (sessionMountFix).
func (sv *supervisor) checkShadowed(spec *config.Config) error {
	err := checkShadowed(spec, func() policy.NotFoundContext {
		c := sv.notFound()
		if spec.Process != nil {
			c.Host.Cwd = spec.Process.Cwd
		}
		return c
	})
	if sh, ok := err.(*shadowed); ok {
		sh.hint = sessionMountFix(sh.hint, sv.name)
	}
	return err
}

// sessionMountFix adds to a 127 hint that names a flag of the sandbox's mounts (--ro,
// --toolchain, --rw) where session name takes it: on its start, of a new session.
func sessionMountFix(hint, name string) string {
	for _, f := range []string{"--ro ", "--toolchain ", "--rw "} {
		if strings.Contains(hint, f) {
			return hint + " (exec --session cannot add mounts; for session " + name + ", at its start: gosbx session stop " + name +
				", then gosbx session start " + name + " with the flag and the others it was started with)"
		}
	}
	return hint
}
