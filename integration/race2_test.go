package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Mount-target races (issue 7, item 3; CVE-2021-30465, CVE-2024-45310 class).

// swapLoop is sandbox A's command: it swaps the directory d of the shared workspace
// with a symlink to / (renameat2 RENAME_EXCHANGE) until the host creates the stop file
// (at most 40 s), then puts the directory back.
const swapLoop = `
import ctypes, os, sys, time
ws = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
d, l, stop = (os.path.join(ws, n).encode() for n in ("d", "l", "stop"))
n, end = 0, time.time() + 40
print("SWAPPING", flush=True)
while not os.path.exists(stop) and time.time() < end:
    if libc.syscall(316, -100, d, -100, l, 2) == 0:
        n += 1
if os.path.islink(d):
    libc.syscall(316, -100, d, -100, l, 2)
print("SWAPS", n, "DIR", os.path.isdir(d) and not os.path.islink(d))
`

// Two sandboxes share a workspace. A swaps the directory d for a symlink to / in a
// tight loop while the host launches B 50 times under a policy file (outside the
// workspace) that protects d/secret.txt; B tries to write through d/. Afterwards
// nothing outside the workspace was written on the host (/, /etc, a canary directory
// writable by the caller), secret.txt is unchanged, and every B run either ran with
// its protection in place (a read-only mount at d/secret.txt, and no mount of the
// host's / under the workspace) or was refused with 125.
func TestProtectedPathSwapRace(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.writeWS("d/secret.txt", "orig-"+s.id+"\n", 0o644)
		s.chown(filepath.Join(s.ws, "d"))
		must(t, os.Symlink("/", filepath.Join(s.ws, "l")))
		s.chown(filepath.Join(s.ws, "l"))
		pol := s.writePolicy("protect-d.yaml", "extends: agent\nfilesystem: {protected: [\"d/secret.txt\"]}\n")

		canary, err := os.MkdirTemp("/var/tmp", "gosbx-it-canary-")
		must(t, err)
		t.Cleanup(func() { os.RemoveAll(canary) })
		must(t, os.Chmod(canary, 0o777))
		name := "gosbx-it-race-" + s.id
		outside := []string{"/" + name, "/etc/" + name, filepath.Join(canary, name), "/secret.txt"}
		for _, p := range outside[:3] {
			t.Cleanup(func() { os.Remove(p) })
		}
		hostMounts, _ := os.ReadFile("/proc/self/mountinfo")

		// Sandbox A: the swapper.
		ctx := s.limitCtx(runLimit)
		a := s.command(ctx, "--", python, "-c", swapLoop, s.ws)
		aOut := &lockedBuf{}
		a.Stdout, a.Stderr = aOut, aOut
		must(t, a.Start())
		aDone := make(chan struct{})
		go func() { _ = a.Wait(); close(aDone) }()
		stop := filepath.Join(s.ws, "stop")
		t.Cleanup(func() {
			_ = os.WriteFile(stop, nil, 0o644)
			select {
			case <-aDone:
			case <-time.After(10 * time.Second):
				_ = a.Process.Kill()
				<-aDone
			}
		})
		for end := time.Now().Add(10 * time.Second); !strings.Contains(aOut.String(), "SWAPPING") && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}

		// B: 50 launches that write through d/. The protection's mount point is listed
		// under the directory's current name: A's exchange may have renamed it l.
		probe := fmt.Sprintf(`ws=$1
awk -v p="$ws/d/secret.txt" -v q="$ws/l/secret.txt" '$5 == p || $5 == q { split($6, o, ","); print "PROT", o[1] }' /proc/self/mountinfo
awk -v w="$ws" 'index($5, w) == 1 && $4 == "/" { print "ROOTBIND", $5, $9 }' /proc/self/mountinfo
for i in 1 2 3 4 5 6 7 8; do
  (echo pwned >> "$ws/d/secret.txt") 2>/dev/null && echo WROTE-SECRET
  (echo pwned > "$ws/d/%[1]s") 2>/dev/null
  (echo pwned > "$ws/d/etc/%[1]s") 2>/dev/null
  (echo pwned > "$ws/d%[2]s/%[1]s") 2>/dev/null
done
exit 0`, name, canary)
		var ran, refused int
		for i := 0; i < 50; i++ {
			r := s.run("--policy", pol, "--", shellPath, "-c", probe, "_", s.ws)
			switch r.code {
			case 0:
				ran++
				if !strings.Contains(r.stdout, "PROT ro\n") {
					t.Errorf("run %d ran without its protection of d/secret.txt:\n%v", i, r)
				}
				if strings.Contains(r.stdout, "ROOTBIND") || strings.Contains(r.stdout, "WROTE-SECRET") {
					t.Errorf("run %d:\n%v", i, r)
				}
			case 125:
				refused++
			default:
				t.Errorf("run %d: want 0 or 125\n%v", i, r)
			}
		}
		must(t, os.WriteFile(stop, nil, 0o644))
		select {
		case <-aDone:
		case <-time.After(15 * time.Second):
			t.Errorf("the swapper did not stop")
		}
		t.Logf("B: %d ran, %d refused; A: %s", ran, refused, strings.TrimSpace(aOut.String()))
		if !strings.Contains(aOut.String(), "SWAPS") || strings.Contains(aOut.String(), "SWAPS 0 ") {
			t.Errorf("the swapper did not swap: %q", aOut.String())
		}

		for _, p := range outside {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s was written on the host", p)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(s.ws, "d", "secret.txt")); string(b) != "orig-"+s.id+"\n" {
			t.Errorf("the protected d/secret.txt changed on the host: %.120q", b)
		}
		now, _ := os.ReadFile("/proc/self/mountinfo")
		for _, l := range strings.Split(string(now), "\n") {
			if (strings.Contains(l, s.ws) || strings.Contains(l, canary)) && !strings.Contains(string(hostMounts), l) {
				t.Errorf("a mount landed in the host's mount table: %s", l)
			}
		}
	})
}

// lockedBuf is an output buffer safe to read while a process writes to it.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
