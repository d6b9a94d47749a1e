package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gosbx/gosbx/policy"
)

// TestStartDataFilter: the start data carries the filter as its bytes and the config
// without the filter's source; the supervisor's side gets the same program back, and
// the caller's config is left as it was.
func TestStartDataFilter(t *testing.T) {
	h, err := policy.CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := policy.Compile(policy.Options{Workspace: t.TempDir(), Args: []string{"/bin/sh"}}, h)
	if err != nil {
		t.Fatal(err)
	}
	want := append(cfg.Linux.Filter[:0:0], cfg.Linux.Filter...)
	source := cfg.Linux.Seccomp
	sd := &startData{Name: "s", Config: cfg}
	b, err := json.Marshal(withFilterBytes(sd))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Linux.Seccomp != source || !reflect.DeepEqual(cfg.Linux.Filter, want) || sd.Filter != nil {
		t.Fatal("the caller's start data changed")
	}
	if bytes.Contains(b, []byte(`"seccomp"`)) || bytes.Contains(b, []byte(`"filter"`)) {
		t.Fatalf("the filter's source or program sent in the config: %.300s", b)
	}
	got, err := readStartData(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Config.Linux.Filter, want) || got.Filter != nil {
		t.Fatalf("the supervisor's filter: %d instructions, want the config's %d", len(got.Config.Linux.Filter), len(want))
	}
	if err := got.Config.Validate(); err != nil {
		t.Fatalf("the supervisor's config: %v", err)
	}
	// a program of a bad length is refused, not loaded cut short
	if _, err := readStartData(bytes.NewReader([]byte(`{"Config":{"linux":{}},"Filter":"AAAA"}`))); err == nil {
		t.Fatal("a 3-byte filter was accepted")
	}
}
