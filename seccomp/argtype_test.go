package seccomp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The declared types the filter compares by: kill's signal is an int (so 9|1<<32 is
// SIGKILL to the kernel), ioctl's request an unsigned int, chmod's mode a umode_t,
// pointers and mmap's unsigned longs 64 bits.
func TestArgTypes(t *testing.T) {
	for _, tc := range []struct {
		call   string
		idx    int
		ctype  string
		bits   uint8
		signed bool
	}{
		{"kill", 0, "pid_t", 32, true},
		{"kill", 1, "int", 32, true},
		{"ioctl", 1, "unsigned int", 32, false},
		{"ioctl", 2, "unsigned long", 64, false},
		{"chmod", 0, "const char *", 64, false},
		{"chmod", 1, "umode_t", 16, false},
		{"setuid", 0, "uid_t", 32, false},
		{"socket", 0, "int", 32, true},
		{"lseek", 1, "off_t", 64, true},
		{"mmap", 3, "unsigned long", 64, false},
		{"mmap", 4, "unsigned long", 32, false},  // kernelNarrowed: fget's unsigned int
		{"clone", 0, "unsigned long", 32, false}, // kernelNarrowed: lower_32_bits(clone_flags)
		{"stat", 0, "const char *", 64, false},   // entry point sys_newstat
		{"umount2", 1, "int", 32, true},          // entry point sys_umount
	} {
		ts, ok := syscallArgs()[tc.call]
		if !ok || tc.idx >= len(ts) {
			t.Errorf("%s: no argument %d in the table", tc.call, tc.idx)
			continue
		}
		if g := ts[tc.idx]; g.ctype != tc.ctype || g.bits != tc.bits || g.signed != tc.signed {
			t.Errorf("%s argument %d: %s, want %s, %d bits, signed %v", tc.call, tc.idx, g.describe(), tc.ctype, tc.bits, tc.signed)
		}
	}
	if n := len(syscallArgs()["getpid"]); n != 0 {
		t.Errorf("getpid: %d arguments", n)
	}
	for n := range syscallArgs() {
		if _, ok := syscallNumbers()[n]; !ok {
			t.Errorf("%s: typed but not in the system call table", n)
		}
	}
	if len(syscallArgs()) < 350 {
		t.Errorf("%d calls typed, want most of the %d", len(syscallArgs()), len(syscallNumbers()))
	}
}

// The table matches the running kernel's declarations where this host exposes them
// (tracefs, as root): same calls, same parameters, same declared types. A kernel that
// added or changed a call shows here: run go generate ./seccomp on it.
func TestArgTypesMatchKernel(t *testing.T) {
	dir := "/sys/kernel/tracing/events/syscalls"
	if _, err := os.Stat(filepath.Join(dir, "sys_enter_kill", "format")); err != nil {
		t.Skipf("no syscall trace events here: %v", err)
	}
	alias := map[string]string{"stat": "newstat", "fstat": "newfstat", "lstat": "newlstat", "uname": "newuname", "sendfile": "sendfile64", "umount2": "umount"}
	for n := range syscallNumbers() {
		ev := n
		if a, ok := alias[n]; ok {
			ev = a
		}
		data, err := os.ReadFile(filepath.Join(dir, "sys_enter_"+ev, "format"))
		ts, typed := syscallArgs()[n]
		if err != nil {
			if typed {
				t.Errorf("%s: typed, but this kernel has no trace event: %v", n, err)
			}
			continue
		}
		if !typed {
			t.Errorf("%s: this kernel declares it, the table has no types: run go generate ./seccomp", n)
			continue
		}
		var decls []string
		_, fields, _ := strings.Cut(string(data), "__syscall_nr;")
		for _, l := range strings.Split(fields, "\n") {
			if _, d, ok := strings.Cut(l, "field:"); ok {
				decl, _, _ := strings.Cut(d, ";")
				decls = append(decls, decl)
			}
		}
		if len(decls) != len(ts) {
			t.Errorf("%s: kernel %d arguments, table %d", n, len(decls), len(ts))
			continue
		}
		for i, d := range decls {
			if want := strings.TrimSuffix(d, ts[i].name); strings.TrimSpace(want) != ts[i].ctype {
				t.Errorf("%s argument %d: kernel %q, table %s", n, i, d, ts[i].describe())
			}
		}
	}
}

