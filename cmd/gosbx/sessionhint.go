package main

import (
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// withNotFoundHint is gosbx exec's withNotFoundHint for a session's command of spec:
// the hint comes from the context `session start` handed over, the command's working
// directory standing for the caller's (where version files are looked for).
func (sv *supervisor) withNotFoundHint(err error, spec *config.Config) error {
	c := sv.notFound()
	if spec.Process != nil {
		c.Host.Cwd = spec.Process.Cwd
	}
	return withNotFoundHint(err, spec, c)
}

// checkShadowed is gosbx exec's checkShadowed for a session's command of spec, with the
// context withNotFoundHint uses.
func (sv *supervisor) checkShadowed(spec *config.Config) error {
	return checkShadowed(spec, func() policy.NotFoundContext {
		c := sv.notFound()
		if spec.Process != nil {
			c.Host.Cwd = spec.Process.Cwd
		}
		return c
	})
}
