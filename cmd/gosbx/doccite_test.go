package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The Go docs cite only files the repository has: DESIGN.md is kept outside it (`go
// doc ./policy` sent a reader to it: trial finding), so no Go file may name it while
// the repository has none.
func TestDocsCiteNoAbsentDesign(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "DESIGN.md")); err == nil {
		t.Skip("the repository has DESIGN.md")
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "DESIGN.md") && !strings.HasSuffix(p, "doccite_test.go") {
			t.Errorf("%s cites DESIGN.md, which is not in the repository: cite README.md or docs/", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
