package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// writeExecutable writes b to the file p with mode (an executable) through a child
// process, and returns an error naming p. A file this test process opened for writing
// is inherited, still open for writing, by any child another goroutine forks at that
// moment (gosbx launches of parallel tests), until that child's exec closes it; an exec
// of the file meanwhile fails with ETXTBSY (exit 126 from setpriv or gosbx;
// golang/go#22315). The child (cat) holds the only descriptor that writes, and has
// exited when this returns.
func writeExecutable(p string, b []byte, mode os.FileMode) error {
	cmd := exec.Command("/bin/sh", "-c", `umask 077 && cat > "$1"`, "sh", p)
	cmd.Stdin = bytes.NewReader(b)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("write %s: %v: %s", p, err, out)
	}
	if err := os.Chmod(p, mode); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// mustWriteExecutable is writeExecutable, failing t on an error.
func mustWriteExecutable(t testing.TB, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := writeExecutable(p, b, mode); err != nil {
		t.Fatal(err)
	}
}
