package cleanup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RemovePackedRefs drops the replace refs not there at launch, with their peeled lines,
// keeps every other line and the kept replace ref, and leaves an unchanged file alone.
func TestRemovePackedRefs(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "packed-refs")
	kept := "1111 refs/replace/aaaa"
	in := "# pack-refs with: peeled fully-peeled sorted \n2222 refs/heads/main\n" + kept + "\n3333 refs/replace/bbbb\n^4444\n5555 refs/tags/v1\n^6666\n"
	os.WriteFile(p, []byte(in), 0o640)
	removed, failed := Run([]Entry{{Kind: RemovePackedRefs, Path: p, Prefix: "refs/replace/", Keep: []string{kept}}})
	if len(failed) != 0 || len(removed) != 1 || removed[0] != p+": refs/replace/bbbb" {
		t.Fatalf("removed %q, failed %q", removed, failed)
	}
	want := "# pack-refs with: peeled fully-peeled sorted \n2222 refs/heads/main\n" + kept + "\n5555 refs/tags/v1\n^6666\n"
	if b, _ := os.ReadFile(p); string(b) != want {
		t.Errorf("packed-refs is %q, want %q", b, want)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode())
	}
	if removed, failed := Run([]Entry{{Kind: RemovePackedRefs, Path: p, Prefix: "refs/replace/", Keep: []string{kept}}}); len(removed)+len(failed) != 0 {
		t.Errorf("a second run removed %q, failed %q", removed, failed)
	}
	// a symlink is not followed (RemoveSpecialUnder removes it)
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("3333 refs/replace/bbbb\n"), 0o644)
	os.Remove(p)
	os.Symlink(victim, p)
	Run([]Entry{{Kind: RemovePackedRefs, Path: p, Prefix: "refs/replace/"}})
	if b, _ := os.ReadFile(victim); string(b) != "3333 refs/replace/bbbb\n" {
		t.Errorf("the symlink's target was rewritten: %q", b)
	}
}

// A packed-refs over MaxPackedRefs (a sparse file: no disk) or with a line over
// MaxPackedRefLine is moved aside whole, not read into memory (attack review 28 F3).
func TestRemovePackedRefsAside(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(p string) error
	}{
		{"oversized", func(p string) error { return os.Truncate(p, MaxPackedRefs+1) }},
		{"long line", func(p string) error {
			return os.WriteFile(p, []byte("2222 refs/heads/main\n3333 refs/replace/"+strings.Repeat("b", MaxPackedRefLine)+"\n"), 0o644)
		}},
		{"no newline in 1 MiB", func(p string) error { return os.Truncate(p, 1<<20) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "packed-refs")
			os.WriteFile(p, nil, 0o644)
			if err := c.make(p); err != nil {
				t.Fatal(err)
			}
			removed, failed := Run([]Entry{{Kind: RemovePackedRefs, Path: p, Prefix: "refs/replace/"}})
			if len(failed) != 0 || len(removed) != 1 || !strings.Contains(removed[0], "moved aside") {
				t.Fatalf("removed %q, failed %q", removed, failed)
			}
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("packed-refs is still where git reads it")
			}
			if _, err := os.Lstat(p + asideSuffix); err != nil {
				t.Errorf("not moved aside: %v", err)
			}
		})
	}
}

// A prefix without "/" (refs/heads/origin, a remote's shadow) takes only the ref itself
// and the refs below it, never refs/heads/origin-fix; a ref under it that was there at
// launch and moved is put back as at launch, not deleted (attack review 32 F2).
func TestRemovePackedRefsShadowPrefix(t *testing.T) {
	p := filepath.Join(t.TempDir(), "packed-refs")
	in := "# pack-refs with: peeled fully-peeled sorted \n" +
		"1111 refs/heads/origin-fix\n" + // the user's, packed during the run
		"9999 refs/heads/origin/feature\n" + // the user's branch, moved by the command
		"8888 refs/heads/origin/main\n" + // the command's
		"7777 refs/heads/origin\n" + // the command's
		"2222 refs/heads/main\n"
	os.WriteFile(p, []byte(in), 0o644)
	removed, failed := Run([]Entry{{Kind: RemovePackedRefs, Path: p, Prefix: "refs/heads/origin", Keep: []string{"3333 refs/heads/origin/feature"}}})
	if len(failed) != 0 || len(removed) != 3 {
		t.Fatalf("removed %q, failed %q", removed, failed)
	}
	want := "# pack-refs with: peeled fully-peeled sorted \n" +
		"1111 refs/heads/origin-fix\n" +
		"3333 refs/heads/origin/feature\n" +
		"2222 refs/heads/main\n"
	if b, _ := os.ReadFile(p); string(b) != want {
		t.Errorf("packed-refs is %q, want %q", b, want)
	}
}
