package policy

import (
	"os/exec"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/config"
)

func TestLoginProfile(t *testing.T) {
	home := []specs.Mount{{Destination: "/", Type: "bind"}, {Destination: "/home/u", Type: "tmpfs"}}
	env := []string{"HOME=/home/u", "PATH=/opt/it's/bin:/usr/bin"}
	f := loginProfile("/home/u", env, home, nil)
	if len(f) != 1 || f[0].Path != "/home/u/.profile" || f[0].Mode != 0o644 {
		t.Fatalf("files %+v", f)
	}
	// the content, run by sh, sets PATH to the command's, quote and all
	out, err := exec.Command("/bin/sh", "-c", f[0].Content+`printf %s "$PATH"`).Output()
	if err != nil || string(out) != "/opt/it's/bin:/usr/bin" {
		t.Errorf("sh of the profile: %q (%v)", out, err)
	}
	// none where HOME is not the private tmpfs, or something else is at the name
	for name, c := range map[string]struct {
		mounts []specs.Mount
		links  []config.Symlink
	}{
		"home bound":       {mounts: []specs.Mount{{Destination: "/home/u", Type: "bind"}}},
		"~/.profile bound": {mounts: append(home[:2:2], specs.Mount{Destination: "/home/u/.profile", Type: "bind"})},
		"a symlink there":  {mounts: home, links: []config.Symlink{{Path: "/home/u/.profile", Target: "x"}}},
		"no mount":         {},
	} {
		if f := loginProfile("/home/u", env, c.mounts, c.links); f != nil {
			t.Errorf("%s: %+v, want none", name, f)
		}
	}
	if f := loginProfile("/home/u", []string{"HOME=/home/u"}, home, nil); f != nil {
		t.Errorf("no PATH: %+v, want none", f)
	}
	// a PATH too long for a config file: no profile, rather than a config Validate
	// refuses (from an attack review: every launch failed at "config")
	long := "PATH=" + strings.Repeat("/usr/bin:", config.MaxFileSize/9+1)
	if f := loginProfile("/home/u", []string{long}, home, nil); f != nil {
		t.Errorf("a %d-byte PATH: a profile of %d bytes, want none", len(long), len(f[0].Content))
	}
}
