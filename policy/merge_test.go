package policy

import (
	"reflect"
	"strings"
	"testing"
)

// Every field a child policy can set survives merge over an empty base: a field merge
// forgets is a policy setting silently dropped by `extends` (an attack review found
// network.allow, deny, allow_extra_hosts, publish and host_ports dropped, so a flag the
// policy banned widened it). The walk sets each exported field of the child, one at a
// time, to a non-zero value and checks the merged policy holds it.
func TestMergeKeepsEveryField(t *testing.T) {
	var walk func(path string, typ reflect.Type, get func(p *Policy) reflect.Value)
	walk = func(path string, typ reflect.Type, get func(p *Policy) reflect.Value) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if !f.IsExported() || f.Name == "Extends" {
				continue // Extends is consumed by the merge itself
			}
			name := path + "." + f.Name
			fget := func(p *Policy) reflect.Value { return get(p).Field(i) }
			if f.Type.Kind() == reflect.Struct {
				walk(name, f.Type, fget)
				continue
			}
			child := &Policy{}
			v := nonZero(t, name, f.Type)
			fget(child).Set(v)
			merged := merge(&Policy{}, child)
			if got := fget(merged); !reflect.DeepEqual(got.Interface(), v.Interface()) {
				t.Errorf("%s set by the child is %#v after merge, want %#v", name, got.Interface(), v.Interface())
			}
		}
	}
	walk("Policy", reflect.TypeOf(Policy{}), func(p *Policy) reflect.Value { return reflect.ValueOf(p).Elem() })
}

// nonZero makes a value of typ that is not its zero value, with every exported field
// of a pointed-to struct set as well (a nested field dropped shows too).
func nonZero(t *testing.T, name string, typ reflect.Type) reflect.Value {
	v := reflect.New(typ).Elem()
	switch typ.Kind() {
	case reflect.String:
		v.SetString("x-" + strings.ToLower(name[strings.LastIndex(name, ".")+1:]))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Slice:
		v = reflect.MakeSlice(typ, 1, 1)
		v.Index(0).Set(nonZero(t, name+"[]", typ.Elem()))
	case reflect.Map:
		v = reflect.MakeMap(typ)
		v.SetMapIndex(nonZero(t, name+"{k}", typ.Key()), nonZero(t, name+"{v}", typ.Elem()))
	case reflect.Pointer:
		v = reflect.New(typ.Elem())
		v.Elem().Set(nonZero(t, name, typ.Elem()))
	case reflect.Struct:
		for i := 0; i < typ.NumField(); i++ {
			if typ.Field(i).IsExported() {
				v.Field(i).Set(nonZero(t, name+"."+typ.Field(i).Name, typ.Field(i).Type))
			}
		}
	default:
		t.Fatalf("%s: no non-zero value for kind %s", name, typ.Kind())
	}
	return v
}
