package seccomp

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/elastic/go-seccomp-bpf/arch"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The golden file testdata/agent.golden holds Program.Text() of the default ("agent")
// profile. After an intended change of the profile or of the compiler, regenerate it
// with
//
//	go test ./seccomp/ -run TestGoldenAgent -update
//
// and review the diff: every changed instruction is a changed decision.
var update = flag.Bool("update", false, "rewrite testdata/agent.golden from the current compiler")

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
)

func retErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// compileConfig compiles c's Spec.
func compileConfig(t *testing.T, c *Config) Program {
	t.Helper()
	s, err := c.Spec()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func agentProgram(t *testing.T) Program { t.Helper(); return compileConfig(t, &Config{}) }

// nr is the x86_64 number of a system call.
func nr(t testing.TB, name string) uint32 {
	t.Helper()
	n, ok := arch.X86_64.SyscallNames[name]
	if !ok {
		t.Fatalf("no system call %q", name)
	}
	return uint32(n)
}

// seccompData lays out struct seccomp_data as the kernel does on x86_64 (little
// endian): int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
func seccompData(nr, auditArch uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], nr)
	binary.LittleEndian.PutUint32(b[4:], auditArch)
	binary.LittleEndian.PutUint64(b[8:], 0x401000)
	for i, a := range args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// emulator runs a program on seccomp_data with golang.org/x/net/bpf's VM. That VM
// loads words big endian (it is made for packets) while seccomp loads them native
// endian; every load of a seccomp filter is an aligned 32-bit word, so reversing the
// bytes of each word of the kernel's layout gives the VM exactly the kernel's values.
type emulator struct{ vm *bpf.VM }

func newEmulator(t testing.TB, p Program) emulator {
	t.Helper()
	ins := make([]bpf.Instruction, len(p))
	for i, f := range p {
		ins[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}.Disassemble()
		if _, raw := ins[i].(bpf.RawInstruction); raw {
			t.Fatalf("instruction %d (%+v) does not disassemble", i, f)
		}
	}
	vm, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatal(err)
	}
	return emulator{vm}
}

func (e emulator) run(t testing.TB, data []byte) uint32 {
	t.Helper()
	in := make([]byte, len(data))
	for i := 0; i < len(data); i += 4 {
		binary.BigEndian.PutUint32(in[i:], binary.LittleEndian.Uint32(data[i:]))
	}
	r, err := e.vm.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(r)
}

// call is the decision for a native call.
func (e emulator) call(t testing.TB, name string, args ...uint64) uint32 {
	t.Helper()
	return e.run(t, seccompData(nr(t, name), unix.AUDIT_ARCH_X86_64, args...))
}

func actionName(r uint32) string {
	switch r & unix.SECCOMP_RET_ACTION_FULL {
	case unix.SECCOMP_RET_ALLOW:
		return "ALLOW"
	case unix.SECCOMP_RET_KILL_PROCESS:
		return "KILL_PROCESS"
	case unix.SECCOMP_RET_LOG:
		return "LOG"
	case unix.SECCOMP_RET_ERRNO:
		return "ERRNO(" + unix.ErrnoName(unix.Errno(r&unix.SECCOMP_RET_DATA)) + ")"
	}
	return fmt.Sprintf("%#x", r)
}

// The same input gives the same program, byte for byte, every time.
func TestCompileDeterministic(t *testing.T) {
	for _, c := range []*Config{
		{},
		{Profile: "none", Rules: []Rule{{Syscalls: []string{"getppid"}, Action: "errno", Errno: "EACCES"}}},
		{Rules: []Rule{{Syscalls: []string{"ioctl", "fcntl"}, Action: "log", Args: []Arg{{Index: 1, Op: "masked_eq", Mask: 0xff00, Value: 0x5400}}}}},
	} {
		a, b := compileConfig(t, c).Bytes(), compileConfig(t, c).Bytes()
		if !bytes.Equal(a, b) {
			t.Errorf("%+v: two compilations differ", c)
		}
		for range 20 {
			if !bytes.Equal(a, compileConfig(t, c).Bytes()) {
				t.Fatalf("%+v: a later compilation differs", c)
			}
		}
	}
}

