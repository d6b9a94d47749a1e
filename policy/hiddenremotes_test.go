package policy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/config"
)

// The local remotes a sandbox does not show are read from the repository's config as
// the guard reads them (a plain path, file://, a relative path from the checkout's top,
// insteadOf rewriting), from the command's directory or below the checkout's top; a
// remote bound at its own path, and one reached over the network, are left out.
func TestHiddenLocalRemotes(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "[remote \"origin\"]\n\turl = " + base + "/origin.git\n" +
		"[remote \"file\"]\n\turl = file://" + base + "/f.git\n" +
		"[remote \"rel\"]\n\turl = ../rel.git\n" +
		"[remote \"shown\"]\n\turl = " + base + "/shown.git\n" +
		"[remote \"net\"]\n\turl = https://example.com/r.git\n" +
		"[remote \"alias\"]\n\turl = mirror:a.git\n" +
		"[url \"" + base + "/mirror/\"]\n\tinsteadOf = mirror:\n"
	if err := os.WriteFile(filepath.Join(ws, ".git", "config"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := &config.Config{Mounts: []specs.Mount{{Destination: "/", Type: "tmpfs"}, {Destination: ws, Source: ws, Type: "bind"},
		{Destination: base + "/shown.git", Source: base + "/shown.git", Type: "bind"}}}
	got := HiddenLocalRemotes(spec, filepath.Join(ws, "sub"))
	want := []LocalRemote{{"origin", base + "/origin.git"}, {"file", base + "/f.git"}, {"rel", base + "/rel.git"}, {"alias", base + "/mirror/a.git"}}
	if !slices.Equal(got, want) {
		t.Errorf("HiddenLocalRemotes = %v\nwant %v", got, want)
	}
	if got := HiddenLocalRemotes(spec, base); got != nil {
		t.Errorf("outside any repository: %v", got)
	}
}
