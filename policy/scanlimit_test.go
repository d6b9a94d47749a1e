package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --scan-limit (Options.ScanLimit) sets the search's limit over the policy's, up or
// down: a tree over the policy's limit compiles with a larger flag, a tree under it is
// refused with a smaller one, and the refusal names the flag and the policy field.
func TestScanLimitOption(t *testing.T) {
	ws := canonTempDir(t)
	for i := 0; i < 30; i++ {
		if err := os.Mkdir(filepath.Join(ws, fmt.Sprintf("d%02d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := Builtin("agent")
	p.Filesystem.ScanLimit = 20
	compile := func(limit int) error {
		_, err := Compile(Options{Policy: p, Workspace: ws, Args: []string{"true"}, ScanLimit: limit}, fakeHost(ws))
		return err
	}
	err := compile(0)
	if err == nil {
		t.Fatal("31 directories under the policy's scan_limit 20 compiled")
	}
	for _, want := range []string{"--scan-limit N (N over 20)", "filesystem: {scan_limit: N}"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if err := compile(100); err != nil {
		t.Errorf("--scan-limit 100 over the policy's 20: %v", err)
	}
	q, _ := Builtin("agent")
	if _, err := Compile(Options{Policy: q, Workspace: ws, Args: []string{"true"}, ScanLimit: 10}, fakeHost(ws)); err == nil || !strings.Contains(err.Error(), "more than 10 directories") {
		t.Errorf("--scan-limit 10 under the default: %v; want a refusal at 10", err)
	}
	if _, err := Compile(Options{Policy: q, Workspace: ws, Args: []string{"true"}, ScanLimit: -1}, fakeHost(ws)); err == nil || !strings.Contains(err.Error(), "scan-limit") {
		t.Errorf("--scan-limit -1: %v; want refused", err)
	}
}