// The default profile's program is pinned (see update above).
func TestGoldenAgent(t *testing.T) {
	got := agentProgram(t).Text()
	golden := filepath.Join("testdata", "agent.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d instructions)", golden, strings.Count(got, "\n"))
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	if got != string(want) {
		t.Errorf("the agent program differs from %s (if intended, rerun with -update and review the diff):\n%s",
			golden, lineDiff(string(want), got))
	}
}

// lineDiff shows the first lines that differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var sb strings.Builder
	n := 0
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			fmt.Fprintf(&sb, "- %s\n+ %s\n", a, b)
			if n++; n == 10 {
				break
			}
		}
	}
	return sb.String()
}

// The program opens with its own architecture check: anything but x86_64 is killed,
// then x32 numbers are killed, before go-seccomp-bpf's part.
func TestArchCheckFirst(t *testing.T) {
	for _, c := range []*Config{{}, {Profile: "none"}, {Profile: "none", Rules: []Rule{{Syscalls: []string{"getpid"}, Action: "allow"}}}} {
		p := compileConfig(t, c)
		want := []unix.SockFilter{
			{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4},
			{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, Jf: 0, K: unix.AUDIT_ARCH_X86_64},
			{Code: unix.BPF_RET | unix.BPF_K, K: retKill},
			{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},
			{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, Jt: 0, Jf: 1, K: 0x40000000},
			{Code: unix.BPF_RET | unix.BPF_K, K: retKill},
		}
		if len(p) < len(want) || !reflect.DeepEqual([]unix.SockFilter(p[:len(want)]), want) {
			t.Errorf("%+v: the program does not open with the architecture check:\n%s", c, p.Text())
		}
	}
	if s, err := (&Config{}).Spec(); err != nil {
		t.Fatal(err)
	} else {
		s.Architectures = append(s.Architectures, specs.ArchX86)
		if _, err := Compile(s); err == nil || !strings.Contains(err.Error(), "SCMP_ARCH_X86") {
			t.Errorf("Compile with x86 in Architectures: %v, want a refusal naming it", err)
		}
	}
	if p, err := Compile(nil); p != nil || err != nil {
		t.Errorf("Compile(nil) = %v, %v; want no program", p, err)
	}
}

// Bytes is struct sock_filter[]: 8 bytes an instruction, laid out as in memory.
func TestBytesLayout(t *testing.T) {
	p := agentProgram(t)
	b := p.Bytes()
	if len(b) != 8*len(p) {
		t.Fatalf("%d bytes for %d instructions", len(b), len(p))
	}
	if unsafe.Sizeof(unix.SockFilter{}) != 8 {
		t.Fatal("sock_filter is not 8 bytes")
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&p[0])), 8*len(p))
	if !bytes.Equal(b, raw) {
		t.Error("Bytes differs from the in-memory sock_filter array")
	}
	for i, f := range p {
		c := b[8*i:]
		if binary.LittleEndian.Uint16(c) != f.Code || c[2] != f.Jt || c[3] != f.Jf || binary.LittleEndian.Uint32(c[4:]) != f.K {
			t.Fatalf("instruction %d: bytes % x, want %+v", i, c[:8], f)
		}
	}
	if n := strings.Count(p.Text(), "\n"); n != len(p) {
		t.Errorf("Text has %d lines for %d instructions", n, len(p))
	}
	if len(Program(nil).Bytes()) != 0 || Program(nil).Text() != "" {
		t.Error("an empty program is not empty")
	}
	// ParseProgram reverses Bytes (the launcher sends the init its filter this way).
	back, err := ParseProgram(b)
	if err != nil || !slices.Equal(back, p) {
		t.Errorf("ParseProgram(Bytes) = %d instructions, %v; want the %d sent", len(back), err, len(p))
	}
	for _, n := range []int{7, 9, 8*4096 + 8} {
		if _, err := ParseProgram(make([]byte, n)); err == nil {
			t.Errorf("ParseProgram of %d bytes: no error", n)
		}
	}
}

// A masked equality that can never hold (a wanted bit outside the mask) is an error.
func TestMaskedEqualImpossible(t *testing.T) {
	_, err := Compile(&specs.LinuxSeccomp{DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{{
		Names: []string{"ioctl"}, Action: specs.ActErrno,
		Args: []specs.LinuxSeccompArg{{Index: 1, Op: specs.OpMaskedEqual, Value: 0xff, ValueTwo: 0x100}},
	}}})
	if err == nil || !strings.Contains(err.Error(), "never hold") {
		t.Fatalf("Compile = %v; want a never-hold error", err)
	}
}

