package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Attack review 39 F1: a file handed as stdout or stderr opened for reading only
// (`1< file`), or as stdin opened for writing only, was reopened by the command
// through /proc/self/fd/N with the access the inode gives the sandbox's uid: a host
// file outside every writable tree, handed for reading, written. Each path refuses it
// (125, the stream and the fix named) before the command runs; checked on the host file.

// againstProbe appends to each of the command's descriptors through its magic link and
// leaves a marker in the workspace (proof it ran).
const againstProbe = `touch ran-against; for n in 0 1 2; do echo PWNED >> /proc/self/fd/$n; done; exit 0`

// checkAgainst fails unless r is the refusal (125, where stderr was seen the fix named)
// and the victim file and the workspace are unchanged.
func checkAgainst(t *testing.T, s *sandbox, what, path string, r result, stderrSeen bool) {
	t.Helper()
	if b, _ := os.ReadFile(path); string(b) != "orig\n" {
		t.Errorf("%s: the command wrote a file handed against its direction: %q\n%v", what, b, r)
	}
	if r.code != 125 {
		t.Errorf("%s: exit %d, want 125\n%v", what, r.code, r)
	}
	if stderrSeen && !strings.Contains(r.stderr, "redirect with > or >>") {
		t.Errorf("%s: the refusal does not name the fix:\n%v", what, r)
	}
	if _, err := os.Lstat(s.ws + "/ran-against"); err == nil {
		t.Errorf("%s: the command ran", what)
		os.Remove(s.ws + "/ran-against")
	}
}

// openVictim opens victimFile's file (0666, the caller's, outside the workspace) with flag.
func openVictim(t *testing.T, s *sandbox, flag int) (string, *os.File) {
	t.Helper()
	path, ro := victimFile(t, s)
	if flag == os.O_RDONLY {
		return path, ro
	}
	f, err := os.OpenFile(path, flag, 0)
	must(t, err)
	t.Cleanup(func() { f.Close() })
	return path, f
}

func TestHandedAgainstDirectionRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		for i, stream := range []string{"stdin", "stdout", "stderr"} {
			flag := os.O_RDONLY
			if i == 0 {
				flag = os.O_WRONLY | os.O_APPEND
			}
			path, f := openVictim(t, s, flag)
			ctx := s.limitCtx(runLimit)
			cmd := s.command(ctx, "--", shellPath, "-c", againstProbe)
			switch i {
			case 0:
				cmd.Stdin = f
			case 1:
				cmd.Stdout = f
			case 2:
				cmd.Stderr = f
			}
			r := s.runCmd(ctx, cmd)
			checkAgainst(t, s, "exec with "+stream+" against its direction", path, r, i != 2)
			must(t, os.Remove(path))
		}
	})
}

func TestHandedAgainstDirectionRefusedSession(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("ad")
		defer e.gosbx("session", "stop", "ad")
		for _, mode := range [][]string{nil, {"--detach"}} {
			for i, stream := range []string{"stdin", "stdout"} {
				flag := os.O_RDONLY
				if i == 0 {
					flag = os.O_WRONLY | os.O_APPEND
				}
				path, f := openVictim(t, e.sandbox, flag)
				var in, out *os.File
				if i == 0 {
					in = f
				} else {
					out = f
				}
				args := append(append([]string{"exec", "--session", "ad"}, mode...), "--", shellPath, "-c", againstProbe)
				r := e.gosbxWith(in, out, nil, args...)
				checkAgainst(t, e.sandbox, fmt.Sprintf("exec --session %v with %s against its direction", mode, stream), path, r, true)
				must(t, os.Remove(path))
			}
		}
	})
}
