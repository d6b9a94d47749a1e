package rawplan

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// arena is memory outside the Go heap for a raw init's plan (rawplan.go): one
// anonymous private mapping (mmap(2)) that the launcher keeps until the raw child, which
// shares it (CLONE_VM), has exited. The garbage collector neither scans nor frees it, so
// what the child reads and writes there stays put however long the sandbox lives, and
// the child's stores need no write barrier. It holds no Go pointer that matters to the
// collector: every field placed in it is an integer or an address inside the arena.
type arena struct {
	mem  []byte
	used int
}

// newArena maps size bytes (rounded up to pages), zeroed. Errors wrap mmap's errno.
func newArena(size int) (*arena, error) {
	page := unix.Getpagesize()
	size = (size + page - 1) &^ (page - 1)
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes for the raw init's plan: %w", size, err)
	}
	return &arena{mem: mem}, nil
}

// ErrFull is the answer once a plan outgrows its arena, its ops or its registers: a
// launcher then sets the sandbox up another way (nsinit: the Go init).
var ErrFull = errors.New("the raw init's plan does not fit its arena")

// alloc returns the offset of n zeroed bytes aligned to align (a power of two).
func (a *arena) alloc(n, align int) (int, error) {
	off := (a.used + align - 1) &^ (align - 1)
	if n < 0 || off+n > len(a.mem) {
		return 0, ErrFull
	}
	a.used = off + n
	return off, nil
}

// addr is the address of the byte at off, for a system call's argument.
func (a *arena) addr(off int) uintptr { return uintptr(unsafe.Pointer(&a.mem[off])) }

// cstring copies s with a terminating NUL into the arena and returns its address; a NUL
// inside s is refused (EINVAL, as syscall.BytePtrFromString).
func (a *arena) cstring(s string) (uintptr, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return 0, fmt.Errorf("%q: %w", s, unix.EINVAL)
	}
	off, err := a.alloc(len(s)+1, 1)
	if err != nil {
		return 0, err
	}
	copy(a.mem[off:], s)
	return a.addr(off), nil
}

// cstrings copies ss as a NULL-terminated array of C strings (execve(2)'s argv, envp)
// and returns the array's address.
func (a *arena) cstrings(ss []string) (uintptr, error) {
	off, err := a.alloc((len(ss)+1)*8, 8)
	if err != nil {
		return 0, err
	}
	arr := unsafe.Slice((*uintptr)(unsafe.Pointer(&a.mem[off])), len(ss)+1)
	for i, s := range ss {
		if arr[i], err = a.cstring(s); err != nil {
			return 0, err
		}
	}
	return a.addr(off), nil
}

// arenaNew places a zeroed T in a and returns it. T must hold no Go pointer into the
// heap that the collector needs to see.
func arenaNew[T any](a *arena) (*T, error) {
	var zero T
	off, err := a.alloc(int(unsafe.Sizeof(zero)), int(unsafe.Alignof(zero)))
	if err != nil {
		return nil, err
	}
	return (*T)(unsafe.Pointer(&a.mem[off])), nil
}

// arenaSlice places n zeroed Ts in a.
func arenaSlice[T any](a *arena, n int) ([]T, error) {
	var zero T
	if n == 0 {
		return nil, nil
	}
	off, err := a.alloc(n*int(unsafe.Sizeof(zero)), int(unsafe.Alignof(zero)))
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&a.mem[off])), n), nil
}

// free unmaps the arena. Only once no child that shares it can still run.
func (a *arena) free() error {
	if a.mem == nil {
		return nil
	}
	err := unix.Munmap(a.mem)
	a.mem = nil
	return err
}
