package cleanup

import (
	"os"

	"github.com/gosbx/gosbx/internal/rawjson"
	"path/filepath"
	"strings"
	"testing"
)

// Names that are not valid UTF-8 (a Latin-1 branch, worktree or workspace name: git
// and the kernel take any byte but a few) come back from a killed launch's journal as
// they were. encoding/json alone would have written each bad byte as U+FFFD: the replay
// then took the user's worktree for one the command made and removed its
// config.worktree, and a kept name for a new one.
func TestJournalNamesNotUTF8(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rt, ws := filepath.Join(base, "rt"), filepath.Join(base, "ws")
	gd := filepath.Join(ws, ".git")
	wts := filepath.Join(gd, "worktrees")
	mine := filepath.Join(wts, "caf\xe9")
	modules := filepath.Join(gd, "modules")
	for _, d := range []string{rt, mine, filepath.Join(modules, "m\xff")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(mine, "config.worktree")
	if err := os.WriteFile(cfg, []byte("[core]\n\tsparseCheckout = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", rt)
	entries := []Entry{
		{Kind: RemoveStrayCommondirs, Path: wts, Keep: []string{"caf\xe9"}},
		{Kind: RemoveNewEntries, Path: modules, Keep: []string{"m\xff"}},
	}
	j, err := BeginJournal(entries, os.Getpid(), []string{ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(j.Done)
	b, err := os.ReadFile(j.path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `\ufffd`) || strings.Contains(string(b), "\ufffd") {
		t.Errorf("the journal holds U+FFFD in place of a name's bytes: %s", b)
	}
	removed, failed := replayAsGone(t, j)
	if _, err := os.Stat(cfg); err != nil {
		t.Errorf("the replay removed the user's worktree config %q: %v (removed %q)", cfg, err, removed)
	}
	if len(failed) != 0 {
		t.Errorf("names as at launch reported: %q", failed)
	}
}

// A workspace whose own path is not valid UTF-8 keeps its journal's entries: the
// replay still finds the tree and carries out what stays true (a planted symlink in
// the git dir is removed).
func TestJournalTreeNotUTF8(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rt, ws := filepath.Join(base, "rt"), filepath.Join(base, "ws-caf\xe9")
	gd := filepath.Join(ws, ".git")
	for _, d := range []string{rt, gd} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", rt)
	j, err := BeginJournal([]Entry{{Kind: RemoveSpecialUnder, Path: gd}}, os.Getpid(), []string{ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(j.Done)
	link := filepath.Join(gd, "link")
	if err := os.Symlink("/etc", link); err != nil {
		t.Fatal(err)
	}
	removed, failed := replayAsGone(t, j)
	if _, err := os.Lstat(link); err == nil {
		t.Errorf("the symlink planted in the git dir of %q was left: removed %q, failed %q", ws, removed, failed)
	}
}

func TestJournalStringRoundTrip(t *testing.T) {
	for _, s := range []string{"", "refs/heads/main", "caf\xe9", "\xff\xfe", "é ok", "a\xc3"} {
		got, ok := fromJournal(journalString(s))
		if !ok || got != s {
			t.Errorf("round trip of %q = %q, %v", s, got, ok)
		}
	}
	if _, ok := fromJournal(rawjson.Mark + "!!"); ok {
		t.Error("a marked string with bad base64 was accepted")
	}
	rec := record{Trees: []string{"/w\xe9"}, Entries: []Entry{{Kind: RestoreSymlink, Path: "/w\xe9/x", Target: "t\xe9", Was: []Stamp{{Name: "n\xe9"}}}}}
	mapStrings(&rec, func(s string) (string, bool) { return journalString(s), true })
	if rec.Trees[0] == "/w\xe9" || rec.Entries[0].Target == "t\xe9" || rec.Entries[0].Was[0].Name == "n\xe9" {
		t.Errorf("mapStrings left a field unmapped: %+v", rec)
	}
	if !mapStrings(&rec, fromJournal) || rec.Trees[0] != "/w\xe9" || rec.Entries[0].Path != "/w\xe9/x" || rec.Entries[0].Was[0].Name != "n\xe9" {
		t.Errorf("mapStrings did not undo: %+v", rec)
	}
}
