package policy

import (
	"os"
	"path/filepath"
	"strings"
)

// Repository metadata in a writable tree is re-bound read-only: a hook or a config entry
// (core.fsmonitor, core.pager) planted there by the command would run later, outside
// the sandbox, the next time the user runs git. The .git at the top of the tree, in every
// directory between it and the working directory, and in nested repositories found by a
// bounded scan, are protected. A .git created by the command itself is not (it did not
// exist when the sandbox was built).

// scanDepth and scanBudget bound the nested-repository scan: directories at most this
// deep below the tree's root, at most this many directories read, on the start path.
const (
	scanDepth  = 3
	scanBudget = 512
)

// scanSkip are directories never descended into: dependency trees, caches, build output.
var scanSkip = map[string]bool{".git": true, "node_modules": true, ".venv": true, "venv": true,
	"target": true, "__pycache__": true, ".cache": true, "dist": true, "build": true,
	".tox": true, ".mypy_cache": true, ".gradle": true}

// repositories returns the .git paths to protect under root (canonical), given the
// command's working directory cwd ("" if none): every .git from cwd up to root is
// protected whatever its depth, since git would find it from there.
func repositories(root, cwd string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	add(filepath.Join(root, ".git")) // always listed: a missing path is skipped by the init
	if c, err := filepath.EvalSymlinks(cwd); err == nil && strings.HasPrefix(c, root+"/") {
		for d := c; d != root && len(d) > len(root); d = filepath.Dir(d) {
			if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
				add(filepath.Join(d, ".git"))
			}
		}
	}
	budget := scanBudget
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if depth > scanDepth || budget <= 0 {
			return
		}
		budget--
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			name := e.Name()
			if name == ".git" && depth > 0 {
				add(filepath.Join(dir, name))
			}
			if e.IsDir() && !scanSkip[name] && e.Type()&os.ModeSymlink == 0 {
				walk(filepath.Join(dir, name), depth+1)
			}
		}
	}
	walk(root, 0)
	return out
}
