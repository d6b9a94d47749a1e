package cleanup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRetakeAdoptsOnlyHostChanges: Retake moves the baselines by what changed between
// the Snapshot a pass left and now (the host's work while no process of the session
// ran), never by what the pass left (attack review 36 F1: a worktree entry the command
// made became "known", a tag it made a launch tag).
func TestRetakeAdoptsOnlyHostChanges(t *testing.T) {
	gd := t.TempDir()
	wt := filepath.Join(gd, "worktrees")
	tags := filepath.Join(gd, "refs", "tags")
	for _, d := range []string{filepath.Join(wt, "cmd"), filepath.Join(wt, "gone"), tags} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const a, b, c = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "cccccccccccccccccccccccccccccccccccccccc"
	write(filepath.Join(tags, "v1"), a+"\n")
	write(filepath.Join(tags, "cmdtag"), b+"\n") // the command's: not in Keep
	entries := []Entry{
		{Kind: RemoveStrayCommondirs, Path: wt, Keep: []string{"gone"}},
		{Kind: RestoreRefs, Path: tags, Keep: []string{"v1\x00" + a}},
		{Kind: RemoveIfCreated, Path: filepath.Join(gd, "MERGE_HEAD")},
		{Kind: RemoveIfCreated, Path: filepath.Join(gd, "LEFT")},
	}
	write(filepath.Join(gd, "LEFT"), "the pass could not remove it\n")
	left, failed := Snapshot(entries)
	if len(failed) > 0 {
		t.Fatalf("Snapshot: %v", failed)
	}
	// the host, while no process of the session runs
	if err := os.Mkdir(filepath.Join(wt, "host"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(wt, "gone")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(tags, "v1"), c+"\n")
	write(filepath.Join(tags, "mine"), c+"\n")
	write(filepath.Join(gd, "MERGE_HEAD"), c+"\n")
	retaken := Retake(entries, left)
	if !slices.Equal(retaken, []bool{true, true, true, true}) {
		t.Errorf("retaken %v, want all", retaken)
	}
	if got := entries[0].Keep; !slices.Equal(got, []string{"host"}) {
		t.Errorf("known worktree entries %q, want the host's only (not the command's cmd, not the gone one)", got)
	}
	if got := entries[1].Keep; !slices.Equal(got, []string{"mine\x00" + c, "v1\x00" + c}) {
		t.Errorf("launch tags %q, want v1 and mine as the host left them, not the command's cmdtag", got)
	}
	if len(entries[2].Was) != 1 {
		t.Errorf("the MERGE_HEAD the host made is not stamped as the host's: %v", entries[2].Was)
	}
	if entries[3].Was != nil {
		t.Errorf("what the pass left unchanged is stamped as the host's: %v", entries[3].Was)
	}
	// what the pass left is still the command's: removed by the next run
	removed, _ := Run(entries[3:])
	if !slices.Equal(removed, []string{filepath.Join(gd, "LEFT")}) {
		t.Errorf("the next run removed %q, want what the pass had left", removed)
	}
	// a state that cannot be read: the baseline stays, and Retake says so
	e := []Entry{{Kind: RemoveStrayCommondirs, Path: wt, Keep: []string{"x"}}}
	if got := Retake(e, &State{of: []entryState{{}}}); got[0] || !slices.Equal(e[0].Keep, []string{"x"}) {
		t.Errorf("with no state left, retaken %v, Keep %q; want false and the old baseline", got, e[0].Keep)
	}
}

// TestRunEachBad: RunEach marks the entries whose run reported a failure (an LFS
// object past the size it checks), and only them.
func TestRunEachBad(t *testing.T) {
	d := t.TempDir()
	store := filepath.Join(d, "lfs", "objects")
	obj := filepath.Join(store, "aa", "bb", "aabb"+strings.Repeat("0", 60))
	if err := os.MkdirAll(filepath.Dir(obj), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(obj, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(obj, 600<<20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	_, failed, bad := RunEach([]Entry{
		{Kind: RemoveIfCreated, Path: filepath.Join(d, "absent")},
		{Kind: VerifyLFSObjects, Path: store},
	})
	if len(failed) == 0 || !slices.Equal(bad, []bool{false, true}) {
		t.Errorf("failed %q, bad %v; want the second entry marked", failed, bad)
	}
}

// TestRetakePackedLines: a packed-refs line the host adds or changes under the entry's
// prefix is adopted, one it drops is dropped, one the command added before the
// snapshot is not; the prefixes the entry leaves alone (refs/heads/) are not held.
func TestRetakePackedLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "packed-refs")
	const a, b = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	write := func(lines ...string) {
		t.Helper()
		if err := os.WriteFile(p, []byte("# pack-refs with: peeled fully-peeled sorted \n"+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(a+" refs/heads/main", a+" refs/jj/keep", a+" refs/jj/old", b+" refs/jj/cmd")
	entries := []Entry{{Kind: RemovePackedRefs, Path: p, Prefix: "refs/", Skip: []string{"refs/heads/"}, Keep: []string{a + " refs/jj/keep", a + " refs/jj/old"}}}
	left, failed := Snapshot(entries)
	if len(failed) > 0 {
		t.Fatal(failed)
	}
	write(b+" refs/heads/main", a+" refs/heads/side", a+" refs/jj/keep", b+" refs/jj/cmd", a+" refs/pull/1/head")
	if got := Retake(entries, left); !got[0] {
		t.Fatal("not retaken")
	}
	if want := []string{a + " refs/jj/keep", a + " refs/pull/1/head"}; !slices.Equal(entries[0].Keep, want) {
		t.Errorf("Keep %q, want %q", entries[0].Keep, want)
	}
}

// TestSnapshotNamesUnread: a state Snapshot cannot read (a directory entry's path now
// a file) is named with StateNotRead, and Retake keeps that entry's baseline.
func TestSnapshotNamesUnread(t *testing.T) {
	f := filepath.Join(t.TempDir(), "worktrees")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	entries := []Entry{{Kind: RemoveStrayCommondirs, Path: f, Keep: []string{"a"}}}
	left, failed := Snapshot(entries)
	if len(failed) != 1 || !strings.HasPrefix(failed[0], f+": "+StateNotRead) {
		t.Fatalf("Snapshot failed %q, want one line naming %s", failed, f)
	}
	if got := Retake(entries, left); got[0] || !slices.Equal(entries[0].Keep, []string{"a"}) {
		t.Errorf("retaken %v, Keep %q; want false and the old baseline", got, entries[0].Keep)
	}
}
