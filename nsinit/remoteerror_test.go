package nsinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/policy"
)

// roundTrip sends err as the init does and reads it back as the launcher does.
func roundTrip(t *testing.T, step string, err error) (message, error) {
	t.Helper()
	r, w, perr := os.Pipe()
	if perr != nil {
		t.Fatal(perr)
	}
	defer r.Close()
	syncWriter{w}.send(errorMessage(step, err))
	w.Close()
	m, ok := newSyncReader(r).next()
	if !ok {
		t.Fatal("the message did not decode")
	}
	return m, m.err()
}

func TestRemoteErrorKeepsTypes(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"mount", &mounts.Error{Op: "bind", Source: "/src", Target: "/dst", Flags: "ro,nosuid", Err: unix.EACCES}},
		{"wrapped mount", fmt.Errorf("decode: %w", &mounts.Error{Op: "mount", Source: "tmpfs", Target: "/tmp",
			Err: fmt.Errorf("fsconfig size: %w", unix.EINVAL)})},
		{"path", fmt.Errorf("chdir: %w", &os.PathError{Op: "openat2", Path: "/nowhere", Err: unix.ENOENT})},
		{"errno", fmt.Errorf("sethostname: %w", unix.EPERM)},
		{"bare errno", unix.ENOSPC},
		{"text", errors.New("no errno at all")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := roundTrip(t, "mount", tc.err)
			if got.Error() != tc.err.Error() {
				t.Errorf("text %q, want %q", got, tc.err)
			}
			var want unix.Errno
			if errors.As(tc.err, &want) && !errors.Is(got, want) {
				t.Errorf("errors.Is(%v, %v) is false", got, want)
			}
			if !errors.As(tc.err, &want) {
				var e unix.Errno
				if errors.As(got, &e) {
					t.Errorf("%v unwraps to errno %v, which the original had not", got, e)
				}
			}
			var me, gme *mounts.Error
			if errors.As(tc.err, &me) {
				if !errors.As(got, &gme) || gme.Op != me.Op || gme.Source != me.Source || gme.Target != me.Target ||
					gme.Flags != me.Flags || gme.Error() != me.Error() {
					t.Errorf("*mounts.Error %+v, want %+v", gme, me)
				}
			}
			var pe, gpe *os.PathError
			if errors.As(tc.err, &pe) {
				if !errors.As(got, &gpe) || gpe.Op != pe.Op || gpe.Path != pe.Path {
					t.Errorf("*os.PathError %+v, want %+v", gpe, pe)
				}
			}
		})
	}
}

// A library caller's setup error from inside the init unwraps to its errno and type,
// with the step that failed.
func TestSetupErrorTypedAcrossTheWire(t *testing.T) {
	ws := testWorkspace(t)
	t.Run("chdir", func(t *testing.T) {
		spec := compile(t, policy.Options{Workspace: ws, Args: []string{"true"}}, nil)
		spec.Process.Cwd = filepath.Join(ws, "not-there")
		err := Command(spec).Run()
		skipIfNoSandbox(t, err)
		var se *SetupError
		if !errors.As(err, &se) || se.Step != "chdir" {
			t.Fatalf("err %v, want a *SetupError at step chdir", err)
		}
		if !errors.Is(err, unix.ENOENT) {
			t.Errorf("errors.Is(%v, ENOENT) is false", err)
		}
	})
	t.Run("mount", func(t *testing.T) {
		spec := compile(t, policy.Options{Workspace: ws, Args: []string{"true"}}, nil)
		spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/gosbx-bad-tmpfs", Type: "tmpfs", Source: "tmpfs",
			Options: []string{"nosuid", "nodev", "size=not-a-size"}})
		err := Command(spec).Run()
		skipIfNoSandbox(t, err)
		var se *SetupError
		var me *mounts.Error
		if !errors.As(err, &se) || se.Step != "mount" || !errors.As(err, &me) {
			t.Fatalf("err %v, want a *SetupError at step mount holding a *mounts.Error", err)
		}
		if me.Target != "/gosbx-bad-tmpfs" || me.Source != "tmpfs" || !errors.Is(err, unix.EINVAL) {
			t.Errorf("*mounts.Error %+v (errno EINVAL: %v), want tmpfs on /gosbx-bad-tmpfs, EINVAL", me, errors.Is(err, unix.EINVAL))
		}
	})
}
