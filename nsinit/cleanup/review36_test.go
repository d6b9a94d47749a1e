package cleanup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Unit tests of attack review 36's packed-refs findings F3-F5.

const header = "# pack-refs with: peeled fully-peeled sorted \n"

// TestRemovePackedRefsEveryName: an entry with Prefix "" removes new lines for names
// outside refs/ ("main", "origin/main") and outside the skipped namespaces, keeps the
// header, the lines there at launch and those in the namespaces, and leaves one line
// of a launch ref that the command doubled (F3, F4).
func TestRemovePackedRefsEveryName(t *testing.T) {
	a, c := strings.Repeat("a", 40), strings.Repeat("c", 40)
	p := filepath.Join(t.TempDir(), "packed-refs")
	os.WriteFile(p, []byte(header+c+" main\n"+a+" mine\n"+c+" origin/main\n"+a+" refs/heads/main\n"+
		a+" refs/pull/1/head\n"+c+" refs/pull/1/head\n"+c+" refs/tags/new\n^"+a+"\n"+c+" v1\n"), 0o644)
	if err := (Entry{Kind: RemovePackedRefs, Path: p}).Check(); err != nil {
		t.Errorf("Check of Prefix \"\": %v", err)
	}
	if err := (Entry{Kind: RemovePackedRefs, Path: p, Prefix: "heads/"}).Check(); err == nil {
		t.Error("Check took a prefix neither empty nor under refs/")
	}
	removed, failed := Run([]Entry{{Kind: RemovePackedRefs, Path: p, Keep: []string{a + " mine", a + " refs/pull/1/head"}, Skip: []string{"refs/heads/", "refs/tags/"}}})
	b, _ := os.ReadFile(p)
	want := header + a + " mine\n" + a + " refs/heads/main\n" + a + " refs/pull/1/head\n" + c + " refs/tags/new\n^" + a + "\n"
	if string(b) != want || len(failed) != 0 || len(removed) != 4 {
		t.Errorf("packed-refs after:\n%s\nwant\n%s\nremoved %q failed %q", b, want, removed, failed)
	}
}

// tagsRepo makes a git dir with refs/tags and the packed-refs text packed; it returns
// refs/tags.
func tagsRepo(t *testing.T, packed string) string {
	gd := t.TempDir()
	tags := filepath.Join(gd, "refs", "tags")
	os.MkdirAll(tags, 0o755)
	os.WriteFile(filepath.Join(gd, "packed-refs"), []byte(packed), 0o644)
	return tags
}

// TestRestoreRefsAsGitReads: a launch tag on two packed lines, or in a file out of
// order under a "sorted" header, or whose peeled line is not the launch's, is written
// back loose and its packed lines removed (F4, F5); RefValues refuses the ambiguous
// files.
func TestRestoreRefsAsGitReads(t *testing.T) {
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	for _, tc := range []struct {
		name, launch, after string
		put                 []string // tags written back
		ambiguous           bool     // RefValues refuses the after file
	}{
		{"twice, the command's first", header + a + " refs/tags/v1\n", header + c + " refs/tags/v1\n" + a + " refs/tags/v1\n", []string{"v1"}, true},
		{"twice, the launch's first", header + a + " refs/tags/v1\n", header + a + " refs/tags/v1\n" + c + " refs/tags/v1\n", []string{"v1"}, true},
		{"out of order", header + a + " refs/tags/v1\n" + a + " refs/tags/v2\n", header + a + " refs/tags/v2\n" + a + " refs/tags/v1\n", []string{"v1", "v2"}, true},
		{"out of order, no sorted header", "# pack-refs with: peeled fully-peeled \n" + a + " refs/tags/v1\n" + a + " refs/tags/v2\n",
			"# pack-refs with: peeled fully-peeled \n" + a + " refs/tags/v2\n" + a + " refs/tags/v1\n", nil, false},
		{"peeled line moved", header + a + " refs/tags/v1\n^" + b + "\n", header + a + " refs/tags/v1\n^" + c + "\n", []string{"v1"}, false},
		{"peeled line added", header + a + " refs/tags/v1\n", header + a + " refs/tags/v1\n^" + c + "\n", []string{"v1"}, false},
		{"peeled line removed", header + a + " refs/tags/v1\n^" + b + "\n", header + a + " refs/tags/v1\n", []string{"v1"}, false},
		{"as at launch", header + a + " refs/tags/v1\n^" + b + "\n", header + a + " refs/tags/v1\n^" + b + "\n", nil, false},
	} {
		tags := tagsRepo(t, tc.launch)
		keep, err := RefValues(tags, 100)
		if err != nil {
			t.Fatalf("%s: RefValues at launch: %v", tc.name, err)
		}
		packed := filepath.Join(filepath.Dir(filepath.Dir(tags)), "packed-refs")
		os.WriteFile(packed, []byte(tc.after), 0o644)
		if _, err := RefValues(tags, 100); (err != nil) != tc.ambiguous {
			t.Errorf("%s: RefValues after: %v, want an error %v", tc.name, err, tc.ambiguous)
		}
		removed, failed := Run([]Entry{{Kind: RestoreRefs, Path: tags, Keep: keep}})
		if len(failed) != 0 || len(removed) != len(tc.put) {
			t.Errorf("%s: removed %q failed %q, want %q put back", tc.name, removed, failed, tc.put)
		}
		after, _ := os.ReadFile(packed)
		for _, n := range tc.put {
			if v, err := os.ReadFile(filepath.Join(tags, n)); err != nil || string(v) != a+"\n" {
				t.Errorf("%s: loose %s is %q %v, want the launch's", tc.name, n, v, err)
			}
			if strings.Contains(string(after), "refs/tags/"+n+"\n") {
				t.Errorf("%s: packed-refs still names %s:\n%s", tc.name, n, after)
			}
		}
		if moved, _, _, err := refsMoved(tags, keep); err != nil || len(moved) != 0 {
			t.Errorf("%s: after the cleanup refsMoved = %q %v", tc.name, moved, err)
		}
	}
}

