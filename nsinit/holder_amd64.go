package nsinit

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// The commands' pid 1 (the holder) is a program of its own, 200 bytes: it must not
// share pid 1's memory (processes sharing an mm share oom_score_adj, and clear_refs acts
// on the mm) nor keep a copy of it (a fork of a Go process costs ~1 ms of page tables
// and copy-on-write faults, and holds megabytes for the sandbox's life). The process
// stage executes it from a sealed memfd (execveat(2) AT_EMPTY_PATH: no path, no file).
//
// holderCode is its whole text, x86-64:
//
//	    mov  edi, 4            ; PR_SET_DUMPABLE (execve made it dumpable again)
//	    xor  esi, esi          ; 0
//	    mov  eax, 157          ; prctl
//	    syscall
//	loop:
//	    mov  rdi, -1           ; any child
//	    xor  esi, esi          ; no status
//	    mov  edx, 0x40000000   ; __WALL
//	    xor  r10d, r10d        ; no rusage
//	    mov  eax, 61           ; wait4
//	    syscall
//	    cmp  rax, -10          ; -ECHILD: none left
//	    jne  loop
//	    lea  rdi, [rip+set]    ; SIGCHLD, blocked since before execve
//	    xor  esi, esi          ; no siginfo
//	    xor  edx, edx          ; no timeout
//	    mov  r10d, 8           ; sizeof(sigset_t)
//	    mov  eax, 128          ; rt_sigtimedwait
//	    syscall
//	    jmp  loop
//	    nop; nop
//	set: dq 1 << (SIGCHLD-1)
var holderCode = []byte{
	0xbf, 0x04, 0x00, 0x00, 0x00,
	0x31, 0xf6,
	0xb8, 0x9d, 0x00, 0x00, 0x00,
	0x0f, 0x05,
	// loop (offset 14)
	0x48, 0xc7, 0xc7, 0xff, 0xff, 0xff, 0xff,
	0x31, 0xf6,
	0xba, 0x00, 0x00, 0x00, 0x40,
	0x45, 0x31, 0xd2,
	0xb8, 0x3d, 0x00, 0x00, 0x00,
	0x0f, 0x05,
	0x48, 0x83, 0xf8, 0xf6,
	0x75, 0xe2, // to 14 from 44
	0x48, 0x8d, 0x3d, 0x15, 0x00, 0x00, 0x00, // set (72) from 51
	0x31, 0xf6,
	0x31, 0xd2,
	0x41, 0xba, 0x08, 0x00, 0x00, 0x00,
	0xb8, 0x80, 0x00, 0x00, 0x00,
	0x0f, 0x05,
	0xeb, 0xc8, // to 14 from 70
	0x90, 0x90,
	// set (offset 72)
	0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
}

// holderELF is holderCode as a static ELF64 executable (elf(5)): the file header, one
// PT_LOAD program header (read and execute), then the code, loaded at holderBase.
func holderELF() []byte {
	const (
		base   = 0x400000
		ehsize = 64
		phsize = 56
	)
	b := make([]byte, ehsize+phsize, ehsize+phsize+len(holderCode))
	le := binary.LittleEndian
	copy(b, []byte{0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little endian */, 1 /* version */})
	le.PutUint16(b[16:], 2)    // ET_EXEC
	le.PutUint16(b[18:], 0x3e) // EM_X86_64
	le.PutUint32(b[20:], 1)    // EV_CURRENT
	le.PutUint64(b[24:], base+ehsize+phsize)
	le.PutUint64(b[32:], ehsize) // program headers right after
	le.PutUint16(b[52:], ehsize)
	le.PutUint16(b[54:], phsize)
	le.PutUint16(b[56:], 1)
	ph := b[ehsize:]
	size := uint64(ehsize + phsize + len(holderCode))
	le.PutUint32(ph[0:], 1) // PT_LOAD
	le.PutUint32(ph[4:], 5) // PF_R|PF_X
	le.PutUint64(ph[16:], base)
	le.PutUint64(ph[24:], base)
	le.PutUint64(ph[32:], size)
	le.PutUint64(ph[40:], size)
	le.PutUint64(ph[48:], 0x1000)
	return append(b, holderCode...)
}

// holderFile returns a sealed, close-on-exec memfd holding holderELF.
func holderFile() (int, error) {
	fd, err := unix.MemfdCreate("gosbx-pid1", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.MemfdCreate("gosbx-pid1", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING) // before Linux 6.3
	}
	if err != nil {
		return -1, fmt.Errorf("memfd_create: %w", err)
	}
	elf := holderELF()
	if n, err := unix.Write(fd, elf); err != nil || n != len(elf) {
		unix.Close(fd)
		return -1, fmt.Errorf("write the holder to its memfd: %d bytes, %v", n, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("seal the holder's memfd: %w", err)
	}
	return fd, nil
}
