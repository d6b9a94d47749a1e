package config

import (
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// A Files entry lands only in a tmpfs of the config's own, never through a bind of a
// host tree (the one visible there decides), and goes to the init whole.
func TestFilesChecked(t *testing.T) {
	c := &Config{Mounts: []specs.Mount{
		{Destination: "/home/u", Type: "tmpfs"},
		{Destination: "/home/u/.cache", Type: "bind", Source: "/var/cache/x"},
		{Destination: "/ws", Type: "bind", Source: "/ws"},
	}}
	for _, tc := range []struct {
		f   File
		err string
	}{
		{File{Path: "/home/u/.profile", Content: "PATH=x\n", Mode: 0o644}, ""},
		{File{Path: "/home/u/.cache/p", Mode: 0o644}, "not inside a tmpfs"},
		{File{Path: "/ws/.profile", Mode: 0o644}, "not inside a tmpfs"},
		{File{Path: "/home/u", Mode: 0o644}, "not inside a tmpfs"},
		{File{Path: "/home/u/../x", Mode: 0o644}, "not a clean absolute path"},
		{File{Path: "/home/u/s", Mode: 0o4755}, "more than permission bits"},
		{File{Path: "/home/u/big", Content: strings.Repeat("x", MaxFileSize+1), Mode: 0o644}, "more than"},
	} {
		err := c.checkFile(tc.f)
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.f.Path, err, tc.err)
		}
	}
	// A bind over the tmpfs, its destination spelled unclean or relative, as the mount
	// step reads it (from an attack review: "/root//" was compared as text).
	for _, dest := range []string{"/home/u//", "/home/u/.", "home/u", "/home//u", "/home/x/../u"} {
		c := &Config{Mounts: []specs.Mount{{Destination: "/home/u", Type: "tmpfs"}, {Destination: dest, Type: "bind", Source: "/tmp/h"}}}
		if err := c.checkFile(File{Path: "/home/u/.profile", Mode: 0o644}); err == nil || !strings.Contains(err.Error(), "not inside a tmpfs") {
			t.Errorf("a bind at %q over the tmpfs: %v, want refused", dest, err)
		}
	}
}
