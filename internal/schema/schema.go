// Package schema generates the JSON Schema of gosbx policy files from the policy
// package's types and doc comments, with github.com/invopop/jsonschema. Only the
// generator (internal/schemagen) and tests import it; gosbx embeds the result.
package schema

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"

	"github.com/invopop/jsonschema"
	orderedmap "github.com/pb33f/ordered-map/v2"

	"github.com/gosbx/gosbx/policy"
)

// ID is the schema's $id.
const ID = "https://github.com/gosbx/gosbx/policy/schema.json"

// Generate returns the schema, indented, with a final newline.
func Generate() ([]byte, error) {
	r := &jsonschema.Reflector{
		DoNotReference:             true,
		RequiredFromJSONSchemaTags: true,
		Mapper:                     mapper,
	}
	// The comments are keyed by the walked directory: walk "policy" from the module root.
	_, self, _, _ := runtime.Caller(0)
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if err := os.Chdir(filepath.Join(filepath.Dir(self), "..", "..")); err != nil {
		return nil, err
	}
	err = r.AddGoComments("github.com/gosbx/gosbx", "policy")
	os.Chdir(wd)
	if err != nil {
		return nil, err
	}
	s := r.Reflect(&policy.Policy{})
	s.ID = ID
	s.Title = "gosbx policy"
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// mapper describes the types that accept two forms, and the free-form sections.
func mapper(t reflect.Type) *jsonschema.Schema {
	switch t {
	case reflect.TypeOf(policy.Bind{}):
		return &jsonschema.Schema{
			Description: "A host path bound at the same path: a string, or an object to mark it optional (a missing optional source is skipped) " +
				"or to bind it at another path inside (dest, absolute, outside every other bind; the source is resolved on the host).",
			OneOf: []*jsonschema.Schema{
				{Type: "string"},
				{Type: "object", AdditionalProperties: jsonschema.FalseSchema, Required: []string{"path"},
					Properties: props("path", &jsonschema.Schema{Type: "string"}, "dest", &jsonschema.Schema{Type: "string", Pattern: "^/"},
						"optional", &jsonschema.Schema{Type: "boolean"})},
			},
		}
	case reflect.TypeOf(policy.Tmpfs{}):
		return &jsonschema.Schema{
			Description: "A private tmpfs: a path, or an object with an octal mode (default 0755) and a size " +
				"(default: an equal share of half the host's memory among the scratch tmpfs of no size given, at most the memory limit). " +
				"/dev/shm sets the size and mode of the sandbox's own.",
			OneOf: []*jsonschema.Schema{
				{Type: "string"},
				{Type: "object", AdditionalProperties: jsonschema.FalseSchema, Required: []string{"path"},
					Properties: props("path", &jsonschema.Schema{Type: "string"}, "mode", &jsonschema.Schema{Type: "string", Pattern: "^[0-7]{1,4}$"},
						"size", &jsonschema.Schema{Type: "string", Pattern: "^[0-9]+(\\.[0-9]+)* ?[kKmMgGtTpP]?[iI]?[bB]?$",
							Description: "512M, 2G, or bytes (binary units)"})},
			},
		}
	case reflect.TypeOf(policy.Toolchains{}):
		return &jsonschema.Schema{
			Description: "The caller's own toolchains, bound read-only: auto (the roots of the caller's PATH entries and of the workspace venvs' interpreters, " +
				"pyenv-style shims resolved to their version), none, or a list of roots to bind (their bin/ first on PATH; auto may be in the list).",
			OneOf: []*jsonschema.Schema{
				{Type: "string", Enum: []any{"auto", "none"}},
				{Type: "array", Items: &jsonschema.Schema{Type: "string", MinLength: ptr(uint64(1))}, MinItems: ptr(uint64(1))},
			},
		}
	case reflect.TypeOf(json.RawMessage{}):
		return &jsonschema.Schema{Description: "Filled by its own layer; any value is kept as it is."}
	}
	return nil
}

func props(kv ...any) *orderedmap.OrderedMap[string, *jsonschema.Schema] {
	p := orderedmap.New[string, *jsonschema.Schema]()
	for i := 0; i < len(kv); i += 2 {
		p.Set(kv[i].(string), kv[i+1].(*jsonschema.Schema))
	}
	return p
}

func ptr[T any](v T) *T { return &v }
