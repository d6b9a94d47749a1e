package integration

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// examples/session prints each line's output under that line's "$ cmd  (exit N)"
// header, as examples/pool does (the trial saw a command's output above its header,
// under the previous command's).
func TestExampleSessionOutputOrder(t *testing.T) {
	requireBinary(t)
	if os.Geteuid() != 0 {
		t.Skip("root only (the library program runs as the test's user)")
	}
	s := newSandbox(t, rootCaller)
	bin := buildProgram(t, s, "session-example", "./examples/session", "CGO_ENABLED=0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, bin, s.ws)
	run.Stdin = strings.NewReader("echo one\necho two >&2; exit 3\n")
	out, err := run.Output()
	if err != nil {
		t.Fatalf("examples/session: %v\n%s", err, out)
	}
	want := "$ echo one  (exit 0)\none\n$ echo two >&2; exit 3  (exit 3)\ntwo\n"
	if string(out) != want {
		t.Errorf("examples/session printed\n%q\nwant\n%q", out, want)
	}
}
