package seccomp

import (
	"golang.org/x/sys/unix"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Every malformed rule is refused by Validate and by Spec, and the message names the
// rule and what is wrong with it.
func TestValidateErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want []string // substrings of the error
	}{
		{"profile", Config{Profile: "strict"}, []string{`profile "strict"`, "agent", "none"}},
		{"no syscalls", Config{Rules: []Rule{{Action: "allow"}}}, []string{"rules[0]", "no syscalls"}},
		{"unknown syscall", Config{Rules: []Rule{{Syscalls: []string{"getpid", "frobnicate"}, Action: "allow"}}},
			[]string{"rules[0]", `"frobnicate"`}},
		{"i386-only syscall", Config{Rules: []Rule{{Syscalls: []string{"socketcall"}, Action: "allow"}}},
			[]string{`"socketcall"`}},
		{"bad action", Config{Rules: []Rule{{Syscalls: []string{"getpid"}, Action: "deny"}}},
			[]string{"rules[0]", `action "deny"`}},
		{"trap action", Config{Rules: []Rule{{Syscalls: []string{"getpid"}, Action: "trap"}}},
			[]string{`action "trap"`}},
		{"empty action", Config{Rules: []Rule{{Syscalls: []string{"getpid"}}}}, []string{`action ""`}},
		{"bad errno", Config{Rules: []Rule{{Syscalls: []string{"getpid"}, Action: "errno", Errno: "EWHATEVER"}}},
			[]string{`errno "EWHATEVER"`}},
		{"errno lower case", Config{Rules: []Rule{{Syscalls: []string{"getpid"}, Action: "errno", Errno: "eperm"}}},
			[]string{`errno "eperm"`}},
		{"errno with allow", Config{Rules: []Rule{{Syscalls: []string{"getpid"}, Action: "allow", Errno: "EPERM"}}},
			[]string{`errno "EPERM" given for action "allow"`}},
		{"errno with kill", Config{Rules: []Rule{{Syscalls: []string{"getpid"}, Action: "kill_process", Errno: "EACCES"}}},
			[]string{`given for action "kill_process"`}},
		{"bad op", Config{Rules: []Rule{{Syscalls: []string{"ioctl"}, Action: "allow", Args: []Arg{{Index: 1, Op: "=="}}}}},
			[]string{`op "=="`}},
		{"index 6", Config{Rules: []Rule{{Syscalls: []string{"ioctl"}, Action: "allow", Args: []Arg{{Index: 6, Op: "eq"}}}}},
			[]string{"argument index 6"}},
		{"masked_eq without mask", Config{Rules: []Rule{{Syscalls: []string{"ioctl"}, Action: "allow", Args: []Arg{{Index: 1, Op: "masked_eq", Value: 1}}}}},
			[]string{"masked_eq needs a mask"}},
		{"mask with eq", Config{Rules: []Rule{{Syscalls: []string{"ioctl"}, Action: "allow", Args: []Arg{{Index: 1, Op: "eq", Value: 1, Mask: 3}}}}},
			[]string{`mask given for op "eq"`}},
		// compared as the kernel reads the argument (argtype.go)
		{"value past an int", Config{Rules: []Rule{{Syscalls: []string{"kill"}, Action: "errno", Args: []Arg{{Index: 1, Op: "eq", Value: 9 | 1<<32}}}}},
			[]string{"rules[0]", "kill argument 1 (int sig, 32 bits signed)", "0x100000009 does not fit", "4294967296-N"}},
		{"value past a umode_t", Config{Rules: []Rule{{Syscalls: []string{"chmod"}, Action: "errno", Args: []Arg{{Index: 1, Op: "masked_eq", Mask: 1 << 20, Value: 1 << 20}}}}},
			[]string{"chmod argument 1 (umode_t mode, 16 bits unsigned)", "0x100000 does not fit"}},
		{"value past one of the calls", Config{Rules: []Rule{{Syscalls: []string{"mmap", "fchdir"}, Action: "errno", Args: []Arg{{Index: 0, Op: "ge", Value: 1 << 32}}}}},
			[]string{"fchdir argument 0 (unsigned int fd, 32 bits unsigned)"}},
		{"index past the call's arguments", Config{Rules: []Rule{{Syscalls: []string{"kill"}, Action: "errno", Args: []Arg{{Index: 2, Op: "eq", Value: 9}}}}},
			[]string{"kill has 2 arguments: argument index 2"}},
		{"argument types unknown", Config{Rules: []Rule{{Syscalls: []string{"init_module"}, Action: "errno", Args: []Arg{{Index: 0, Op: "eq", Value: 0}}}}},
			[]string{"init_module: its argument types are unknown"}},
		{"second rule", Config{Rules: []Rule{{Syscalls: []string{"getpid"}, Action: "allow"}, {Syscalls: []string{"nope"}, Action: "allow"}}},
			[]string{"rules[1]", `"nope"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want an error", tc.c)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %q does not mention %q", err, w)
				}
			}
			if s, err2 := tc.c.Spec(); err2 == nil || s != nil {
				t.Errorf("Spec = %v, %v; want nil and an error", s, err2)
			} else if err2.Error() != err.Error() {
				t.Errorf("Spec error %q differs from Validate's %q", err2, err)
			}
		})
	}
}

// Good rules pass, including every action, every op and the errno default.
func TestValidateGood(t *testing.T) {
	c := Config{Profile: "none", Rules: []Rule{
		{Syscalls: []string{"getpid"}, Action: "allow"},
		{Syscalls: []string{"getppid"}, Action: "log"},
		{Syscalls: []string{"getuid"}, Action: "kill_process"},
		{Syscalls: []string{"getgid"}, Action: "errno"},
		{Syscalls: []string{"getegid"}, Action: "errno", Errno: "ENOSYS"},
		{Syscalls: []string{"mmap"}, Action: "errno", Args: []Arg{
			{Index: 0, Op: "eq", Value: 1}, {Index: 1, Op: "ne", Value: 2}, {Index: 2, Op: "lt", Value: 3},
			{Index: 3, Op: "le", Value: 4}, {Index: 4, Op: "gt", Value: 5}, {Index: 5, Op: "ge", Value: 6},
		}},
		{Syscalls: []string{"ioctl"}, Action: "errno", Args: []Arg{{Index: 1, Op: "masked_eq", Mask: 0xffffffff, Value: 0x5412}}},
	}}
	for _, p := range []string{"", "agent", "none"} {
		c.Profile = p
		if err := c.Validate(); err != nil {
			t.Errorf("profile %q: %v", p, err)
		}
	}
	s, err := c.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if s.Syscalls[3].ErrnoRet == nil || *s.Syscalls[3].ErrnoRet != 1 {
		t.Errorf("errno without a name: ErrnoRet %v, want EPERM (1)", s.Syscalls[3].ErrnoRet)
	}
	if s.Syscalls[4].ErrnoRet == nil || *s.Syscalls[4].ErrnoRet != 38 {
		t.Errorf("ENOSYS: ErrnoRet %v, want 38", s.Syscalls[4].ErrnoRet)
	}
	if s.Syscalls[0].ErrnoRet != nil {
		t.Errorf("allow carries an errno: %v", *s.Syscalls[0].ErrnoRet)
	}
	// runtime-spec's masked equality: (arg & Value) == ValueTwo.
	if got, want := s.Syscalls[6].Args, []specs.LinuxSeccompArg{{Index: 1, Value: 0xffffffff, ValueTwo: 0x5412, Op: specs.OpMaskedEqual}}; !reflect.DeepEqual(got, want) {
		t.Errorf("masked_eq in the spec: %+v, want %+v", got, want)
	}
}

// Spec: default allow, native architecture only; the policy's rules first (the first
// match decides), then the profile's; "none" has only the policy's.
func TestSpecOrder(t *testing.T) {
	mine := []Rule{
		{Syscalls: []string{"getppid"}, Action: "errno", Errno: "EACCES"},
		{Syscalls: []string{"mount"}, Action: "allow"},
	}
	agent := AgentRules()
	for _, p := range []string{"", "agent"} {
		s, err := (&Config{Profile: p, Rules: mine}).Spec()
		if err != nil {
			t.Fatal(err)
		}
		if s.DefaultAction != specs.ActAllow || !reflect.DeepEqual(s.Architectures, []specs.Arch{specs.ArchX86_64}) {
			t.Errorf("profile %q: default %s, architectures %v", p, s.DefaultAction, s.Architectures)
		}
		if len(s.Syscalls) != len(mine)+len(agent) {
			t.Fatalf("profile %q: %d entries, want %d + %d", p, len(s.Syscalls), len(mine), len(agent))
		}
		if n := s.Syscalls[0].Names; !reflect.DeepEqual(n, []string{"getppid"}) || *s.Syscalls[0].ErrnoRet != 13 {
			t.Errorf("profile %q: first entry %+v, want the policy's getppid EACCES", p, s.Syscalls[0])
		}
		if n := s.Syscalls[1].Names; !reflect.DeepEqual(n, []string{"mount"}) || s.Syscalls[1].Action != specs.ActAllow {
			t.Errorf("profile %q: second entry %+v, want the policy's mount allow", p, s.Syscalls[1])
		}
		for i, r := range agent {
			if got := s.Syscalls[len(mine)+i].Names; !reflect.DeepEqual(got, r.Syscalls) {
				t.Errorf("profile %q: entry %d %v, want the agent rule %v", p, len(mine)+i, got, r.Syscalls)
			}
		}
	}
	s, err := (&Config{Profile: "none", Rules: mine}).Spec()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Syscalls) != len(mine) {
		t.Errorf("profile none: %d entries, want only the policy's %d", len(s.Syscalls), len(mine))
	}
	// Spec does not alias the caller's slices.
	s.Syscalls[0].Names[0] = "changed"
	if mine[0].Syscalls[0] != "getppid" {
		t.Error("Spec shares the rule's Syscalls slice")
	}
}

// The agent profile is what the issue lists, and every name is valid.
func TestAgentRulesCover(t *testing.T) {
	if err := (&Config{Rules: AgentRules()}).Validate(); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, r := range AgentRules() {
		for _, n := range r.Syscalls {
			have[n] = true
		}
		if r.Comment == "" {
			t.Errorf("rule %v has no comment", r.Syscalls)
		}
	}
	for _, n := range strings.Fields(`mount umount2 pivot_root move_mount open_tree fsopen fsmount fsconfig fspick
		mount_setattr setns unshare clone clone3 keyctl add_key request_key bpf perf_event_open userfaultfd
		kexec_load kexec_file_load init_module finit_module delete_module open_by_handle_at name_to_handle_at
		io_uring_setup io_uring_enter io_uring_register acct swapon swapoff reboot settimeofday clock_settime
		clock_adjtime adjtimex syslog vhangup quotactl lookup_dcookie personality ioctl`) {
		if !have[n] {
			t.Errorf("the agent profile has no rule for %s", n)
		}
	}
	if have["ptrace"] {
		t.Error("ptrace must stay allowed (gdb, strace)")
	}
}

// Validate may be called from several goroutines at once (a server checking policies):
// the errno table it builds on first use must be safe for that. The calls run in a
// fresh process (a re-executed test binary), where the table is still cold. Under
// -race the race detector always fails the child; without it, the runtime often dies
// with "concurrent map read and map write".
func TestValidateConcurrent(t *testing.T) {
	if os.Getenv(childEnv) != "concurrent" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe, "-test.run=^TestValidateConcurrent$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"=concurrent")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("concurrent Validate in a fresh process: %v\n%s", err, out)
		}
		return
	}
	done := make(chan error)
	for range 32 {
		go func() {
			done <- (&Config{Rules: []Rule{{Syscalls: []string{"getppid"}, Action: "errno", Errno: "EACCES"}}}).Validate()
		}()
	}
	for range 32 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// errnos stops its scan early; it must still know every errno name x/sys/unix does.
func TestErrnoNamesComplete(t *testing.T) {
	for e := unix.Errno(1); e < 4096; e++ {
		if n := unix.ErrnoName(e); n != "" {
			if got, ok := errnoValue(n); !ok || (got != e && unix.ErrnoName(got) != n) {
				t.Errorf("errno %s (%d): errnoValue = %d, %v", n, int(e), int(got), ok)
			}
		}
	}
}
