package policy

import (
	"bytes"
	"encoding/json"
	"fmt"

	yaml "go.yaml.in/yaml/v3"
)

// MarshalYAML prints v as YAML by its JSON form (the json field names, omitempty,
// the short forms of Bind and Tmpfs), keys sorted, indented by two spaces: what
// `gosbx policy show` prints and Parse reads back. It uses the one YAML library the
// parser uses (go.yaml.in/yaml/v3). Errors are from encoding/json or the YAML emitter
// (a string it cannot write, such as one with a C1 control character).
func MarshalYAML(v any) ([]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("marshal as JSON: %w", err)
	}
	// JSON is YAML: decoding it with the YAML library keeps integers exact (int,
	// uint64), where encoding/json would make them float64.
	var plain any
	if err := yaml.Unmarshal(js, &plain); err != nil {
		return nil, fmt.Errorf("read JSON as YAML: %w", err)
	}
	if plain == nil {
		return []byte("null\n"), nil
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(plain); err != nil {
		return nil, fmt.Errorf("marshal as YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("marshal as YAML: %w", err)
	}
	return b.Bytes(), nil
}
