// Package rawjson carries strings that are not valid UTF-8 through encoding/json
// unchanged. encoding/json writes such a string with each bad byte replaced by U+FFFD
// (its Marshal documentation), so a host path or name in Latin-1 (the kernel and git
// take any byte but NUL and a few) would come back as another path. Here such a string
// becomes a NUL, a marker no path or file name can hold (the kernel ends names at NUL),
// then its bytes in standard base64 (RFC 4648); a valid UTF-8 string is left as it is,
// so data of only UTF-8 strings encodes byte for byte as before.
package rawjson

import (
	"encoding/base64"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Mark starts an escaped string.
const Mark = "\x00"

// Escape returns s as JSON can carry it: s when valid UTF-8 and not starting with Mark,
// else Mark and base64 of its bytes.
func Escape(s string) string {
	if utf8.ValidString(s) && !strings.HasPrefix(s, Mark) {
		return s
	}
	return Mark + base64.StdEncoding.EncodeToString([]byte(s))
}

// Unescape undoes Escape; ok is false for a marked string whose base64 does not decode.
func Unescape(s string) (string, bool) {
	b64, marked := strings.CutPrefix(s, Mark)
	if !marked {
		return s, true
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	return string(b), err == nil
}

// Escaped returns a deep copy of v (a pointer to a struct, typically) with every string
// reachable through exported fields, pointers, slices, arrays and maps escaped, for
// json.Marshal. Fields tagged `json:"-"` and unexported fields are left out of the
// copy (zero): JSON carries neither. v itself is not changed.
func Escaped[T any](v T) T {
	out := reflect.New(reflect.TypeOf(&v).Elem()).Elem()
	copyEscaped(out, reflect.ValueOf(&v).Elem())
	return out.Interface().(T)
}

func copyEscaped(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.String:
		dst.SetString(Escape(src.String()))
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		copyEscaped(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Struct:
		t := src.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			copyEscaped(dst.Field(i), src.Field(i))
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		if plain(src.Type().Elem()) {
			reflect.Copy(s, src) // bytes, numbers: one copy, not one reflect call each
			dst.Set(s)
			return
		}
		for i := 0; i < src.Len(); i++ {
			copyEscaped(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Array:
		for i := 0; i < src.Len(); i++ {
			copyEscaped(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			k := reflect.New(src.Type().Key()).Elem()
			copyEscaped(k, it.Key())
			e := reflect.New(src.Type().Elem()).Elem()
			copyEscaped(e, it.Value())
			m.SetMapIndex(k, e)
		}
		dst.Set(m)
	default:
		dst.Set(src)
	}
}

// plain reports whether t holds no string: a bool or a number.
func plain(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// Unescaped undoes Escaped in place in what ptr points to (as json.Unmarshal left it).
// ok is false when a marked string did not decode (it is then left as it was).
func Unescaped(ptr any) (ok bool) {
	ok = true
	unescapeIn(reflect.ValueOf(ptr), &ok)
	return ok
}

func unescapeIn(v reflect.Value, ok *bool) {
	switch v.Kind() {
	case reflect.String:
		if s, good := Unescape(v.String()); good {
			if v.CanSet() {
				v.SetString(s)
			}
		} else {
			*ok = false
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			unescapeIn(v.Elem(), ok)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
				unescapeIn(v.Field(i), ok)
			}
		}
	case reflect.Slice, reflect.Array:
		if plain(v.Type().Elem()) {
			return
		}
		for i := 0; i < v.Len(); i++ {
			unescapeIn(v.Index(i), ok)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		it := v.MapRange()
		for it.Next() {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(it.Key())
			unescapeIn(k, ok)
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			unescapeIn(e, ok)
			m.SetMapIndex(k, e)
		}
		if v.CanSet() {
			v.Set(m)
		}
	}
}
