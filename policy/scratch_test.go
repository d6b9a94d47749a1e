package policy

import (
	"errors"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"slices"
	"strings"
	"testing"
)

// sizeOpt is the size= option of the tmpfs at dest, "" when there is none.
func sizeOpt(t *testing.T, o Options, h Host, dest string) string {
	t.Helper()
	s := mustCompile(t, o, h)
	_, m := findMount(s, dest)
	if m == nil || m.Type != "tmpfs" {
		t.Fatalf("no tmpfs at %s: %+v", dest, s.Mounts)
	}
	for _, op := range m.Options {
		if v, ok := strings.CutPrefix(op, "size="); ok {
			return v
		}
	}
	return ""
}

// Every scratch tmpfs (/tmp, /var/tmp, /run, HOME, /dev/shm) has a size: by default an
// equal share of half the host's memory, at most the memory limit; --tmpfs and a
// policy's size set it (issue 15, item 6: five tmpfs of 12 GB each on a 23 GB host).
func TestScratchSizes(t *testing.T) {
	ws := canonTempDir(t)
	h := fakeHost(ws)
	h.MemTotal = 10 << 30
	home := sandboxHome(newResolver(), h.Home)
	share := "1073741824" // 10 GiB / 2 / 5
	for _, d := range []string{"/tmp", "/var/tmp", "/run", home, "/dev/shm"} {
		if got := sizeOpt(t, Options{Workspace: ws}, h, d); got != share {
			t.Errorf("%s: size=%q, want %s (a fifth of half the host's memory)", d, got, share)
		}
	}
	limited := Options{Workspace: ws, Resources: Resources{Memory: "256M"}}
	if got := sizeOpt(t, limited, h, "/tmp"); got != "268435456" {
		t.Errorf("/tmp under --memory 256M: size=%q, want the limit", got)
	}
	if got := sizeOpt(t, Options{Workspace: ws, Resources: Resources{Memory: "8G"}}, h, "/tmp"); got != share {
		t.Errorf("/tmp under --memory 8G: size=%q, want the host share %s", got, share)
	}
	flags := Options{Workspace: ws, Tmpfs: []string{"/tmp:size=8M", "/dev/shm:size=16M", "/scratch", "/big:size=1G"}}
	quarter := "1342177280" // /var/tmp, /run, HOME, /scratch share half of 10 GiB
	for d, want := range map[string]string{"/tmp": "8388608", "/dev/shm": "16777216", "/var/tmp": quarter, "/scratch": quarter, "/big": "1073741824"} {
		if got := sizeOpt(t, flags, h, d); got != want {
			t.Errorf("--tmpfs: %s size=%q, want %s", d, got, want)
		}
	}
	s := mustCompile(t, flags, h)
	if n := len(slices.DeleteFunc(slices.Clone(s.Mounts), func(m specs.Mount) bool { return m.Destination != "/dev/shm" })); n != 1 {
		t.Errorf("%d mounts at /dev/shm, want 1 (its size set, not a second tmpfs)", n)
	}
	h.MemTotal = 0 // unknown: still bounded
	if got := sizeOpt(t, Options{Workspace: ws}, h, "/tmp"); got == "" {
		t.Error("no size when the host's memory is unknown")
	}
	for _, bad := range []string{"/tmp:size=", "/tmp:mode=0700", "/tmp:size=lots", "/tmp:size=0", ":size=1M"} {
		_, err := Compile(Options{Workspace: ws, Args: []string{"true"}, Tmpfs: []string{bad}}, h)
		var pe *Error
		if !errors.As(err, &pe) || pe.Field != "tmpfs" {
			t.Errorf("--tmpfs %s: %v, want a tmpfs error", bad, err)
		}
	}
	if _, err := Compile(Options{Workspace: ws, Args: []string{"true"}, Tmpfs: []string{"/dev/pts"}}, h); err == nil {
		t.Error("--tmpfs /dev/pts accepted")
	}
}
