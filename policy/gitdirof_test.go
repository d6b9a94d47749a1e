package policy

import (
	"os"
	"path/filepath"
	"testing"
)

// gitdirOf reads a .git file as setup.c read_gitfile_gently does: "gitdir: " exactly,
// then the rest of the file less trailing CR and LF (attack review 30 I2).
func TestGitdirOfAsGit(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gd := filepath.Join(d, "gd")
	if err := os.Mkdir(gd, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(d, ".git")
	for text, want := range map[string]string{
		"gitdir: " + gd + "\n":       gd,
		"gitdir: " + gd + "\r\n\n":   gd,
		"gitdir: gd\n":               gd,
		"gitdir:" + gd + "\n":        "", // git wants the space
		" gitdir: " + gd + "\n":      "",
		"gitdir: " + gd + " \n":      "", // the trailing space is the path's: no such dir
		"gitdir: " + gd + "\nmore\n": "", // so is a second line
		"gitdir: \n":                 "",
	} {
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := gitdirOf(f); err != nil || got != want {
			t.Errorf("gitdirOf(%q) = %q, %v; want %q", text, got, err, want)
		}
	}
}
