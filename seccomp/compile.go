package seccomp

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"runtime"
	"strings"
	"unsafe"

	libseccomp "github.com/elastic/go-seccomp-bpf"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Program is a compiled filter: classic BPF instructions for seccomp(2).
type Program []unix.SockFilter

// x32SyscallBit marks x32 ABI system call numbers on x86_64.
const x32SyscallBit = 0x40000000

// archCheck comes first: a call through any other ABI (i386 int 0x80, x32) is killed.
// go-seccomp-bpf's own check sends a foreign-ABI call to the default action, which for a
// default-allow filter would skip every rule.
var archCheck = []bpf.Instruction{
	bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AUDIT_ARCH_X86_64, SkipTrue: 1},
	bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
	bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
	bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 1},
	bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
}

// Compile turns the runtime-spec filter into a program: the architecture check, then one
// go-seccomp-bpf group per entry of s.Syscalls in order (the first match decides), then
// s.DefaultAction. The output depends on s alone, byte for byte.
func Compile(s *specs.LinuxSeccomp) (Program, error) {
	if s == nil {
		return nil, nil
	}
	for _, a := range s.Architectures {
		if a != specs.ArchX86_64 {
			return nil, fmt.Errorf("architecture %s: only the native SCMP_ARCH_X86_64 is allowed", a)
		}
	}
	def, err := action(s.DefaultAction, s.DefaultErrnoRet)
	if err != nil {
		return nil, fmt.Errorf("default action: %w", err)
	}
	p := libseccomp.Policy{DefaultAction: def}
	for i, sc := range s.Syscalls {
		act, err := action(sc.Action, sc.ErrnoRet)
		if err != nil {
			return nil, fmt.Errorf("syscalls[%d]: %w", i, err)
		}
		g := libseccomp.SyscallGroup{Action: act}
		if len(sc.Args) == 0 {
			g.Names = sc.Names
		} else {
			conds, err := conditions(sc.Args)
			if err != nil {
				return nil, fmt.Errorf("syscalls[%d]: %w", i, err)
			}
			for _, n := range sc.Names {
				g.NamesWithCondtions = append(g.NamesWithCondtions, libseccomp.NameWithConditions{Name: n, Conditions: conds})
			}
		}
		p.Syscalls = append(p.Syscalls, g)
	}
	if len(p.Syscalls) == 0 {
		// go-seccomp-bpf wants a group; an empty one matches nothing.
		p.Syscalls = []libseccomp.SyscallGroup{{Action: libseccomp.ActionAllow}}
	}
	body, err := p.Assemble()
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(append(append([]bpf.Instruction{}, archCheck...), body...))
	if err != nil {
		return nil, err
	}
	if len(raw) > 4096 {
		return nil, fmt.Errorf("the filter has %d instructions, more than the kernel's 4096", len(raw))
	}
	prog := make(Program, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return prog, nil
}

func action(a specs.LinuxSeccompAction, errno *uint) (libseccomp.Action, error) {
	switch a {
	case specs.ActAllow:
		return libseccomp.ActionAllow, nil
	case specs.ActKillProcess:
		return libseccomp.ActionKillProcess, nil
	case specs.ActLog:
		return libseccomp.ActionLog, nil
	case specs.ActErrno:
		e := uint(unix.EPERM)
		if errno != nil {
			e = *errno
		}
		if e == 0 || e > 4095 {
			return 0, fmt.Errorf("errno %d out of range", e)
		}
		return libseccomp.Action(unix.SECCOMP_RET_ERRNO | uint32(e)), nil
	}
	return 0, fmt.Errorf("action %s is not supported (SCMP_ACT_ALLOW, SCMP_ACT_ERRNO, SCMP_ACT_KILL_PROCESS, SCMP_ACT_LOG)", a)
}

// conditions converts runtime-spec argument comparisons, all of which must hold. A
// masked equality (arg & mask == v) becomes "no bit of mask outside v set" plus "this
// bit set" for each bit of v, go-seccomp-bpf's BitsNotSet and BitsSet.
func conditions(args []specs.LinuxSeccompArg) ([]libseccomp.Condition, error) {
	var out []libseccomp.Condition
	for _, a := range args {
		c := libseccomp.Condition{Argument: uint32(a.Index), Value: a.Value}
		switch a.Op {
		case specs.OpEqualTo:
			c.Operation = libseccomp.Equal
		case specs.OpNotEqual:
			c.Operation = libseccomp.NotEqual
		case specs.OpLessThan:
			c.Operation = libseccomp.LessThan
		case specs.OpLessEqual:
			c.Operation = libseccomp.LessOrEqual
		case specs.OpGreaterThan:
			c.Operation = libseccomp.GreaterThan
		case specs.OpGreaterEqual:
			c.Operation = libseccomp.GreaterOrEqual
		case specs.OpMaskedEqual:
			mask, want := a.Value, a.ValueTwo
			if want&^mask != 0 {
				return nil, fmt.Errorf("masked equality %#x & %#x == %#x can never hold", mask, mask, want)
			}
			if clear := mask &^ want; clear != 0 {
				out = append(out, libseccomp.Condition{Argument: uint32(a.Index), Operation: libseccomp.BitsNotSet, Value: clear})
			}
			for w := want; w != 0; w &= w - 1 {
				out = append(out, libseccomp.Condition{Argument: uint32(a.Index), Operation: libseccomp.BitsSet, Value: 1 << bits.TrailingZeros64(w)})
			}
			continue
		default:
			return nil, fmt.Errorf("operator %s is not supported", a.Op)
		}
		out = append(out, c)
	}
	return out, nil
}

// Bytes is the program as the kernel's struct sock_filter array, native endian: what
// bwrap's --seccomp reads.
func (p Program) Bytes() []byte {
	b := make([]byte, 0, 8*len(p))
	for _, f := range p {
		b = binary.LittleEndian.AppendUint16(b, f.Code)
		b = append(b, f.Jt, f.Jf)
		b = binary.LittleEndian.AppendUint32(b, f.K)
	}
	return b
}

// Text is a readable listing, one instruction a line.
func (p Program) Text() string {
	var sb strings.Builder
	for i, f := range p {
		ins := bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}.Disassemble()
		fmt.Fprintf(&sb, "%4d  %v\n", i, ins)
	}
	return sb.String()
}

// Load installs the program on every thread of the calling process (seccomp(2)
// SECCOMP_SET_MODE_FILTER with SECCOMP_FILTER_FLAG_TSYNC); every process forked after
// inherits it. no_new_privs must be set first (caps.DropAll). An error means no filter.
func Load(p Program) error {
	if len(p) == 0 {
		return nil
	}
	fprog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(p)
	if errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	if r != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): thread %d could not be synchronized", r)
	}
	return nil
}
