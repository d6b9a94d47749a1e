package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, refuses with a *FileError, and whatever it accepts
// marshals (as YAML and as JSON) and reads back as the same policy.
//
//	go test -run='^$' -fuzz=FuzzParse -fuzztime=60s -fuzzminimizetime=500x ./policy/
//
// (-fuzzminimizetime: the default minimizes each new input for up to a minute, during
// which the fuzzer reports 0 execs/sec and seems to hang.)
func FuzzParse(f *testing.F) {
	for _, name := range Profiles() {
		p, _ := Builtin(name)
		y, err := MarshalYAML(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(y)
		j, _ := json.Marshal(p)
		f.Add(j)
	}
	for _, s := range []string{
		"",
		"extends: agent\nfilesystem:\n  read_only: [/data, {path: /opt, optional: true}]\n",
		"extends: build\nenvironment:\n  set: {A: \"${home}/x\"}\n",
		"filesystem:\n  tmpfs: [/t, {path: /u, mode: \"0700\"}]\n  protected: [\"**/secrets\", \"config/*.key\"]\n",
		"network:\n  mode: [\n",
		"network:\n  mode: 3\n",
		"filesystem:\n  readonly: [/usr]\n",
		"process:\n  timeout: soon\n",
		"network:\n  mode: none\n  mode: host\n",
		"- a\n",
		"{\"seccomp\": {\"rules\": [{\"syscalls\": [\"bpf\"], \"action\": \"allow\"}]}, \"resources\": null}",
		"a: &a [*a]\n",
		"environment:\n  set:\n    \"\\u00e9\": \"\\t\"\n",
		"workspace: {path: \"${uid}\"}\n",
		"description: \"\\x00\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz.yaml")
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *FileError", err, err)
			}
			if fe.File != "fuzz.yaml" || fe.Reason == "" {
				t.Fatalf("FileError %#v lacks the file or the reason", fe)
			}
			return
		}
		// A policy that extends a profile already holds the profile's fields; what is
		// printed of it stands alone (TestExtendsRoundTrip covers the extends key).
		p.Extends = ""
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("accepted policy does not marshal: %v", err)
		}
		y, err := MarshalYAML(p)
		if err != nil && strings.Contains(err.Error(), "control characters") && os.Getenv("GOSBX_FUZZ_SKIP_C1") != "" {
			// A known bug (TestParseControlCharacters); the variable lets fuzzing go on.
			t.Skip("known: a C1 control character does not print as YAML")
		}
		if err != nil {
			t.Fatalf("accepted policy does not marshal to YAML: %v", err)
		}
		for form, out := range map[string][]byte{"YAML": y, "JSON": want} {
			back, err := Parse(out, "again."+form)
			if err != nil {
				t.Fatalf("%s of an accepted policy is refused: %v\ninput: %q\n%s: %s", form, err, data, form, out)
			}
			got, err := json.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s round trip changed the policy:\ninput: %q\n got %s\nwant %s", form, data, got, want)
			}
		}
	})
}