func mustSpec(t *testing.T, c *Config) *specs.LinuxSeccomp {
	t.Helper()
	s, err := c.Spec()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Actions and errnos come through Compile as the kernel's return values.
func TestCompileActions(t *testing.T) {
	p := compileConfig(t, &Config{Profile: "none", Rules: []Rule{
		{Syscalls: []string{"getppid"}, Action: "errno", Errno: "EACCES"},
		{Syscalls: []string{"getuid"}, Action: "kill_process"},
		{Syscalls: []string{"getgid"}, Action: "log"},
		{Syscalls: []string{"geteuid"}, Action: "errno"},
		{Syscalls: []string{"getegid"}, Action: "allow"},
	}})
	e := newEmulator(t, p)
	for name, want := range map[string]uint32{
		"getppid": retErrno(unix.EACCES), "getuid": retKill, "getgid": unix.SECCOMP_RET_LOG,
		"geteuid": retEPERM, "getegid": retAllow, "getpid": retAllow, "mount": retAllow,
	} {
		if got := e.call(t, name); got != want {
			t.Errorf("%s: %s, want %s", name, actionName(got), actionName(want))
		}
	}
	errno0 := uint(0)
	s := &specs.LinuxSeccomp{DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{{Names: []string{"getpid"}, Action: specs.ActErrno, ErrnoRet: &errno0}}}
	// SCMP_ACT_ERRNO(0), as runtime-spec and libseccomp allow: 0 without the call
	// (ForeignOwnerRules); a policy's own rules cannot ask for it (TestForeignOwnerRules)
	if p0, err := Compile(s); err != nil {
		t.Errorf("errno 0: %v", err)
	} else if got := newEmulator(t, p0).call(t, "getpid"); got != unix.SECCOMP_RET_ERRNO {
		t.Errorf("errno 0: %s, want SECCOMP_RET_ERRNO|0", actionName(got))
	}
	s = &specs.LinuxSeccomp{DefaultAction: specs.ActTrap}
	if _, err := Compile(s); err == nil {
		t.Error("SCMP_ACT_TRAP was accepted")
	}
}

// The decisions of the default profile, emulated without the kernel.
func TestAgentDecisions(t *testing.T) {
	e := newEmulator(t, agentProgram(t))
	const (
		threadFlags = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD |
			unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID
		forkFlags = unix.CLONE_CHILD_SETTID | unix.CLONE_CHILD_CLEARTID | uint64(unix.SIGCHLD)
		highBits  = 0xdeadbeef00000000
	)
	for _, tc := range []struct {
		what string
		name string
		args []uint64
		want uint32
	}{
		{"read", "read", []uint64{0, 0x1000, 10}, retAllow},
		{"write", "write", []uint64{1, 0x1000, 10}, retAllow},
		{"openat", "openat", []uint64{3, 0x1000, unix.O_RDONLY}, retAllow},
		{"mmap", "mmap", []uint64{0, 4096, unix.PROT_READ, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS, ^uint64(0), 0}, retAllow},
		{"futex", "futex", []uint64{0x1000, 1 /* FUTEX_WAKE */, 1}, retAllow},
		{"ptrace", "ptrace", []uint64{unix.PTRACE_TRACEME}, retAllow},
		{"execve", "execve", nil, retAllow},
		{"mount", "mount", nil, retEPERM},
		{"umount2", "umount2", nil, retEPERM},
		{"unshare", "unshare", []uint64{unix.CLONE_NEWUSER}, retEPERM},
		{"setns", "setns", nil, retEPERM},
		{"clone thread", "clone", []uint64{threadFlags}, retAllow},
		{"clone fork", "clone", []uint64{forkFlags}, retAllow},
		{"clone vfork", "clone", []uint64{unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD)}, retAllow},
		{"clone CLONE_NEWUSER", "clone", []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, retEPERM},
		{"clone CLONE_NEWNS", "clone", []uint64{unix.CLONE_NEWNS | uint64(unix.SIGCHLD)}, retEPERM},
		{"clone CLONE_NEWNET", "clone", []uint64{unix.CLONE_NEWNET}, retEPERM},
		{"clone CLONE_NEWPID|thread flags", "clone", []uint64{threadFlags | unix.CLONE_NEWPID}, retEPERM},
		{"clone3", "clone3", []uint64{0x1000, 88}, retErrno(unix.ENOSYS)},
		{"keyctl", "keyctl", nil, retEPERM},
		{"bpf", "bpf", nil, retEPERM},
		{"io_uring_setup", "io_uring_setup", []uint64{8, 0x1000}, retEPERM},
		{"lookup_dcookie", "lookup_dcookie", nil, retEPERM},
		{"ioctl TIOCSTI", "ioctl", []uint64{0, unix.TIOCSTI, 0x1000}, retEPERM},
		{"ioctl TIOCSTI high bits", "ioctl", []uint64{0, unix.TIOCSTI | highBits, 0x1000}, retEPERM},
		{"ioctl TIOCSTI all high bits", "ioctl", []uint64{0, unix.TIOCSTI | 0xffffffff00000000}, retEPERM},
		{"ioctl TIOCLINUX", "ioctl", []uint64{0, unix.TIOCLINUX, 0x1000}, retEPERM},
		{"ioctl TIOCLINUX high bits", "ioctl", []uint64{0, unix.TIOCLINUX | highBits}, retEPERM},
		{"ioctl TCGETS", "ioctl", []uint64{0, unix.TCGETS, 0x1000}, retAllow},
		{"ioctl TIOCSTI|1 (another request)", "ioctl", []uint64{0, unix.TIOCSTI | 1}, retAllow},
		{"ioctl FIONREAD", "ioctl", []uint64{0, 0x541b /* FIONREAD */}, retAllow},
		{"personality(0)", "personality", []uint64{0}, retAllow},
		{"personality query", "personality", []uint64{0xffffffff}, retAllow},
		{"personality(PER_LINUX32)", "personality", []uint64{8}, retAllow},
		{"personality(UNAME26)", "personality", []uint64{0x20000}, retAllow},
		{"personality(ADDR_NO_RANDOMIZE)", "personality", []uint64{0x0040000}, retEPERM},
		{"personality(READ_IMPLIES_EXEC)", "personality", []uint64{0x0400000}, retEPERM},
	} {
		if got := e.call(t, tc.name, tc.args...); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.what, actionName(got), actionName(tc.want))
		}
	}
	// Every name the profile denies outright answers its errno, whatever the arguments.
	conditional := map[string]bool{} // names with argument rules are checked above
	for _, r := range AgentRules() {
		if len(r.Args) != 0 {
			for _, n := range r.Syscalls {
				conditional[n] = true
			}
		}
	}
	for _, r := range AgentRules() {
		if len(r.Args) != 0 || conditional[r.Syscalls[0]] {
			continue
		}
		want := retEPERM
		if r.Errno == "ENOSYS" {
			want = retErrno(unix.ENOSYS)
		}
		for _, n := range r.Syscalls {
			if got := e.call(t, n, 1, 2, 3, 4, 5, 6); got != want {
				t.Errorf("%s: %s, want %s", n, actionName(got), actionName(want))
			}
		}
	}
}

