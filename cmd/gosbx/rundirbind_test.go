package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gosbx/gosbx/policy"
)

// The run-dir check's sources resolved through one EvalSymlinksOnce (each lstat once
// over the check) come out as filepath.EvalSymlinks gives them, in any order of use:
// through symlinks (relative, absolute, chained), dangling, with missing tails, through
// a file, with dot-dot.
func TestCanonicalPathOnce(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(base, "real", "run", "gosbx"), 0o755))
	must(os.WriteFile(filepath.Join(base, "real", "file"), nil, 0o644))
	must(os.Symlink("real", filepath.Join(base, "rel")))
	must(os.Symlink(filepath.Join(base, "real", "run"), filepath.Join(base, "abs")))
	must(os.Symlink("rel/run", filepath.Join(base, "chain")))
	must(os.Symlink("nowhere", filepath.Join(base, "dangling")))
	must(os.Symlink("loop", filepath.Join(base, "loop")))
	paths := []string{"/dev/null", "/dev/zero", "/usr", "/run", "/run/gosbx", "/tmp/gosbx-0"}
	for _, p := range []string{"real", "real/run/gosbx", "rel", "rel/run/gosbx", "abs", "abs/gosbx", "abs/missing",
		"chain/gosbx", "chain/gosbx/missing/deeper", "dangling", "dangling/x", "loop", "loop/x", "real/file/x",
		"rel/../real/run", "abs/../run", "missing", "missing/x"} {
		paths = append(paths, filepath.Join(base, p))
	}
	for _, order := range [][]string{paths, reversed(paths)} {
		eval := policy.EvalSymlinksOnce()
		for _, p := range order {
			if got, want := canonicalPath(eval, p), canonicalPath(filepath.EvalSymlinks, p); got != want {
				t.Errorf("canonicalPath(%s) = %s through EvalSymlinksOnce, %s through filepath.EvalSymlinks", p, got, want)
			}
		}
	}
}

func reversed(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[len(xs)-1-i] = x
	}
	return out
}
