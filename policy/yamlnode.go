package policy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// decodeYAML reads YAML 1.2 (and so JSON) into plain values (map[string]any, []any,
// string, float64, bool, nil) as encoding/json would decode them, and records the line
// of every key by its dotted path ("filesystem.read_only[2]"). YAML 1.2, unlike the 1.1
// of yaml.v2 parsers, reads keys such as N, Y, ON as the strings they are (variable
// names), and the node tree gives each error its exact line. Duplicate keys are errors.
// Only the first document of a stream is read. Errors are *lineError.
//
// The parser is github.com/goccy/go-yaml's: its package inits cost 13 µs and 4 KB at
// every start of gosbx, go.yaml.in/yaml/v3's 100 µs and 25 KB (two regexps compiled,
// tables), and v4's more (docs/decisions.md, "Speed, eighth attempt: package inits").
func decodeYAML(data []byte) (v any, lines map[string]int, err error) {
	// The parser is not ours: a panic on some input is a refused policy, not a crash.
	defer func() {
		if r := recover(); r != nil {
			v, lines, err = nil, nil, &lineError{1, fmt.Sprintf("the YAML parser failed: %v", r)}
		}
	}()
	// Duplicate keys are found below, with the key's path in the message.
	f, err := parser.ParseBytes(data, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return nil, nil, parseError(err)
	}
	lines = map[string]int{}
	if len(f.Docs) == 0 || f.Docs[0] == nil || f.Docs[0].Body == nil {
		return map[string]any{}, lines, nil
	}
	d := &decoder{lines: lines, aliasBudget: maxAliasNodes, anchors: map[string]ast.Node{}}
	v, err = d.value(f.Docs[0].Body, "", 0)
	return v, lines, err
}