// TestRestoreRefsUnvouchedPeel: a tag loose at launch (git peeled its object) that the
// run packed with a peeled line is not taken for moved: its peeled line is dropped and
// the header's peeled traits with it, so that git peels the object; the other lines
// keep theirs (F5, without a note after a git pack-refs in the run).
func TestRestoreRefsUnvouchedPeel(t *testing.T) {
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	tags := tagsRepo(t, header+b+" refs/tags/old\n^"+a+"\n")
	os.WriteFile(filepath.Join(tags, "v1"), []byte(a+"\n"), 0o644)
	keep, err := RefValues(tags, 100)
	if want := []string{"old\x00" + b + "\x00^" + a, "v1\x00" + a}; err != nil || !slices.Equal(keep, want) {
		t.Fatalf("RefValues at launch: %q %v, want %q", keep, err, want)
	}
	os.Remove(filepath.Join(tags, "v1"))
	packed := filepath.Join(filepath.Dir(filepath.Dir(tags)), "packed-refs")
	os.WriteFile(packed, []byte(header+b+" refs/tags/old\n^"+a+"\n"+a+" refs/tags/v1\n^"+c+"\n"), 0o644)
	removed, failed := Run([]Entry{{Kind: RestoreRefs, Path: tags, Keep: keep}})
	if len(removed) != 0 || len(failed) != 0 {
		t.Errorf("removed %q failed %q, want none", removed, failed)
	}
	after, _ := os.ReadFile(packed)
	if want := "# pack-refs with:                     sorted \n" + b + " refs/tags/old\n^" + a + "\n" + a + " refs/tags/v1\n"; string(after) != want {
		t.Errorf("packed-refs after:\n%s\nwant\n%s", after, want)
	}
	if now, err := RefValues(tags, 100); err != nil || !slices.Equal(now, []string{"old\x00" + b + "\x00^" + a, "v1\x00" + a}) {
		t.Errorf("RefValues after: %q %v", now, err)
	}
}

// TestRemovePackedRefsPeeledLines: the peeled line after a kept line under the entry's
// prefix (no launch line vouches for it: git would trust it) is dropped and the
// header's peeled traits blanked; after a line put back as at launch too; after a line
// outside the prefix it stays (F5's class for remote-tracking, shadow and stray refs).
func TestRemovePackedRefsPeeledLines(t *testing.T) {
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	p := filepath.Join(t.TempDir(), "packed-refs")
	keep := []string{a + " refs/remotes/o/kept", a + " refs/remotes/o/moved"}
	for _, tc := range []struct{ before, after string }{
		{header + a + " refs/remotes/o/kept\n^" + c + "\n" + b + " refs/tags/t\n^" + a + "\n",
			"# pack-refs with:                     sorted \n" + a + " refs/remotes/o/kept\n" + b + " refs/tags/t\n^" + a + "\n"},
		{header + c + " refs/remotes/o/moved\n^" + c + "\n",
			"# pack-refs with:                     sorted \n" + a + " refs/remotes/o/moved\n"},
		{header + a + " refs/remotes/o/kept\n" + b + " refs/tags/t\n^" + a + "\n", ""},
	} {
		os.WriteFile(p, []byte(tc.before), 0o644)
		_, failed := Run([]Entry{{Kind: RemovePackedRefs, Path: p, Prefix: "refs/remotes/", Keep: keep}})
		want := tc.after
		if want == "" {
			want = tc.before
		}
		if got, _ := os.ReadFile(p); string(got) != want || len(failed) != 0 {
			t.Errorf("from\n%s\ngot\n%s\nwant\n%s\nfailed %q", tc.before, got, want, failed)
		}
	}
}
