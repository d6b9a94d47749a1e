package mounts

import (
	"encoding/json"
	"reflect"
	"testing"
)

var annotationSeeds = []string{
	`[]`, ` [ ] `, `[{}]`, `null`, ``, `[`, `[{"path":"/a"}]`, `[{"path":"/a","target":"b"}]`,
	`[{"path":"/dev/fd","target":"/proc/self/fd"},{"path":"/bin","target":"usr/bin"}]`,
	"[\n {\"path\": \"/a\" , \"target\" : \"b\" } ,\t{\"target\":\"c\",\"path\":\"/d\"}\r]",
	`[{"Path":"/a","target":"b"}]`, `[{"path":"/a","path":"/b"}]`, `[{"path":"/a","other":1}]`,
	`[{"path":"/a\u00e9","target":"b"}]`, `[{"path":"/a\"b","target":"c"}]`, `[{"path":"/é","target":"ü"}]`,
	"[{\"path\":\"/\xff\",\"target\":\"b\"}]", "[{\"path\":\"/\x01\",\"target\":\"b\"}]",
	`[{"path":"/a","target":"b"},]`, `[{"path":"/a","target":"b"}] x`, `[{"path":null}]`, `[{"path":1}]`,
	`["a","b"]`, `["/proc/bus", "/proc/sys"]`, `[""]`, `["a",]`, `["a" "b"]`, `[1]`, `["\u2028"]`, "[\"\u2028\"]",
	`{"path":"/a"}`, `[{"path":"/a","target":"b"}`, `[{"path":"/a" "target":"b"}]`, `[{,}]`, `[{"path"}]`,
}

// checkAnnotation fails t when a fast path accepts raw and decodes it otherwise than
// encoding/json does.
func checkAnnotation(t *testing.T, raw string) {
	if got, ok := fastSymlinks(raw); ok {
		var want []Symlink
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("fastSymlinks accepted %q, which encoding/json refuses: %v", raw, err)
		}
		if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("fastSymlinks(%q) = %#v; encoding/json: %#v", raw, got, want)
		}
	}
	if got, ok := fastStrings(raw); ok {
		var want []string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("fastStrings accepted %q, which encoding/json refuses: %v", raw, err)
		}
		if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("fastStrings(%q) = %#v; encoding/json: %#v", raw, got, want)
		}
	}
}

func TestAnnotationFastPath(t *testing.T) {
	for _, raw := range annotationSeeds {
		checkAnnotation(t, raw)
	}
	// What policy writes takes the fast path.
	for _, raw := range []string{
		`[{"path":"/dev/fd","target":"/proc/self/fd"},{"path":"/bin","target":"usr/bin"}]`, `[]`,
		`[{"path":"/home/josé/ws","target":"/var/tmp/wş"}]`,
	} {
		if _, ok := fastSymlinks(raw); !ok {
			t.Errorf("fastSymlinks(%q) fell back to encoding/json", raw)
		}
	}
	if _, ok := fastStrings(`["/proc/bus","/proc/fs"]`); !ok {
		t.Error("fastStrings fell back to encoding/json")
	}
	// The rest is encoding/json's, errors included.
	if links, err := decodeSymlinks(`[{"Path":"/a","TARGET":"b","x":[1]}]`); err != nil || !reflect.DeepEqual(links, []Symlink{{"/a", "b"}}) {
		t.Errorf("decodeSymlinks with other keys = %v, %v", links, err)
	}
	if links, err := decodeSymlinks(`[{"path":"/a\u003cb","target":"c"}]`); err != nil || links[0].Path != "/a<b" {
		t.Errorf("decodeSymlinks with an escape = %v, %v", links, err)
	}
	for _, raw := range []string{`[`, `[{"path":1}]`, `{}`, "[\"\x01\"]"} {
		if _, err := decodeSymlinks(raw); err == nil {
			t.Errorf("decodeSymlinks(%q) accepted it", raw)
		}
		if _, err := decodeStrings(raw); err == nil {
			t.Errorf("decodeStrings(%q) accepted it", raw)
		}
	}
}

func FuzzAnnotationFastPath(f *testing.F) {
	for _, raw := range annotationSeeds {
		f.Add(raw)
	}
	f.Fuzz(checkAnnotation)
}