// An equality on a narrow argument is written, in the runtime-spec form, as the
// masked equality on its bits (what a runtime comparing 64 bits then gets right);
// one on a 64-bit argument, or on calls of which one reads 64 bits there, stays eq.
func TestSpecNarrowEquality(t *testing.T) {
	for _, tc := range []struct {
		names      []string
		idx        uint
		op         string
		mask, want uint64
	}{
		{[]string{"kill"}, 1, "SCMP_CMP_MASKED_EQ", 0xffffffff, 9},
		{[]string{"kill", "tgkill"}, 1, "SCMP_CMP_MASKED_EQ", 0xffffffff, 9},
		{[]string{"chmod"}, 1, "SCMP_CMP_MASKED_EQ", 0xffff, 9},
		{[]string{"mmap"}, 1, "SCMP_CMP_EQ", 9, 0},
		{[]string{"mmap", "kill"}, 1, "SCMP_CMP_EQ", 9, 0},
		{[]string{"chmod", "kill"}, 1, "SCMP_CMP_MASKED_EQ", 0xffffffff, 9},
	} {
		s, err := (&Config{Profile: "none", Rules: []Rule{{Syscalls: tc.names, Action: "errno", Args: []Arg{{Index: tc.idx, Op: "eq", Value: 9}}}}}).Spec()
		if err != nil {
			t.Fatal(err)
		}
		a := s.Syscalls[0].Args[0]
		if string(a.Op) != tc.op || a.Value != tc.mask || a.ValueTwo != tc.want {
			t.Errorf("%v eq 9: %+v, want %s %#x %#x", tc.names, a, tc.op, tc.mask, tc.want)
		}
	}
}

// The listing says how each narrow argument is compared: its width, signed for an
// order, a negative value as a number, a masked_eq mask as the filter cuts it.
func TestListingWidths(t *testing.T) {
	s, err := (&Config{Profile: "none", Rules: []Rule{
		{Syscalls: []string{"kill"}, Action: "errno", Args: []Arg{{Index: 1, Op: "eq", Value: 9}}},
		{Syscalls: []string{"getpriority"}, Action: "errno", Args: []Arg{{Index: 0, Op: "lt", Value: 0xffffffff}}},
		{Syscalls: []string{"kill"}, Action: "errno", Args: []Arg{{Index: 1, Op: "masked_eq", Mask: 0x1000000ff, Value: 9}}},
		{Syscalls: []string{"chmod"}, Action: "errno", Args: []Arg{{Index: 1, Op: "gt", Value: 0o777}}},
		{Syscalls: []string{"mmap"}, Action: "errno", Args: []Arg{{Index: 1, Op: "gt", Value: 1 << 40}}},
		{Syscalls: []string{"mmap", "kill"}, Action: "errno", Args: []Arg{{Index: 1, Op: "ne", Value: 3}}},
	}}).Spec()
	if err != nil {
		t.Fatal(err)
	}
	text, err := Listing(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nkill if sig (32 bits) == 0x9: fail with EPERM\n",
		"\ngetpriority if which (32 bits signed) < -1: fail with EPERM\n",
		"\nkill if sig (32 bits) & (0xff) == 0x9: fail with EPERM\n",
		"\nchmod if mode (16 bits) > 0x1ff: fail with EPERM\n",
		"\nmmap if len > 0x10000000000: fail with EPERM\n",
		"\nmmap kill if arg1 (each call's width) != 0x3: fail with EPERM\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("listing has no %q:\n%s", want, text)
		}
	}
}
