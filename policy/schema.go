package policy

import _ "embed"

//go:generate go run ../internal/schemagen schema.json

//go:embed schema.json
var schema []byte

// Schema returns the JSON Schema (draft 2020-12) of policy files, generated from this
// package's types (internal/schema).
func Schema() []byte { return schema }
