package seccomp

import (
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
)

// The generated table is go-seccomp-bpf's x86_64 table: run `go generate ./seccomp`
// after upgrading it.
func TestSyscallTableCurrent(t *testing.T) {
	if len(syscallNumbers()) != len(arch.X86_64.SyscallNames) {
		t.Fatalf("%d names generated, the library has %d: run go generate ./seccomp", len(syscallNumbers()), len(arch.X86_64.SyscallNames))
	}
	for n, nr := range arch.X86_64.SyscallNames {
		if syscallNumbers()[n] != nr {
			t.Errorf("%s: generated %d, library %d", n, syscallNumbers()[n], nr)
		}
	}
}
