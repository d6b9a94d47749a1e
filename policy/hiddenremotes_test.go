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
// insteadOf rewriting, a legacy remotes/ file), from the command's directory or below
// the checkout's top; a remote bound at its own path, one reached over the network, a
// path where no repository is, and a credential path are left out (attack review 30
// F9); nothing is read from a config the spec does not keep read-only, nor through a
// .git file naming a git dir the sandbox does not see (F2).
func TestHiddenLocalRemotes(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".git", "remotes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"origin.git", "f.git", "rel.git", "shown.git", "mirror/a.git", "creds/ssh", "leg.git"} {
		mkRemoteRepo(t, filepath.Join(base, r), "main", true, "")
	}
	cfg := "[remote \"origin\"]\n\turl = " + base + "/origin.git\n" +
		"[remote \"file\"]\n\turl = file://" + base + "/f.git\n" +
		"[remote \"rel\"]\n\turl = ../rel.git\n" +
		"[remote \"shown\"]\n\turl = " + base + "/shown.git\n" +
		"[remote \"net\"]\n\turl = https://example.com/r.git\n" +
		"[remote \"alias\"]\n\turl = mirror:a.git\n" +
		"[remote \"none\"]\n\turl = " + base + "/nothing-here\n" +
		"[remote \"key\"]\n\turl = " + base + "/creds/ssh\n" +
		"[url \"" + base + "/mirror/\"]\n\tinsteadOf = mirror:\n"
	if err := os.WriteFile(filepath.Join(ws, ".git", "config"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".git", "remotes", "leg"), []byte("URL: "+base+"/leg.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := &config.Config{Mounts: []specs.Mount{{Destination: "/", Type: "tmpfs"}, {Destination: ws, Source: ws, Type: "bind"},
		{Destination: base + "/shown.git", Source: base + "/shown.git", Type: "bind"}},
		Linux: &config.Linux{ReadonlyPaths: []string{filepath.Join(ws, ".git")}}}
	creds := []string{base + "/creds"}
	got := HiddenLocalRemotes(spec, filepath.Join(ws, "sub"), creds)
	want := []LocalRemote{{"origin", base + "/origin.git"}, {"file", base + "/f.git"}, {"rel", base + "/rel.git"}, {"alias", base + "/mirror/a.git"},
		{"remote leg (a legacy remotes/ file)", base + "/leg.git"}}
	if !slices.Equal(got, want) {
		t.Errorf("HiddenLocalRemotes = %v\nwant %v", got, want)
	}
	if got := HiddenLocalRemotes(spec, base, creds); got != nil {
		t.Errorf("outside any repository: %v", got)
	}
	// a config the command could write (not read-only in the spec): none
	spec.Linux.ReadonlyPaths = nil
	if got := HiddenLocalRemotes(spec, ws, creds); got != nil {
		t.Errorf("from a config the sandbox could write: %v", got)
	}
	// F2: a .git file naming a repository the sandbox does not see: not followed
	other := filepath.Join(base, "secret")
	mkRemoteRepo(t, other, "main", false, "")
	if out, err := gitT(t, other, "remote", "add", "hidden", base+"/origin.git"); err != nil {
		t.Fatal(out, err)
	}
	ws2 := filepath.Join(base, "ws2")
	if err := os.MkdirAll(ws2, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws2, ".git"), []byte("gitdir: "+other+"/.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec2 := &config.Config{Mounts: []specs.Mount{{Destination: "/", Type: "tmpfs"}, {Destination: ws2, Source: ws2, Type: "bind"}},
		Linux: &config.Linux{ReadonlyPaths: []string{filepath.Join(ws2, ".git"), other}}}
	if got := HiddenLocalRemotes(spec2, ws2, nil); got != nil {
		t.Errorf("through a .git file to a repository the sandbox does not see: %v", got)
	}
}
