// Command schemagen writes policy/schema.json, the JSON Schema of policy files, from
// the policy package's types and doc comments (github.com/invopop/jsonschema). Run by
// `go generate ./policy`; a test checks that the file is current. It is not linked into
// gosbx, so the binary does not carry the reflection library.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/gosbx/gosbx/internal/schema"
)

func main() {
	out := "schema.json"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	b, err := schema.Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
