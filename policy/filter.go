package policy

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/seccomp"
)

//go:generate go run ../internal/filtergen zfilters.go

// LaunchSeccomp is the seccomp configuration a launch applies for sc (nil: the default
// profile) in network mode mode, by a caller of uid callerUID whose command runs as
// uid and gid inside: NetworkSeccomp, then CallerSeccomp, then for a uid 0 caller the
// owner rules (seccomp.ForeignOwnerRules). Build compiles it; internal/filtergen
// compiles it ahead of time for the built-in profiles (zfilters.go).
func LaunchSeccomp(sc *seccomp.Config, mode string, callerUID int, uid, gid uint32) *seccomp.Config {
	sc = CallerSeccomp(NetworkSeccomp(sc, mode), callerUID)
	if callerUID == 0 {
		sc = ownerSeccomp(sc, uid, gid)
	}
	return sc
}

// builtinFilter is one filter compiled ahead of time (zfilters.go): the source and
// program of LaunchSeccomp for a seccomp section without rules of its own, with
// profile, network mode host or not (netHost), by a uid 0 caller whose command runs as
// 0:0 inside or by another caller (root).
type builtinFilter struct {
	profile       string
	netHost, root bool
	source        *specs.LinuxSeccomp
	prog          seccomp.Program
}

// launchFilter returns the source and program of LaunchSeccomp(sc, mode, callerUID,
// uid, gid): the ones compiled ahead of time when the input is a built-in's (a seccomp
// section with no rules, the default profile's in every built-in policy), else compiled
// here. A bad section is an error of seccomp.Config.Spec or seccomp.Compile.
//
// A built-in's source is shared by every config built from it (its pointer): callers
// read it (config.ToSpec), none writes it. The program is copied, so that a config's
// Filter, which the init loads, is its own.
func launchFilter(sc *seccomp.Config, mode string, callerUID int, uid, gid uint32) (*specs.LinuxSeccomp, seccomp.Program, error) {
	if f := findBuiltinFilter(sc, mode, callerUID, uid, gid); f != nil {
		return f.source, append(seccomp.Program(nil), f.prog...), nil
	}
	source, err := LaunchSeccomp(sc, mode, callerUID, uid, gid).Spec()
	if err != nil {
		return nil, nil, err
	}
	prog, err := seccomp.Compile(source)
	if err != nil {
		return nil, nil, err
	}
	return source, prog, nil
}

// findBuiltinFilter is the entry of builtinFilters for that input, or nil.
func findBuiltinFilter(sc *seccomp.Config, mode string, callerUID int, uid, gid uint32) *builtinFilter {
	profile := "agent"
	if sc != nil {
		if len(sc.Rules) > 0 {
			return nil
		}
		if sc.Profile != "" {
			profile = sc.Profile
		}
	}
	root := callerUID == 0
	if root && (uid != 0 || gid != 0) {
		return nil
	}
	netHost := mode == NetHost
	for i := range builtinFilters {
		f := &builtinFilters[i]
		if f.profile == profile && f.netHost == netHost && f.root == root {
			return f
		}
	}
	return nil
}
