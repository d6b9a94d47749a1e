package policy

import (
	"strings"
	"testing"
)

// A root caller in /root with no workspace given: refused as its home (the whole home
// writable), not as "a system directory", and the message says the current directory
// was taken as the workspace (trial finding 8). Named with --workspace, the same rule
// without the note on the current directory.
func TestRootHomeAsCwd(t *testing.T) {
	h := Host{UID: 0, GID: 0, Root: true, Home: "/root", Homes: []string{"/root"}, Cwd: "/root", Environ: []string{"PATH=/usr/bin:/bin"}}
	_, err := Compile(Options{Args: []string{"true"}}, h)
	if err == nil {
		t.Fatal("a root caller's home as the workspace was accepted")
	}
	for _, want := range []string{"refusing /root read-write: it is your home directory", "the workspace is the current directory when neither --workspace nor the policy names one: cd into a project directory, or pass --workspace DIR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if n := strings.Count(err.Error(), "the workspace is the current directory"); n != 1 {
		t.Errorf("%q says %d times that the workspace is the current directory; want once (trial finding)", err, n)
	}
	if strings.Contains(err.Error(), "system directory") {
		t.Errorf("%q calls the caller's home a system directory", err)
	}
	_, err = Compile(Options{Args: []string{"true"}, Workspace: "/root"}, h)
	if err == nil || !strings.Contains(err.Error(), "is your home directory") || strings.Contains(err.Error(), "current directory") {
		t.Errorf("--workspace /root: %v", err)
	}
	// another caller naming /root: a system directory still
	o := Host{UID: 1000, GID: 1000, Home: "/home/u", Homes: []string{"/home/u"}, Cwd: "/", Environ: []string{"PATH=/usr/bin:/bin"}}
	if _, err := Compile(Options{Args: []string{"true"}, Workspace: "/root"}, o); err == nil || !strings.Contains(err.Error(), "system directory") {
		t.Errorf("--workspace /root by uid 1000: %v", err)
	}
}
