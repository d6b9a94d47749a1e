// Package seccomp turns a policy's syscall rules into a seccomp filter (seccomp(2),
// SECCOMP_SET_MODE_FILTER): a base profile ("agent" by default) plus the policy's own
// rules, expressed in the runtime-spec (specs.LinuxSeccomp) and compiled to classic BPF
// behind a native-architecture check. The x86_64 system call table is generated from
// github.com/elastic/go-seccomp-bpf/arch (internal/syscallgen). The same rules always
// give the same program, byte for byte.
package seccomp

import (
	"fmt"
	"strings"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// Config is the seccomp section of a policy.
type Config struct {
	// Profile is the base rule set: "agent" (the default) or "none" (only Rules, on a
	// default-allow filter that still kills foreign-ABI calls).
	Profile string `json:"profile,omitempty"`
	// Rules come before the profile's: the first rule that matches a call decides.
	Rules []Rule `json:"rules,omitempty"`
}

// Rule is one decision for a set of system calls.
type Rule struct {
	// Syscalls are names as in the x86_64 table (unknown names are errors).
	Syscalls []string `json:"syscalls"`
	// Action is "errno" (fail with Errno), "kill_process", "log" (allow and log),
	// "allow", or "notify" (SECCOMP_RET_USER_NOTIF: the sandbox init's set-ID handler
	// answers, nsinit/setid.go; it fails calls it does not serve with ENOSYS).
	Action string `json:"action"`
	// Errno names the error of an "errno" rule ("EPERM", the default; "ENOSYS", …).
	Errno string `json:"errno,omitempty"`
	// Args must all hold for the rule to match.
	Args []Arg `json:"args,omitempty"`
	// Comment says why, for readers of the policy.
	Comment string `json:"comment,omitempty"`
	// succeed makes an "errno" rule return 0 without making the call (SCMP_ACT_ERRNO(0)):
	// only gosbx's own rules (ForeignOwnerRules), never a policy's, where it would let a
	// command believe a call it depends on (setuid, a deny it expects) took effect.
	succeed bool
}

// Arg is a condition on a system call argument, compared as the kernel reads it: an
// argument the call declares 64 bits wide (a pointer, long, size_t) on all 64 bits,
// unsigned; a narrower one (int, unsigned int, pid_t, uid_t: 32 bits; umode_t: 16) on
// those low bits only, as the signed or unsigned number they are (argtype.go). "eq",
// "ne", "lt", "le", "gt", "ge" compare Value; "masked_eq" holds when (arg & Mask) ==
// Value (Mask cut to the argument's bits). Value must fit a narrow argument: a negative
// int -N is written 2^32-N (4294967295 for -1). Index must be an argument the call has.
type Arg struct {
	Index uint   `json:"index"`
	Op    string `json:"op"`
	Value uint64 `json:"value"`
	Mask  uint64 `json:"mask,omitempty"`
}

// Profiles are the base rule sets by name.
var Profiles = []string{"agent", "none"}

// actionOf and opOf map the policy's names to runtime-spec's: switches, not package
// maps, so that nothing is built at package init on every start of gosbx.
func actionOf(name string) (specs.LinuxSeccompAction, bool) {
	switch name {
	case "errno":
		return specs.ActErrno, true
	case "kill_process":
		return specs.ActKillProcess, true
	case "log":
		return specs.ActLog, true
	case "allow":
		return specs.ActAllow, true
	case "notify":
		return specs.ActNotify, true
	}
	return "", false
}

func opOf(name string) (specs.LinuxSeccompOperator, bool) {
	switch name {
	case "eq":
		return specs.OpEqualTo, true
	case "ne":
		return specs.OpNotEqual, true
	case "lt":
		return specs.OpLessThan, true
	case "le":
		return specs.OpLessEqual, true
	case "gt":
		return specs.OpGreaterThan, true
	case "ge":
		return specs.OpGreaterEqual, true
	case "masked_eq":
		return specs.OpMaskedEqual, true
	}
	return "", false
}

//go:generate go run ../internal/syscallgen zsyscalls_amd64.go

// Validate checks names, actions, errnos and conditions; the error names the rule.
func (c *Config) Validate() error {
	switch c.Profile {
	case "", "agent", "none":
	default:
		return fmt.Errorf("profile %q: want one of %s", c.Profile, strings.Join(Profiles, ", "))
	}
	for i, r := range c.Rules {
		if _, err := r.spec(); err != nil {
			return fmt.Errorf("rules[%d]: %w", i, err)
		}
	}
	return nil
}

// Spec returns the runtime-spec form of the filter: the rules, then the profile's,
// on a default-allow filter for the native architecture only (with profile "none" and
// no rules, a filter that only kills calls through a foreign ABI).
func (c *Config) Spec() (*specs.LinuxSeccomp, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var rules []Rule
	rules = append(rules, c.Rules...)
	if c.Profile == "" || c.Profile == "agent" {
		rules = append(rules, AgentRules()...)
	}
	s := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Architectures: []specs.Arch{specs.ArchX86_64},
	}
	for _, r := range rules {
		sc, err := r.spec()
		if err != nil {
			return nil, err
		}
		s.Syscalls = append(s.Syscalls, sc)
	}
	return s, nil
}

