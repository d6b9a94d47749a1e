package integration

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"
)

// renameExchange swaps two paths atomically (renameat2(2) RENAME_EXCHANGE).
func renameExchange(a, b string) error {
	pa, _ := syscall.BytePtrFromString(a)
	pb, _ := syscall.BytePtrFromString(b)
	const renameExchange = 2
	_, _, e := syscall.Syscall6(316, uintptr(0xffffff9c), uintptr(unsafe.Pointer(pa)), uintptr(0xffffff9c), uintptr(unsafe.Pointer(pb)), renameExchange, 0)
	if e != 0 {
		return e
	}
	return nil
}

// A directory on the workspace's path swapped for a symlink to / while gosbx starts (as
// a second sandbox sharing the tree could do) never gets the host's /etc mounted
// read-write: every source is resolved once, without symlinks, the policy's checks
// apply to that path, and the init mounts only the very directory the launcher checked,
// or refuses (125). (Naming a path through a symlink that already exists is resolved
// like bwrap does: the checks then apply to its target.)
func TestWorkspaceSwapRace(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	race := filepath.Join(s.base, "race")
	must(t, os.MkdirAll(filepath.Join(race, "d", "etc"), 0o755))
	must(t, os.Symlink("/", filepath.Join(race, "l")))

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			renameExchange(filepath.Join(race, "d"), filepath.Join(race, "l"))
		}
	}()
	var ran, refused int
	for i := 0; i < 100; i++ {
		// Never writes: a writable passwd in the working directory is the proof.
		r := s.rawRun("exec", "--workspace", filepath.Join(race, "d", "etc"), "--", shellPath, "-c",
			`if [ -e passwd ] && [ -w passwd ]; then exit 42; fi; exit 0`)
		switch r.code {
		case 0:
			ran++
		case 125:
			refused++
		case 42:
			t.Errorf("run %d got the host's /etc read-write:\n%v", i, r)
		default:
			t.Errorf("run %d: unexpected\n%v", i, r)
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d runs on the checked directory, %d refused", ran, refused)
}

// rawRun runs gosbx with exactly these arguments, as the caller, stdin empty.
func (s *sandbox) rawRun(args ...string) result {
	s.t.Helper()
	ctx := s.limitCtx(runLimit)
	return s.runCmd(ctx, s.rawCommand(ctx, args...))
}