// Foreign ABIs are killed before any rule: i386 (int 0x80), x32, and any other arch.
func TestForeignABIKilled(t *testing.T) {
	for _, c := range []*Config{{}, {Profile: "none"}} {
		e := newEmulator(t, compileConfig(t, c))
		for _, tc := range []struct {
			what     string
			nr, arch uint32
		}{
			{"i386 getpid", 20, unix.AUDIT_ARCH_I386},
			{"i386 read", 3, unix.AUDIT_ARCH_I386},
			{"i386 mount", 21, unix.AUDIT_ARCH_I386},
			{"aarch64", 172, unix.AUDIT_ARCH_AARCH64},
			{"x32 read", 0x40000000 | 0, unix.AUDIT_ARCH_X86_64},
			{"x32 mount", 0x40000000 | 165, unix.AUDIT_ARCH_X86_64},
			{"x32 getpid", 0x40000000 | 39, unix.AUDIT_ARCH_X86_64},
		} {
			if got := e.run(t, seccompData(tc.nr, tc.arch)); got != retKill {
				t.Errorf("profile %q: %s: %s, want KILL_PROCESS", c.Profile, tc.what, actionName(got))
			}
		}
		if got := e.call(t, "getpid"); got != retAllow {
			t.Errorf("profile %q: native getpid %s", c.Profile, actionName(got))
		}
	}
}

