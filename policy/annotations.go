package policy

import (
	"strconv"
	"unicode/utf8"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/mounts"
)

// The annotations' JSON, written here byte for byte as encoding/json.Marshal writes it:
// on first use Marshal builds an encoder for each struct type by reflection, a cost of
// every launch (annotations_test.go compares the two).

// appendJSONString is encoding/json's appendString with HTML escaping, as Marshal
// writes a string.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= ' ' && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendJSONStrings writes a []string as Marshal does (nil: null).
func appendJSONStrings(dst []byte, list []string) []byte {
	if list == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s)
	}
	return append(dst, ']')
}

// jsonStrings is json.Marshal(list).
func jsonStrings(list []string) string { return string(appendJSONStrings(nil, list)) }

// jsonSymlinks is json.Marshal(links).
func jsonSymlinks(links []mounts.Symlink) string {
	// Fails to compile when mounts.Symlink gains or loses a field: write it here too.
	_ = mounts.Symlink(struct{ Path, Target string }{})
	if links == nil {
		return "null"
	}
	b := []byte{'['}
	for i, l := range links {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"path":`...)
		b = appendJSONString(b, l.Path)
		b = append(b, `,"target":`...)
		b = appendJSONString(b, l.Target)
		b = append(b, '}')
	}
	return string(append(b, ']'))
}

// jsonIDRange is json.Marshal(r).
func jsonIDRange(r IDRange) string {
	_ = IDRange(struct{ Base, Count uint32 }{})
	b := append([]byte(`{"base":`), strconv.FormatUint(uint64(r.Base), 10)...)
	b = append(b, `,"count":`...)
	b = strconv.AppendUint(b, uint64(r.Count), 10)
	return string(append(b, '}'))
}

// jsonLimitsInfo is json.Marshal(info) (every field omitempty).
func jsonLimitsInfo(info cgroup.LimitsInfo) string {
	_ = cgroup.LimitsInfo(struct {
		Required     []string
		BestEffort   bool
		CgroupParent string
	}{})
	b := []byte{'{'}
	if len(info.Required) > 0 {
		b = append(b, `"required":`...)
		b = appendJSONStrings(b, info.Required)
	}
	if info.BestEffort {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, `"best_effort":true`...)
	}
	if info.CgroupParent != "" {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, `"cgroup_parent":`...)
		b = appendJSONString(b, info.CgroupParent)
	}
	return string(append(b, '}'))
}
