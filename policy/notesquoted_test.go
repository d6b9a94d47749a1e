package policy

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode"
)

// evil is text a command chooses (a file, pack or ref name) that would set the
// terminal's title, colour the rest, conceal it, and start a forged line.
const evil = "x\x1b]0;T\x07\x1b[31mR\x1b[2K\x1b[8m\u202e\ngosbx: note: forged\r"

// clean reports whether a gosbx line holds no control character, no bidi override
// and no line of its own.
func clean(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == '\u202e' })
}

// TestNotesQuoteCommandText feeds control bytes and a newline through every part of
// each after-run note and warning a command can choose (attack review 33 F10: the
// index-bit note printed the file name raw, the pack WARNING the pack names): none
// reaches the line unquoted.
func TestNotesQuoteCommandText(t *testing.T) {
	ws := "/w/ws" // the user's: only what lies in it is the command's
	removed := []string{
		ws + "/.git/index: " + evil + " (skip-worktree)",
		ws + "/.git/index: " + evil + " (assume-unchanged)",
		ws + "/.git/index: moved aside to " + ws + "/.git/index.gosbx-aside (it does not parse: " + evil + ")",
		ws + "/.git/index: moved aside to " + ws + "/.git/index.gosbx-aside (a sparse-directory entry \"" + evil + "\" that was not there at launch)",
		ws + "/.git/objects/ab/" + evil + ": object moved aside to " + ws + "/x.gosbx-aside (it does not hash to its name: " + evil + ")",
		ws + "/.git/objects/pack/" + evil + ": moved aside to " + ws + "/y (a cache of the packs, new " + evil + ")",
		ws + "/.git/objects/info/" + evil + ": moved aside to " + ws + "/y (a commit-graph, new " + evil + ")",
		ws + "/.git/refs/remotes/" + evil + " (put back as at launch)",
		ws + "/.git/packed-refs: moved aside to " + ws + "/p (" + evil + ")",
		ws + "/.git/packed-refs: refs/remotes/" + evil,
		ws + "/.git/packed-refs: refs/tags/" + evil,
		ws + "/.git/refs/heads/" + evil,
		ws + "/.git/packed-refs: refs/replace/" + evil,
		ws + "/.git/refs/replace/" + evil,
		ws + "/.git/refs/tags/" + evil + " (a tag put back as at launch)",
	}
	for i, p := range removed {
		n := ReplaceRefNote(p)
		if n == "" && i < 2 {
			t.Errorf("no note for %q", p)
		}
		if n == "" {
			// a name with ": " in it is not told apart: the generic line (cmd/gosbx)
			n = "gosbx: the command created (or replaced) " + Shown(p) + ", which would redirect git outside the sandbox; removed"
		}
		if !clean(n) {
			t.Errorf("ReplaceRefNote(%q) = %q", p, n)
		}
	}
	failed := []string{
		ws + "/.git/objects/pack: not checked, new or changed during the run: pack-" + evil + ".pack, pack-" + evil + ".idx",
		ws + "/.git/objects/ab/" + evil + ": not checked: " + evil,
		ws + "/.git/index: " + evil,
		ws + "/.git/packed-refs: " + evil,
		ws + "/.git/" + evil + ": " + evil,
		ws + "/" + evil,
	}
	for _, f := range failed {
		for _, who := range []string{"the command", "the session's commands"} {
			if n := NotRemovedNote(f, who); !clean(n) {
				t.Errorf("NotRemovedNote(%q) = %q", f, n)
			}
		}
	}
	for _, n := range GitTreeNotes([]string{ws + "/" + evil + "/.gitignore (a FIFO" + treeSpecialSuffix},
		[]string{ws + "/" + evil + ": not searched " + evil}, "the command") {
		if !clean(n) {
			t.Errorf("GitTreeNotes: %q", n)
		}
	}
	if err := treeSpecialError([][2]string{{ws + "/.gitignore", "a FIFO"}}); !clean(err.Error()) {
		t.Errorf("treeSpecialError: %q", err)
	}
}

// TestRemoveGitTreeSpecials: FIFOs at git's in-tree names within the scan's depth and
// on the chain to cwd below it are removed (a symlink to one too), a FIFO at another
// name or in a skipped directory, a regular .gitignore and a dangling symlink are
// left; the launch's search refuses a tree holding one; a tree past the limit is
// reported, not half searched in silence.
func TestRemoveGitTreeSpecials(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b", "c", "d", "e")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(deep, 0o755))
	must(os.MkdirAll(filepath.Join(root, "node_modules", "m"), 0o755))
	fifos := []string{".gitignore", "a/.gitattributes", "a/b/c/.mailmap", "a/b/c/d/e/.gitignore", "node_modules/m/.gitignore", "a/pipe"}
	for _, f := range fifos {
		must(syscall.Mkfifo(filepath.Join(root, f), 0o644))
	}
	must(os.WriteFile(filepath.Join(root, "a", "b", ".gitignore"), []byte("x\n"), 0o644))
	must(os.Symlink("../pipe", filepath.Join(root, "a", "b", ".gitmodules")))
	must(os.Symlink("nowhere", filepath.Join(root, "a", "b", "c", ".gitignore")))
	if _, err := scanProtected(newResolver(), root, deep, []string{".git"}, 0); err == nil || !strings.Contains(err.Error(), "a FIFO") {
		t.Errorf("the search of a tree with a FIFO .gitignore: %v", err)
	}
	removed, failed := RemoveGitTreeSpecials([]string{root}, deep, 0)
	if len(failed) != 0 || len(removed) != 5 {
		t.Fatalf("removed %q, failed %q", removed, failed)
	}
	for _, f := range []string{".gitignore", "a/.gitattributes", "a/b/c/.mailmap", "a/b/c/d/e/.gitignore", "a/b/.gitmodules"} {
		if _, err := os.Lstat(filepath.Join(root, f)); err == nil {
			t.Errorf("%s is still there", f)
		}
	}
	for _, f := range []string{"node_modules/m/.gitignore", "a/pipe", "a/b/.gitignore", "a/b/c/.gitignore"} {
		if _, err := os.Lstat(filepath.Join(root, f)); err != nil {
			t.Errorf("%s was removed: %v", f, err)
		}
	}
	if _, err := scanProtected(newResolver(), root, deep, []string{".git"}, 0); err != nil {
		t.Errorf("the search after the removal: %v", err)
	}
	for i := 0; i < 5; i++ {
		must(os.MkdirAll(filepath.Join(root, "many", string(rune('a'+i))), 0o755))
	}
	if _, failed := RemoveGitTreeSpecials([]string{root}, "", 4); len(failed) != 1 || !strings.Contains(failed[0], "not searched") {
		t.Errorf("a tree past the limit: failed %q", failed)
	}
}