// A policy rule comes before the profile's: it can both tighten (getppid EACCES) and
// loosen (allow mount) the agent profile.
func TestPolicyRulesFirst(t *testing.T) {
	e := newEmulator(t, compileConfig(t, &Config{Rules: []Rule{
		{Syscalls: []string{"getppid"}, Action: "errno", Errno: "EACCES"},
		{Syscalls: []string{"mount"}, Action: "allow"},
	}}))
	if got := e.call(t, "getppid"); got != retErrno(unix.EACCES) {
		t.Errorf("getppid: %s, want EACCES", actionName(got))
	}
	if got := e.call(t, "mount"); got != retAllow {
		t.Errorf("mount: %s, want the policy's allow", actionName(got))
	}
	if got := e.call(t, "umount2"); got != retEPERM {
		t.Errorf("umount2: %s, want the profile's EPERM", actionName(got))
	}
}

// A rule with argument conditions must not change the decision for the rules after it:
// each later rule still looks at the system call number. (go-seccomp-bpf leaves the
// argument it compared in the accumulator when a condition fails, and its next group
// compares that value with system call numbers.)
func TestConditionDoesNotLeakIntoLaterRules(t *testing.T) {
	e := newEmulator(t, compileConfig(t, &Config{Profile: "none", Rules: []Rule{
		{Syscalls: []string{"ioctl"}, Action: "allow", Args: []Arg{{Index: 1, Op: "eq", Value: 7}}},
		{Syscalls: []string{"ioctl"}, Action: "errno", Errno: "EACCES"},
	}}))
	if got := e.call(t, "ioctl", 0, 7); got != retAllow {
		t.Errorf("ioctl(_, 7): %s, want ALLOW", actionName(got))
	}
	if got := e.call(t, "ioctl", 0, 8); got != retErrno(unix.EACCES) {
		t.Errorf("ioctl(_, 8): %s, want the second rule's EACCES", actionName(got))
	}
	// The failing argument equals a syscall number of a later rule: still not that rule.
	e = newEmulator(t, compileConfig(t, &Config{Profile: "none", Rules: []Rule{
		{Syscalls: []string{"ioctl"}, Action: "allow", Args: []Arg{{Index: 1, Op: "eq", Value: 7}}},
		{Syscalls: []string{"getpid"}, Action: "errno", Errno: "EACCES"}, // getpid is 39
	}}))
	if got := e.call(t, "ioctl", 0, 39); got != retAllow {
		t.Errorf("ioctl(_, 39): %s, want ALLOW (the default), not getpid's rule", actionName(got))
	}
}

// The kernel caches, per system call number, a filter that allows without looking at
// the arguments (seccomp_cache_prepare: it emulates the filter with only nr and arch
// known). constAllow mirrors that emulation: true when the program allows nr for
// x86_64 without loading anything but nr and arch.
func constAllow(p Program, nr uint32) bool {
	var a uint32
	for pc := 0; pc < len(p); pc++ {
		f := p[pc]
		switch f.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			switch f.K {
			case 0:
				a = nr
			case 4:
				a = unix.AUDIT_ARCH_X86_64
			default:
				return false
			}
		case unix.BPF_RET | unix.BPF_K:
			return f.K == unix.SECCOMP_RET_ALLOW
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(f.K)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K,
			unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var ok bool
			switch f.Code & 0xf0 {
			case unix.BPF_JEQ:
				ok = a == f.K
			case unix.BPF_JGE:
				ok = a >= f.K
			case unix.BPF_JGT:
				ok = a > f.K
			case unix.BPF_JSET:
				ok = a&f.K != 0
			}
			if ok {
				pc += int(f.Jt)
			} else {
				pc += int(f.Jf)
			}
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			a &= f.K
		default:
			return false
		}
	}
	return false
}

