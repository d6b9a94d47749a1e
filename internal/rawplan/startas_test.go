package rawplan

import (
	"bytes"
	"testing"
)

// procPath makes the same path as the Go formatting would, NUL-terminated, for pids of
// one to the most digits a pid_t has.
func TestProcPath(t *testing.T) {
	var name [16]byte
	copy(name[:], "setgroups")
	for _, c := range []struct {
		pid  uintptr
		want string
	}{{1, "/proc/1/setgroups"}, {10, "/proc/10/setgroups"}, {4194304, "/proc/4194304/setgroups"}, {2147483647, "/proc/2147483647/setgroups"}} {
		var dst [64]byte
		procPath(&dst, c.pid, &name)
		got, _, ok := bytes.Cut(dst[:], []byte{0})
		if !ok || string(got) != c.want {
			t.Errorf("procPath(%d) = %q, want %q", c.pid, dst[:], c.want)
		}
	}
}
