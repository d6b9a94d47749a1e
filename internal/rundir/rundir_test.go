package rundir

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// testUID is a uid no process here runs as: its /tmp/gosbx-UID is this test's.
const testUID = 4242421

// TestFallbackRefusesForeign: with no runtime directory, the uid's /tmp/gosbx-UID is
// made mode 0700; one another user made first (here root, for testUID), a symbolic
// link, or one open to others is refused, never used (tmux's rule for /tmp/tmux-UID).
func TestFallbackRefusesForeign(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("root only: makes /tmp/gosbx-UID of another uid")
	}
	d := fallback(testUID)
	os.RemoveAll(d)
	t.Cleanup(func() { os.RemoveAll(d) })
	if p, err := Path(testUID, ""); err != nil || p != d {
		t.Fatalf("Path(%d) = %q, %v; want %s", testUID, p, err, d)
	}
	// made by root first: owned by uid 0, not testUID
	if _, err := Make(testUID, ""); err == nil || !strings.Contains(err.Error(), "owned by uid 0") {
		t.Errorf("a /tmp/gosbx-UID another user made: %v, want refused", err)
	}
	os.RemoveAll(d)
	target := t.TempDir()
	if err := os.Chown(target, testUID, testUID); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, d); err != nil {
		t.Fatal(err)
	}
	if _, err := Make(testUID, ""); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a /tmp/gosbx-UID that is a symbolic link: %v, want refused", err)
	}
	os.Remove(d)
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, testUID, testUID); err != nil {
		t.Fatal(err)
	}
	if _, err := Make(testUID, ""); err == nil || !strings.Contains(err.Error(), "mode") {
		t.Errorf("a /tmp/gosbx-UID open to others: %v, want refused", err)
	}
	if err := Check(d, testUID); err == nil {
		t.Error("Check passed a /tmp/gosbx-UID open to others")
	}
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if got, err := Make(testUID, ""); err != nil || got != d {
		t.Errorf("the uid's own private /tmp/gosbx-UID: %q, %v", got, err)
	}
}

// TestXDGRuntimeDir: a valid XDG_RUNTIME_DIR is used; an invalid one is an error for a
// user (naming the fallback), and root's falls back to /run/gosbx.
func TestXDGRuntimeDir(t *testing.T) {
	x := t.TempDir()
	if err := os.Chmod(x, 0o700); err != nil {
		t.Fatal(err)
	}
	uid := os.Getuid()
	if p, err := Path(uid, x); err != nil || p != filepath.Join(x, "gosbx") {
		t.Errorf("Path with a valid XDG_RUNTIME_DIR: %q, %v", p, err)
	}
	if err := os.Chmod(x, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := Path(uid, x); uid == 0 && (err != nil || p != "/run/gosbx") {
		t.Errorf("root with an XDG_RUNTIME_DIR open to others: %q, %v; want /run/gosbx", p, err)
	}
	if _, err := Path(testUID, x); err == nil || !strings.Contains(err.Error(), "/tmp/gosbx-4242421") {
		t.Errorf("a user with an XDG_RUNTIME_DIR not its own: %v, want an error naming the fallback", err)
	}
}

// In the initial user namespace every id is mapped: no owner is read as unmapped, and
// Owner names the uid (attack review 38 F2's messages change only where it is not).
func TestOwnerInitialNamespace(t *testing.T) {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil || strings.Join(strings.Fields(string(b)), " ") != "0 0 4294967295" {
		t.Skip("not in the initial user namespace")
	}
	for _, uid := range []uint32{0, 1000, 65534} {
		if Unmapped(uid) {
			t.Errorf("uid %d read as unmapped in the initial namespace", uid)
		}
		if got, want := Owner(uid), "uid "+strconv.Itoa(int(uid)); got != want {
			t.Errorf("Owner(%d) = %q, want %q", uid, got, want)
		}
	}
}

// Every runtime directory that cannot be made names a fix: a container's missing /tmp
// or /run (`--tmpfs`), else XDG_RUNTIME_DIR (attack review 38 F4).
func TestMkdirFixNamed(t *testing.T) {
	for d, want := range map[string]string{"/tmp/gosbx-7": "`--tmpfs /tmp`", "/run/gosbx": "`--tmpfs /run`",
		"/run/user/7/gosbx": "`--tmpfs /run`", "/home/u/.local/state/gosbx": "XDG_RUNTIME_DIR"} {
		if got := MkdirFix(d); !strings.Contains(got, want) || !strings.Contains(got, "XDG_RUNTIME_DIR") {
			t.Errorf("MkdirFix(%s) = %q, want %s and XDG_RUNTIME_DIR", d, got, want)
		}
	}
}
