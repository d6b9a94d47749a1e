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
// Both a built-in's source and its program are copied: a config is its caller's to
// change (a library caller may edit one config's Linux.Seccomp, or a config.ToSpec of
// it, and compile it again), and a change must never reach another config built in
// the same process (from an attack review: a shared source loosened every later
// sandbox's filter).
func launchFilter(sc *seccomp.Config, mode string, callerUID int, uid, gid uint32) (*specs.LinuxSeccomp, seccomp.Program, error) {
	if f := findBuiltinFilter(sc, mode, callerUID, uid, gid); f != nil {
		return copySource(f.source), append(seccomp.Program(nil), f.prog...), nil
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

// copySource is a deep copy of s that shares no pointer, slice or map with it. The
// rules' names, arguments and errnos are each carved from one allocation (a few
// allocations in all, not a few per rule).
func copySource(s *specs.LinuxSeccomp) *specs.LinuxSeccomp {
	c := *s
	c.Architectures = append([]specs.Arch(nil), s.Architectures...)
	c.Flags = append([]specs.LinuxSeccompFlag(nil), s.Flags...)
	nerr, nnames, nargs := 0, 0, 0
	if s.DefaultErrnoRet != nil {
		nerr++
	}
	for _, r := range s.Syscalls {
		nnames += len(r.Names)
		nargs += len(r.Args)
		if r.ErrnoRet != nil {
			nerr++
		}
	}
	errnos := make([]uint, 0, nerr)
	names := make([]string, 0, nnames)
	args := make([]specs.LinuxSeccompArg, 0, nargs)
	errno := func(p *uint) *uint {
		if p == nil {
			return nil
		}
		errnos = append(errnos, *p)
		return &errnos[len(errnos)-1]
	}
	c.DefaultErrnoRet = errno(s.DefaultErrnoRet)
	if s.Syscalls != nil {
		c.Syscalls = make([]specs.LinuxSyscall, len(s.Syscalls))
	}
	for i, r := range s.Syscalls {
		r.ErrnoRet = errno(r.ErrnoRet)
		if r.Names != nil {
			start := len(names)
			names = append(names, r.Names...)
			r.Names = names[start:len(names):len(names)]
		}
		if r.Args != nil {
			start := len(args)
			args = append(args, r.Args...)
			r.Args = args[start:len(args):len(args)]
		}
		c.Syscalls[i] = r
	}
	return &c
}
