package main

import "github.com/gosbx/gosbx/nsinit/config"

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