func (r Rule) spec() (specs.LinuxSyscall, error) {
	var sc specs.LinuxSyscall
	if len(r.Syscalls) == 0 {
		return sc, fmt.Errorf("no syscalls")
	}
	for _, n := range r.Syscalls {
		if _, ok := syscallNumbers()[n]; !ok {
			return sc, fmt.Errorf("unknown system call %q (x86_64)", n)
		}
	}
	act, ok := actionOf(r.Action)
	if !ok {
		return sc, fmt.Errorf("action %q: want errno, kill_process, log, allow or notify", r.Action)
	}
	sc = specs.LinuxSyscall{Names: append([]string(nil), r.Syscalls...), Action: act}
	if act == specs.ActErrno {
		name := r.Errno
		if name == "" {
			name = "EPERM"
		}
		e, ok := errnoValue(name)
		if r.succeed {
			e, ok = 0, r.Errno == ""
		}
		if !ok {
			return sc, fmt.Errorf("errno %q is not an errno name (EPERM, ENOSYS, EACCES, …)", name)
		}
		v := uint(e)
		sc.ErrnoRet = &v
	} else if r.Errno != "" {
		return sc, fmt.Errorf("errno %q given for action %q", r.Errno, r.Action)
	}
	for _, a := range r.Args {
		op, ok := opOf(a.Op)
		if !ok {
			return sc, fmt.Errorf("op %q: want eq, ne, lt, le, gt, ge or masked_eq", a.Op)
		}
		if a.Index > 5 {
			return sc, fmt.Errorf("argument index %d: want 0 to 5", a.Index)
		}
		arg := specs.LinuxSeccompArg{Index: a.Index, Value: a.Value, Op: op}
		if op == specs.OpMaskedEqual {
			if a.Mask == 0 {
				return sc, fmt.Errorf("masked_eq needs a mask")
			}
			// runtime-spec: (arg & Value) == ValueTwo
			arg.Value, arg.ValueTwo = a.Mask, a.Value
		} else if a.Mask != 0 {
			return sc, fmt.Errorf("mask given for op %q", a.Op)
		}
		// compared as the kernel reads the argument in each call: one it reads, a value
		// that fits it (argtype.go)
		bits := uint8(0) // the widest of the calls' declarations
		for _, n := range r.Syscalls {
			t, err := argTypeOf(n, arg)
			if err != nil {
				return sc, err
			}
			bits = max(bits, t.bits)
		}
		// An equality on an argument every call reads narrower than 64 bits is
		// written as the masked equality on those bits (the widest; a narrower call's
		// filter cuts the mask to its own), which decides the same in
		// gosbx's filter and also in a runtime that compares runtime-spec's values on
		// all 64 bits (runc, crun: policy export --oci).
		if arg.Op == specs.OpEqualTo && bits < 64 {
			arg.Op, arg.Value, arg.ValueTwo = specs.OpMaskedEqual, 1<<bits-1, arg.Value
		}
		sc.Args = append(sc.Args, arg)
	}
	return sc, nil
}

// errnos maps errno names to numbers, built once, on first use (not on the start path).
// Linux's errno names end at 134 (EFTYPE); ErrnoName is a binary search each, so the
// scan stops at 256 rather than at the 4095 seccomp could return (~10 µs, not ~170).
var errnos = sync.OnceValue(func() map[string]unix.Errno {
	m := map[string]unix.Errno{}
	for e := unix.Errno(1); e < 256; e++ {
		if n := unix.ErrnoName(e); n != "" {
			m[n] = e
		}
	}
	return m
})

// errnoValue maps an errno name to its number.
func errnoValue(name string) (unix.Errno, bool) {
	e, ok := errnos()[name]
	return e, ok
}
