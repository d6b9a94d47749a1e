package integration

// Trial finding: a login shell inside (tmux's panes, bash -l) reads /etc/profile, which
// resets PATH, and the toolchains the policy put on PATH vanished (go: command not
// found in a tmux pane). The private HOME now has a ~/.profile that puts it back.

import (
	"os/exec"
	"strings"
	"testing"
)

func TestLoginShellKeepsPath(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		// an entry /etc/profile never sets, first, as the build profile's bin dirs are
		extra := "/opt/gosbx-login-test/bin"
		r := s.run("--env", "PATH="+extra+":/usr/bin:/bin", "--", shellPath, "-c", `echo "$PATH"; `+bash+` -lc 'echo "$PATH"'`)
		mustSucceed(t, r, "sh and bash -l")
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], extra+":") {
			t.Fatalf("want two PATH lines, the first starting with %s\n%v", extra, r)
		}
		if lines[1] != lines[0] {
			t.Errorf("bash -l's PATH %q, want the command's %q", lines[1], lines[0])
		}
		// the file is the sandbox's own: its HOME is a tmpfs, nothing lands on the host
		r = s.run("--", shellPath, "-c", `test -f "$HOME/.profile" && test -w "$HOME/.profile" && echo ok`)
		if r.stdout != "ok\n" {
			t.Errorf("~/.profile inside: want a file the command can edit\n%v", r)
		}
	})
}