// parseError is the parser's error as a *lineError: its message without the source
// excerpt the library adds, at the line of the token it names.
func parseError(err error) error {
	var ye interface {
		GetMessage() string
		GetToken() *token.Token
	}
	if errors.As(err, &ye) {
		line := 1
		if tk := ye.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line > 0 {
			line = tk.Position.Line
		}
		return &lineError{line, ye.GetMessage()}
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return &lineError{1, msg}
}

// maxAliasNodes bounds the nodes a document reaches through aliases, counted after
// expansion: 9 lines of nested aliases ("billion laughs") expand to 10^9 values and
// grew a policy check past 500 MB. A policy that repeats a list with an alias stays far
// below; a written-out policy is bounded by its own size.
const maxAliasNodes = 10000

// decoder walks one document's node tree.
type decoder struct {
	lines       map[string]int
	anchors     map[string]ast.Node // by name, each once its value has been read
	aliasBudget int                 // nodes still allowed through aliases
	aliasLine   int                 // the line of the outermost alias being expanded, 0 outside one
}

// lineError is a YAML structure error at a line.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// lineOf is the 1-based line of n's token, 1 when the parser gave none.
func lineOf(n ast.Node) int {
	if tk := n.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line > 0 {
		return tk.Position.Line
	}
	return 1
}

func (d *decoder) value(n ast.Node, path string, depth int) (any, error) {
	if depth > 64 {
		return nil, &lineError{lineOf(n), "nested too deeply"}
	}
	if d.aliasLine != 0 {
		if d.aliasBudget--; d.aliasBudget < 0 {
			return nil, &lineError{d.aliasLine, fmt.Sprintf("aliases expand to more than %d values: "+
				"write the values out, or repeat fewer of them through aliases", maxAliasNodes)}
		}
	}
	switch n := n.(type) {
	case *ast.AnchorNode:
		v, err := d.value(n.Value, path, depth+1)
		if err != nil {
			return nil, err
		}
		// Recorded after its value: an alias inside it names no anchor yet.
		d.anchors[n.Name.GetToken().Value] = n.Value
		return v, nil
	case *ast.AliasNode:
		name := n.Value.GetToken().Value
		target, ok := d.anchors[name]
		if !ok {
			return nil, &lineError{lineOf(n), fmt.Sprintf("unknown anchor %q referenced", name)}
		}
		if d.aliasLine != 0 {
			return d.value(target, path, depth+1)
		}
		d.aliasLine = lineOf(n)
		v, err := d.value(target, path, depth+1)
		d.aliasLine = 0
		return v, err
	case *ast.TagNode:
		return d.tagged(n, path, depth)
	case *ast.MappingValueNode: // a mapping of one key, as the parser may give it
		return d.mapping([]*ast.MappingValueNode{n}, path, depth)
	case *ast.MappingNode:
		return d.mapping(n.Values, path, depth)
	case *ast.SequenceNode:
		a := make([]any, 0, len(n.Values))
		for i, c := range n.Values {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.lines[p] = lineOf(c)
			val, err := d.value(c, p, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, val)
		}
		return a, nil
	case *ast.NullNode:
		return nil, nil
	case *ast.BoolNode:
		return n.Value, nil
	case *ast.IntegerNode:
		switch i := n.Value.(type) {
		case int64:
			return float64(i), nil
		case uint64:
			return float64(i), nil
		}
		return n.GetToken().Value, nil
	case *ast.FloatNode:
		return n.Value, nil
	case *ast.InfinityNode:
		return n.Value, nil
	case *ast.NanNode:
		return math.NaN(), nil
	case *ast.StringNode:
		return n.Value, nil
	case *ast.LiteralNode:
		if n.Value == nil {
			return "", nil
		}
		return n.Value.Value, nil
	case *ast.MergeKeyNode:
		return nil, &lineError{lineOf(n), "merge keys (<<) are not supported"}
	}
	return nil, &lineError{lineOf(n), "unsupported YAML node"}
}

// mapping reads the pairs of one mapping; keys are plain scalars, each once.
func (d *decoder) mapping(pairs []*ast.MappingValueNode, path string, depth int) (any, error) {
	m := make(map[string]any, len(pairs))
	for _, kv := range pairs {
		k := ast.Node(kv.Key)
		if t, ok := k.(*ast.TagNode); ok && t.Value != nil && t.Start != nil && t.Start.Value == "!!str" {
			k = t.Value
		}
		var key string
		switch k := k.(type) {
		case *ast.MergeKeyNode:
			return nil, &lineError{lineOf(k), "merge keys (<<) are not supported"}
		case *ast.StringNode:
			key = k.Value
		case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NullNode, *ast.InfinityNode, *ast.NanNode:
			key = k.GetToken().Value
		default:
			return nil, &lineError{lineOf(kv.Key), "a key must be a plain name"}
		}
		p := join(path, key)
		if _, dup := m[key]; dup {
			return nil, &lineError{lineOf(k), fmt.Sprintf("%s: key %q is already set above", p, key)}
		}
		d.lines[p] = lineOf(k)
		val, err := d.value(kv.Value, p, depth+1)
		if err != nil {
			return nil, err
		}
		m[key] = val
	}
	return m, nil
}

// tagged reads a value with an explicit standard tag (!!str, !!int, ...); other tags
// are refused.
func (d *decoder) tagged(n *ast.TagNode, path string, depth int) (any, error) {
	tag := ""
	if n.Start != nil {
		tag = n.Start.Value
	}
	if n.Value == nil {
		if tag == "!!str" {
			return "", nil
		}
		return nil, nil
	}
	switch tag {
	case "!!str":
		switch v := n.Value.(type) {
		case *ast.StringNode:
			return v.Value, nil
		case *ast.LiteralNode:
			return d.value(v, path, depth+1)
		case ast.ScalarNode:
			return v.GetToken().Value, nil
		}
		return nil, &lineError{lineOf(n), "!!str tags a value that is not a scalar"}
	case "!!float", "!!int":
		v, err := d.value(n.Value, path, depth+1)
		if s, ok := v.(string); ok && err == nil {
			f, perr := strconv.ParseFloat(s, 64)
			if perr != nil {
				return nil, &lineError{lineOf(n), fmt.Sprintf("cannot read %q as a number", s)}
			}
			return f, nil
		}
		return v, err
	case "!!bool", "!!null", "!!map", "!!seq", "!!binary", "!!timestamp":
		return d.value(n.Value, path, depth+1)
	}
	return nil, &lineError{lineOf(n), fmt.Sprintf("tag %s is not supported", tag)}
}
