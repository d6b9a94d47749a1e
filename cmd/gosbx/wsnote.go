package main

import (
	"os"
	"path/filepath"

	"github.com/gosbx/gosbx/policy"
)

// enclosingNote is the note for a command that failed in a workspace gosbx took from the
// current directory (no --workspace) when a directory above it holds a git repository
// (.git) or, the workspace having no go.mod, a Go module (go.mod): run from a
// subdirectory, only that subdirectory is the sandbox's, and git says "not a git
// repository", go "go.mod file not found", with no word of why. given is --workspace
// as passed ("" when defaulted), cwd the directory it defaulted to; refused says why a
// directory could not be the workspace (policy.WorkspaceRefusal): the nearest directory
// above that holds one is named only when gosbx would take it (a stray go.mod in /tmp,
// a ~/.git of dotfiles name none). "" otherwise.
func enclosingNote(given, cwd string, refused func(string) error) string {
	if given != "" || cwd == "" || exists(filepath.Join(cwd, ".git")) {
		return ""
	}
	mod := !exists(filepath.Join(cwd, "go.mod"))
	for d := filepath.Dir(cwd); ; d = filepath.Dir(d) {
		what := ""
		switch {
		case exists(filepath.Join(d, ".git")):
			what = "a git repository"
		case mod && exists(filepath.Join(d, "go.mod")):
			what = "a Go module"
		}
		if what != "" {
			if d == "/" || refused(d) != nil {
				return "" // git and go would take this one too: nothing above to suggest
			}
			return "gosbx: note: the workspace is the current directory " + policy.Shown(cwd) + ", and " + policy.Shown(d) + " above it holds " + what +
				" the sandbox does not show: to work in it, pass --workspace " + policy.Shown(d) + " (the command still starts in " + policy.Shown(cwd) + ")"
		}
		if d == "/" {
			return ""
		}
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