// The common system calls keep the kernel's constant-action cache: their decision does
// not depend on the arguments (two random argument sets, same answer: ALLOW) and the
// program reaches ALLOW for them loading nothing but nr and arch.
func TestCommonSyscallsCacheable(t *testing.T) {
	p := agentProgram(t)
	e := newEmulator(t, p)
	rng := rand.New(rand.NewPCG(1, 2))
	common := []string{"read", "write", "openat", "close", "mmap", "munmap", "futex", "fstat", "newfstatat",
		"lseek", "brk", "rt_sigaction", "rt_sigprocmask", "getpid", "execve", "exit_group", "wait4", "pread64",
		"epoll_wait", "sched_yield", "nanosleep", "clock_nanosleep", "getdents64", "statx", "fcntl", "dup2", "pipe2"}
	for _, name := range common {
		var args [2][6]uint64
		for i := range args {
			for j := range args[i] {
				args[i][j] = rng.Uint64()
			}
		}
		a, b := e.call(t, name, args[0][:]...), e.call(t, name, args[1][:]...)
		if a != b || a != retAllow {
			t.Errorf("%s: %s and %s with two argument sets, want ALLOW both", name, actionName(a), actionName(b))
		}
		if !constAllow(p, nr(t, name)) {
			t.Errorf("%s: not a constant ALLOW: the kernel cannot cache it", name)
		}
	}
	// Only the system calls with argument rules miss the cache.
	var uncached []string
	for name, n := range arch.X86_64.SyscallNames {
		if !constAllow(p, uint32(n)) && e.call(t, name) == retAllow {
			uncached = append(uncached, name)
		}
	}
	for _, n := range uncached {
		switch n {
		case "clone", "ioctl", "personality":
		default:
			t.Errorf("%s is allowed but not cacheable", n)
		}
	}
}

// The program by system call number decides every call exactly as the straight chain
// of the same rules does: the agent profile with the root caller's set-ID rules and
// rules of a policy's own, on random calls and on the argument values the rules name.
func TestDispatchMatchesChain(t *testing.T) {
	extra := []Rule{
		{Syscalls: []string{"openat", "read"}, Action: "errno", Errno: "EACCES", Args: []Arg{{Index: 0, Op: "eq", Value: 7}}},
		{Syscalls: []string{"kill"}, Action: "errno", Errno: "EPERM", Args: []Arg{{Index: 1, Op: "gt", Value: 9}, {Index: 0, Op: "ne", Value: 1}}},
		{Syscalls: []string{"socket"}, Action: "kill_process", Args: []Arg{{Index: 0, Op: "le", Value: 2}}},
		{Syscalls: []string{"uname"}, Action: "log"},
	}
	cfg := &Config{Rules: append(append([]Rule{}, extra...), NoSetIDRules()...)}
	spec, err := cfg.Spec()
	if err != nil {
		t.Fatal(err)
	}
	def, err := action(spec.DefaultAction, spec.DefaultErrnoRet)
	if err != nil {
		t.Fatal(err)
	}
	prog := func(a *asm, err error) Program {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := bpf.Assemble(a.ins)
		if err != nil {
			t.Fatal(err)
		}
		p := make(Program, len(raw))
		for i, r := range raw {
			p[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
		}
		return p
	}
	d, c := newEmulator(t, prog(dispatch(spec.Syscalls, def))), newEmulator(t, prog(chain(spec.Syscalls, def)))
	if got, _ := Compile(spec); len(got) != len(prog(dispatch(spec.Syscalls, def))) {
		t.Fatal("Compile does not use the dispatch program for these rules")
	}
	// values the rules compare against, and their neighbours
	var vals []uint64
	for _, sc := range spec.Syscalls {
		for _, a := range sc.Args {
			for _, v := range []uint64{a.Value, a.ValueTwo, a.Value | a.ValueTwo} {
				vals = append(vals, v, v-1, v+1, v|0o4000|unix.O_CREAT, v|0o2000|0x400000)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func() uint64 {
		if rng.IntN(2) == 0 {
			return vals[rng.IntN(len(vals))]
		}
		return rng.Uint64()
	}
	for i := 0; i < 200000; i++ {
		nr := uint32(rng.IntN(470))
		var args [6]uint64
		for j := range args {
			args[j] = pick()
		}
		data := seccompData(nr, unix.AUDIT_ARCH_X86_64, args[:]...)
		if a, b := d.run(t, data), c.run(t, data); a != b {
			t.Fatalf("nr %d args %#x: dispatch %s, chain %s", nr, args, actionName(a), actionName(b))
		}
	}
}
