package rawjson

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

type inner struct {
	Path  string   `json:"path"`
	Names []string `json:"names,omitempty"`
}

type outer struct {
	Name    string
	Skip    string `json:"-"`
	In      *inner
	List    []inner
	Arr     [2]string
	M       map[string]string
	Raw     json.RawMessage `json:",omitempty"`
	D       time.Duration
	private string
}

// A value with strings that are not UTF-8 (and one that starts with the mark) comes
// back from JSON byte for byte through Escaped and Unescaped; json alone loses them.
func TestRoundTrip(t *testing.T) {
	in := outer{
		Name: "caf\xe9", Skip: "x\xff", In: &inner{Path: "/w/caf\xe9", Names: []string{"a", "\xff\xfe", Mark + "m"}},
		List: []inner{{Path: "ok"}, {Path: "b\xc3"}}, Arr: [2]string{"é", "\xe9"},
		M: map[string]string{"k\xe9": "v\xe9"}, Raw: json.RawMessage(`{"a":1}`), D: time.Second, private: "p",
	}
	plain, _ := json.Marshal(in)
	var lost outer
	json.Unmarshal(plain, &lost)
	if lost.Name == in.Name {
		t.Fatal("encoding/json kept a Latin-1 byte: the test no longer shows the fault")
	}
	b, err := json.Marshal(Escaped(in))
	if err != nil {
		t.Fatal(err)
	}
	if in.Name != "caf\xe9" || in.In.Names[1] != "\xff\xfe" {
		t.Fatalf("Escaped changed its argument: %+v", in)
	}
	var got outer
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !Unescaped(&got) {
		t.Fatal("Unescaped refused its own output")
	}
	want := in
	want.Skip, want.private = "", ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %#v\nwant %#v", got, want)
	}
	// only UTF-8: the encoding is json's own
	u := inner{Path: "/w/x", Names: []string{"é"}}
	a, _ := json.Marshal(u)
	c, _ := json.Marshal(Escaped(u))
	if string(a) != string(c) {
		t.Errorf("UTF-8 only: %s, want %s", c, a)
	}
	bad := inner{Path: Mark + "!!"}
	if Unescaped(&bad) {
		t.Error("a marked string with bad base64 was accepted")
	}
}
