package policy

import (
	"fmt"
	"strconv"

	yaml "go.yaml.in/yaml/v3"
)

// decodeYAML reads YAML 1.2 (and so JSON) into plain values (map[string]any, []any,
// string, float64, bool, nil) as encoding/json would decode them, and records the line
// of every key by its dotted path ("filesystem.read_only[2]"). YAML 1.2, unlike the 1.1
// of yaml.v2 parsers, reads keys such as N, Y, ON as the strings they are (variable
// names), and the node tree gives each error its exact line. Duplicate keys are errors.
func decodeYAML(data []byte) (any, map[string]int, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, err
	}
	lines := map[string]int{}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return map[string]any{}, lines, nil
	}
	d := &decoder{lines: lines, aliasBudget: maxAliasNodes}
	v, err := d.value(doc.Content[0], "", 0)
	return v, lines, err
}

// maxAliasNodes bounds the nodes a document reaches through aliases, counted after
// expansion: 9 lines of nested aliases ("billion laughs") expand to 10^9 values and
// grew a policy check past 500 MB. A policy that repeats a list with an alias stays far
// below; a written-out policy is bounded by its own size.
const maxAliasNodes = 10000

// decoder walks one document's node tree.
type decoder struct {
	lines       map[string]int
	aliasBudget int // nodes still allowed through aliases
	aliasLine   int // the line of the outermost alias being expanded, 0 outside one
}

// lineError is a YAML structure error at a line.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func (d *decoder) value(n *yaml.Node, path string, depth int) (any, error) {
	if depth > 64 {
		return nil, &lineError{n.Line, "nested too deeply"}
	}
	if d.aliasLine != 0 {
		if d.aliasBudget--; d.aliasBudget < 0 {
			return nil, &lineError{d.aliasLine, fmt.Sprintf("aliases expand to more than %d values: "+
				"write the values out, or repeat fewer of them through aliases", maxAliasNodes)}
		}
	}
	switch n.Kind {
	case yaml.AliasNode:
		if d.aliasLine != 0 {
			return d.value(n.Alias, path, depth+1)
		}
		d.aliasLine = n.Line
		v, err := d.value(n.Alias, path, depth+1)
		d.aliasLine = 0
		return v, err
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return d.value(n.Content[0], path, depth+1)
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, &lineError{k.Line, "a key must be a plain name"}
			}
			if k.Tag == "!!merge" {
				return nil, &lineError{k.Line, "merge keys (<<) are not supported"}
			}
			p := join(path, k.Value)
			if _, dup := m[k.Value]; dup {
				return nil, &lineError{k.Line, fmt.Sprintf("%s: key %q is already set above", p, k.Value)}
			}
			d.lines[p] = k.Line
			val, err := d.value(v, p, depth+1)
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		a := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.lines[p] = c.Line
			val, err := d.value(c, p, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, val)
		}
		return a, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, &lineError{n.Line, err.Error()}
			}
			return b, nil
		case "!!int", "!!float":
			f, err := strconv.ParseFloat(n.Value, 64)
			if err != nil {
				var x float64
				if n.Decode(&x) != nil {
					return n.Value, nil
				}
				f = x
			}
			return f, nil
		}
		return n.Value, nil
	}
	return nil, &lineError{n.Line, "unsupported YAML node"}
}
