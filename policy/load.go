package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FileError is a policy file the parser refuses: it names the file, the line when it is
// known, the field and the reason.
type FileError struct {
	File   string // the file name, or "built-in NAME"
	Line   int    // 1-based; 0 when unknown
	Field  string // dotted path ("filesystem.read_only"); may be empty
	Reason string
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// maxPolicyFile bounds a policy file's size (bytes).
const maxPolicyFile = 4 << 20

// LoadFile reads and validates the policy file at path (YAML or JSON). Errors are
// *FileError.
func LoadFile(path string) (*Policy, error) {
	// Bounded, and never blocking on a FIFO: a policy file is read before the check that
	// it lies outside every writable tree (Build), where a sandbox could have replaced it.
	data, err := readRegularFollow(path, maxPolicyFile)
	if errors.Is(err, os.ErrNotExist) {
		err = &os.PathError{Op: "open", Path: path, Err: unix.ENOENT}
	}
	if err != nil {
		return nil, &FileError{File: path, Reason: err.Error()}
	}
	p, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	if c, err := filepath.EvalSymlinks(path); err == nil {
		if abs, err := filepath.Abs(c); err == nil {
			p.source = abs
		}
	}
	return p, nil
}

// Load returns the policy named by ref: a built-in profile name, else a file path.
// "" is the default profile, "agent".
func Load(ref string) (*Policy, error) {
	if ref == "" {
		ref = DefaultProfile
	}
	if p, ok := Builtin(ref); ok {
		return p, nil
	}
	if _, err := os.Stat(ref); err != nil && !strings.ContainsAny(ref, "/.") {
		return nil, &FileError{File: ref, Reason: fmt.Sprintf("no built-in profile %q (have %s) and no such file", ref, strings.Join(Profiles(), ", "))}
	}
	return LoadFile(ref)
}

// Parse reads a policy from YAML or JSON data (name is used in errors), checks every
// field and value, and resolves `extends`. Errors are *FileError.
func Parse(data []byte, name string) (*Policy, error) {
	raw, lines, err := decodeYAML(data)
	if err != nil {
		var le *lineError
		if errors.As(err, &le) {
			return nil, &FileError{File: name, Line: le.line, Reason: le.msg}
		}
		reason := cleanYAMLError(err.Error())
		line := yamlLine(err.Error())
		if yamlParserProblem(reason) {
			line++ // go.yaml.in/yaml/v3 reports a parser error's 0-based line
		}
		return nil, &FileError{File: name, Line: line, Reason: reason}
	}
	if raw == nil {
		raw = map[string]any{}
	}
	if _, ok := raw.(map[string]any); !ok {
		return nil, &FileError{File: name, Line: 1, Reason: "a policy is a mapping of sections (workspace, filesystem, environment, network, process)"}
	}
	lineOf := func(field string) int {
		for f := field; f != ""; {
			if l, ok := lines[f]; ok {
				return l
			}
			i := strings.LastIndexAny(f, ".[")
			if i < 0 {
				break
			}
			f = f[:i]
		}
		return 0
	}
	if field, reason := checkFields(raw, reflect.TypeOf(Policy{}), ""); field != "" {
		return nil, &FileError{File: name, Line: lineOf(field), Field: field, Reason: reason}
	}
	js, err := json.Marshal(raw)
	if err != nil {
		return nil, &FileError{File: name, Reason: err.Error()}
	}
	var p Policy
	if err := strictUnmarshal(js, &p); err != nil {
		return nil, &FileError{File: name, Reason: err.Error()}
	}
	if err := p.validate(); err != nil {
		var fe *FileError
		if errors.As(err, &fe) {
			fe.File = name
			fe.Line = lineOf(fe.Field)
		}
		return nil, err
	}
	if p.Extends != "" {
		base, ok := Builtin(p.Extends)
		if !ok {
			return nil, &FileError{File: name, Line: lineOf("extends"), Field: "extends",
				Reason: fmt.Sprintf("no built-in profile %q (have %s)", p.Extends, strings.Join(Profiles(), ", "))}
		}
		return merge(base, &p), nil
	}
	return &p, nil
}

func strictUnmarshal(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// checkFields walks decoded JSON against the struct type t and returns the dotted path of
// the first unknown field or wrongly typed value, with the reason.
func checkFields(v any, t reflect.Type, path string) (field, reason string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeOf(json.RawMessage{}) || v == nil {
		return "", ""
	}
	want := kindName(t)
	switch t.Kind() {
	case reflect.Struct:
		if s, ok := v.(string); ok && (t == reflect.TypeOf(Bind{}) || t == reflect.TypeOf(Tmpfs{})) {
			_ = s
			return "", ""
		}
		if t == reflect.TypeOf(Toolchains{}) {
			return checkToolchains(v, path)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return path, fmt.Sprintf("want %s, got %s", want, jsonKind(v))
		}
		fields := map[string]reflect.StructField{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("json"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			fields[tag] = f
			names = append(names, tag)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			f, ok := fields[k]
			if !ok {
				return join(path, k), fmt.Sprintf("unknown field%s (known: %s)", suggest(k, names), strings.Join(names, ", "))
			}
			if fld, why := checkFields(m[k], f.Type, join(path, k)); fld != "" {
				return fld, why
			}
		}
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			return path, fmt.Sprintf("want %s, got %s", want, jsonKind(v))
		}
		for i, e := range a {
			if fld, why := checkFields(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); fld != "" {
				return fld, why
			}
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return path, fmt.Sprintf("want %s, got %s", want, jsonKind(v))
		}
		for k, e := range m {
			if fld, why := checkFields(e, t.Elem(), join(path, k)); fld != "" {
				return fld, why
			}
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			return path, fmt.Sprintf("want a string, got %s (quote it)", jsonKind(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return path, fmt.Sprintf("want true or false, got %s", jsonKind(v))
		}
	case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Float64:
		f, ok := v.(float64)
		if !ok {
			return path, fmt.Sprintf("want a number, got %s", jsonKind(v))
		}
		if t.Kind() != reflect.Float64 && (f != math.Trunc(f) || f < 0 && t.Kind() == reflect.Uint64) {
			return path, fmt.Sprintf("want a whole number, got %v", f)
		}
	}
	return "", ""
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct:
		return "a mapping"
	case reflect.Slice:
		return "a list"
	case reflect.Map:
		return "a mapping of names to strings"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Float64:
		return "a number"
	}
	return "a string"
}

func jsonKind(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case float64:
		return "the number " + strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return "null"
}

// suggest offers the known name closest to a misspelt one.
func suggest(k string, names []string) string {
	norm := func(s string) string { return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s)) }
	for _, n := range names {
		if norm(n) == norm(k) {
			return fmt.Sprintf(" (did you mean %s?)", n)
		}
	}
	return ""
}

// yamlLine extracts "line N" from a YAML parser error.
func yamlLine(msg string) int {
	i := strings.Index(msg, "line ")
	if i < 0 {
		return 0
	}
	n := 0
	for _, c := range msg[i+5:] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func cleanYAMLError(msg string) string {
	msg = strings.TrimPrefix(msg, "yaml: ")
	if i := strings.Index(msg, "line "); i == 0 {
		if j := strings.Index(msg, ": "); j > 0 {
			msg = msg[j+2:]
		}
	}
	return msg
}

// yamlParserProblem reports whether msg is one of the parser's (not the scanner's)
// problems in go.yaml.in/yaml/v3 (parserc.go): the library reports those at the
// 0-based line of their mark ("line 3" for the fourth line, no line for the first),
// the scanner's at the 1-based one.
func yamlParserProblem(msg string) bool {
	switch msg {
	case "did not find expected <stream-start>", "did not find expected <document start>",
		"found undefined tag handle", "did not find expected node content",
		"did not find expected '-' indicator", "did not find expected key",
		"did not find expected ',' or ']'", "did not find expected ',' or '}'",
		"found duplicate %YAML directive", "found incompatible YAML document",
		"found duplicate %TAG directive":
		return true
	}
	return false
}

// policyLinks refuses a policy file with more than one hard link on the file system of
// a writable tree: another name of it may lie inside the tree, where the command could
// rewrite it (the name the caller gave is outside; checkStatusOutside does the same
// for --status-fd). "" (a built-in profile) is none.
func policyLinks(source string, trees []string) error {
	if source == "" {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Stat(source, &st); err != nil {
		return errorf("policy", source, err, "cannot stat the policy file")
	}
	if st.Nlink <= 1 {
		return nil
	}
	for _, t := range trees {
		var ts unix.Stat_t
		if unix.Stat(t, &ts) == nil && ts.Dev == st.Dev {
			return errorf("policy", source, nil, "the policy file has %d hard links on the file system of %s, which the sandbox can write: one may lie inside it, where the command could rewrite the policy; copy the file (cp, not ln) and use the copy", st.Nlink, t)
		}
	}
	return nil
}
