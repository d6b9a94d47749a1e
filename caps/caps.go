// Package caps drops privileges before a sandboxed command is executed: the capability
// bounding set, the ambient, inheritable, permitted and effective sets, the root
// securebits, and sets no_new_privs. See capabilities(7), prctl(2) (PR_CAPBSET_DROP,
// PR_CAP_AMBIENT, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS) and capset(2).
//
// Capabilities are per thread: call DropAll on a thread locked with
// runtime.LockOSThread, and start the command from that same thread (a process forked
// from it inherits its credentials). moby/sys/capability would add a /proc parse and a
// dependency for what are five syscalls here.
package caps

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Securebits (linux/securebits.h) that keep a uid 0 process from regaining capabilities
// at execve(2) or by changing uids, each locked so it cannot be unset
// (capabilities(7), "The securebits flags").
const (
	secbitNoRoot                  = 1 << 0
	secbitNoRootLocked            = 1 << 1
	secbitNoSetuidFixup           = 1 << 2
	secbitNoSetuidFixupLocked     = 1 << 3
	secbitNoCapAmbientRaise       = 1 << 6
	secbitNoCapAmbientRaiseLocked = 1 << 7
)

// LockedNoRoot is the PR_SET_SECUREBITS value DropSets sets: the no-root,
// no-setuid-fixup and no-ambient-raise securebits, each locked. For a caller that makes
// the prctl(2) calls itself (nsinit's process stage, in a forked child).
const LockedNoRoot = secbitNoRoot | secbitNoRootLocked | secbitNoSetuidFixup |
	secbitNoSetuidFixupLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked

// LastCap returns the highest capability number the running kernel knows, probed with
// PR_CAPBSET_READ (no /proc needed), which fails with EINVAL past it: a binary search,
// six calls (a system call costs microseconds in a VM; one per capability added
// 0.1-0.2 ms to each launch).
func LastCap() int {
	lo, hi := 0, 63 // capability 0 exists; lo always does, hi+1 never
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if _, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(mid), 0, 0, 0); err != nil {
			hi = mid - 1
		} else {
			lo = mid
		}
	}
	return lo
}

// DropAll empties the calling thread's bounding set (needs CAP_SETPCAP, so it goes
// first), sets and locks the no-root securebits, clears the ambient set, then sets the
// inheritable, permitted and effective sets to zero, and finally sets no_new_privs.
// It returns an error naming the step; the thread is then in an undefined state and
// the caller must not execute anything.
func DropAll() error {
	if err := DropBounding(); err != nil {
		return err
	}
	return DropSets()
}

// DropBounding empties the calling thread's bounding set (PR_CAPBSET_DROP, needs
// CAP_SETPCAP). The thread keeps its effective capabilities until DropSets; what it
// executes can never regain a dropped one.
func DropBounding() error {
	last := LastCap()
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	return nil
}

// DropSets is DropAll after DropBounding: the locked no-root securebits, an empty
// ambient set, empty inheritable, permitted and effective sets, and no_new_privs.
func DropSets() error {
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, LockedNoRoot, 0, 0, 0); err != nil {
		return fmt.Errorf("set securebits: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear the ambient set: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset to empty: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	return nil
}

// State is a thread's capability sets as 64-bit masks, and its no_new_privs flag.
type State struct {
	Effective, Permitted, Inheritable, Bounding, Ambient uint64
	NoNewPrivs                                           bool
}

// Current reads the calling thread's State with capget(2) and prctl(2).
func Current() (State, error) {
	var s State
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return s, fmt.Errorf("capget: %w", err)
	}
	s.Effective = uint64(data[1].Effective)<<32 | uint64(data[0].Effective)
	s.Permitted = uint64(data[1].Permitted)<<32 | uint64(data[0].Permitted)
	s.Inheritable = uint64(data[1].Inheritable)<<32 | uint64(data[0].Inheritable)
	last := LastCap()
	for c := 0; c <= last; c++ {
		if v, _ := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); v == 1 {
			s.Bounding |= 1 << c
		}
		if v, _ := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c), 0, 0); v == 1 {
			s.Ambient |= 1 << c
		}
	}
	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil {
		return s, fmt.Errorf("get no_new_privs: %w", err)
	}
	s.NoNewPrivs = nnp == 1
	return s, nil
}
