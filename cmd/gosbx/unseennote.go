package main

import (
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// unseenFirstNote is the note for a command of spec that exited non-zero while its name
// (no slash) ran as another file than your PATH finds first on the host
// (policy.UnseenFirst: the host's first match lies where the sandbox shows nothing, a
// pyenv shim under agent, and a system copy ran): the failure may be that interpreter's
// missing package (new-user trial 2026-12-02 T6: python3 was /usr/bin/python3 without
// the pyenv version's requests, and nothing said so). Only after a failure: under agent
// the system's interpreter is what the profile means to run (README, Profiles), and a
// note on every success would be one the user does not need. A session's supervisor
// gives its commands the same (its fix then in session start's form, sessionMountFix).
// "" when toolchains are auto already (auto: toolchainAuto; what auto leaves out, a
// credential path, it leaves out on purpose), or there is no such pair. A shell's
// commands are not looked into.
func unseenFirstNote(spec *config.Config, auto bool) string {
	if spec.Process == nil || len(spec.Process.Args) == 0 || auto {
		return ""
	}
	name := spec.Process.Args[0]
	first, runs := policy.UnseenFirst(spec, name)
	if first == "" {
		return ""
	}
	return "gosbx: note: the command failed, and " + name + " here is " + policy.Shown(runs) + ", not " + policy.Shown(first) +
		", which your PATH finds first: the sandbox does not show it (this policy binds none of your own toolchains), so its " +
		"packages are not here either; --toolchain auto binds yours (the build profile's default), see README, Your toolchains"
}

// toolchainAuto reports whether the policy eff binds the caller's toolchains as
// --toolchain auto does.
func toolchainAuto(eff *policy.Policy) bool {
	tc := eff.Filesystem.Toolchains
	return tc != nil && tc.Mode == policy.ToolchainAuto
}
