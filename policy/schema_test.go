package policy_test

import (
	"bytes"
	"testing"

	"github.com/gosbx/gosbx/internal/schema"
	"github.com/gosbx/gosbx/policy"
)

// The embedded schema is the one the types generate: run `go generate ./policy` after
// changing policy.go.
func TestSchemaCurrent(t *testing.T) {
	want, err := schema.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(policy.Schema(), want) {
		t.Fatal("policy/schema.json is stale: run `go generate ./policy`")
	}
}
