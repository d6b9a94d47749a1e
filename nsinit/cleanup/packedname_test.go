package cleanup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackedName: a ref line split as git 2.39's packed backend splits it (attack
// review 39 F2): the id ends at a space, tab or CR, the name at a NUL byte.
func TestPackedName(t *testing.T) {
	id := strings.Repeat("a", 40)
	for _, c := range []struct {
		text, ref string
		nul       bool
	}{
		{id + " refs/tags/v1", "refs/tags/v1", false},
		{id + "\trefs/tags/v1", "refs/tags/v1", false},
		{id + "\rrefs/tags/v1", "refs/tags/v1", false},
		{id + " refs/tags/v1\x00" + id, "refs/tags/v1", true},
		{id + " refs/tags/v1\x00", "refs/tags/v1", true},
		{"^" + id, "", false},
		{"# pack-refs with: peeled", "pack-refs with: peeled", false},
	} {
		oid, ref, nul := packedName(c.text)
		if ref != c.ref || nul != c.nul || (strings.HasPrefix(c.text, id) && oid != id) {
			t.Errorf("packedName(%q) = %q, %q, %v; want %q, %v", c.text, oid, ref, nul, c.ref, c.nul)
		}
	}
}

// TestRefValuesNulName: a packed tag line whose name holds a NUL byte is refused
// (ErrNulName), never made a Keep entry; more tags than max is ErrTooManyRefs.
func TestRefValuesNulName(t *testing.T) {
	gd := t.TempDir()
	dir := filepath.Join(gd, "refs", "tags")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a, c := strings.Repeat("a", 40), strings.Repeat("c", 40)
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(gd, "packed-refs"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(a + " refs/tags/v1\n" + c + " refs/tags/v2\x00" + c + "\n")
	if keep, err := RefValues(dir, 10); !errors.Is(err, ErrNulName) {
		t.Errorf("RefValues = %q, %v; want ErrNulName", keep, err)
	}
	write(a + " refs/tags/v1\n" + a + " refs/tags/v2\n")
	if keep, err := RefValues(dir, 1); !errors.Is(err, ErrTooManyRefs) {
		t.Errorf("RefValues = %q, %v; want ErrTooManyRefs", keep, err)
	}
	if keep, err := RefValues(dir, 2); err != nil || len(keep) != 2 {
		t.Errorf("RefValues = %q, %v; want two entries", keep, err)
	}
}
