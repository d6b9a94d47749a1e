package mounts

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A bind source is checked by the launcher and opened again by the init: if the path
// changed in between (a directory swapped for a symlink, or for another directory), the
// init refuses it rather than mounting something that was never checked.
func TestOpenSourceChecked(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "d")
	other := filepath.Join(base, "other")
	for _, d := range []string{real, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	checked, err := OpenSourcePath(real)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(checked)

	t.Run("path through a symlink", func(t *testing.T) {
		link := filepath.Join(base, "link")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenSourcePath(link); !errors.Is(err, unix.ELOOP) {
			t.Errorf("OpenSourcePath through a symlink = %v, want ELOOP", err)
		}
		if _, err := OpenSourceChecked(checked, link, true); !errors.Is(err, unix.ELOOP) {
			t.Errorf("OpenSourceChecked through a symlink = %v, want ELOOP", err)
		}
	})
	t.Run("swapped for another directory", func(t *testing.T) {
		if err := unix.Renameat2(unix.AT_FDCWD, real, unix.AT_FDCWD, other, unix.RENAME_EXCHANGE); err != nil {
			t.Fatal(err)
		}
		defer unix.Renameat2(unix.AT_FDCWD, real, unix.AT_FDCWD, other, unix.RENAME_EXCHANGE)
		_, err := OpenSourceChecked(checked, real, true)
		if !errors.Is(err, unix.ESTALE) {
			t.Errorf("OpenSourceChecked after a swap = %v, want ESTALE", err)
		}
		var me *Error
		if !errors.As(err, &me) || me.Source != real {
			t.Errorf("error %v does not name the source %s", err, real)
		}
	})
}
