package doctor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func sampleReport() *Report {
	r := &Report{Version: ReportVersion, OK: true, UID: 1000}
	r.add(Check{Name: "kernel", Status: OK, Detail: "Linux 6.8.0", Fix: "never shown: ok"})
	r.add(Check{Name: "overlayfs in a user namespace", Status: Warn, Detail: "mount overlay: permission denied", Fix: "fix-of-warn"})
	r.add(Check{Name: "Landlock", Status: Skip, Detail: "not available", Fix: "never shown: skip"})
	r.add(Check{Name: "cgroup limits", Status: Warn, Detail: "no usable cgroup"})
	return r
}

func TestReportOK(t *testing.T) {
	r := sampleReport()
	if !r.OK {
		t.Fatal("ok, warn and skip checks made the report fail")
	}
	r.add(Check{Name: "user namespace + id maps", Status: Fail, Detail: "EPERM", Fix: "fix-of-fail"})
	if r.OK {
		t.Fatal("a failed check left OK true")
	}
	r.add(Check{Name: "later", Status: OK})
	if r.OK {
		t.Fatal("an ok check after a failure set OK back to true")
	}
	if len(r.Checks) != 6 {
		t.Fatalf("%d checks, want 6 (every check kept, in order)", len(r.Checks))
	}
}

func TestWriteTable(t *testing.T) {
	r := sampleReport()
	r.add(Check{Name: "user namespace + id maps", Status: Fail, Detail: "fork/exec gosbx: operation not permitted", Fix: "fix-of-fail"})
	var b bytes.Buffer
	r.WriteTable(&b, 0)
	out := b.String()
	for _, c := range r.Checks {
		wantAll(t, "table", out, c.Name, string(c.Status))
	}
	wantAll(t, "table", out, "CHECK", "STATUS", "DETAIL", "How to fix:",
		"- overlayfs in a user namespace: fix-of-warn", "- user namespace + id maps: fix-of-fail", "cannot build")
	wantNone(t, "table", out, "never shown")

	var ok bytes.Buffer
	sampleReport().WriteTable(&ok, 0)
	wantAll(t, "passing table", ok.String(), "can build its default sandbox here")

	var clean bytes.Buffer
	(&Report{Version: ReportVersion, OK: true, Checks: []Check{{Name: "kernel", Status: OK, Detail: "x"}}}).WriteTable(&clean, 0)
	wantNone(t, "all-ok table", clean.String(), "How to fix")
}

// A detail is never cut: whole on one line for a pipe (width 0), wrapped at spaces
// under the DETAIL column for a terminal, every word kept.
func TestWriteTableWholeDetail(t *testing.T) {
	words := []string{"line", "one"}
	for i := range 60 {
		words = append(words, fmt.Sprintf("word%d", i))
	}
	words = append(words, "/"+strings.Repeat("é", 90)+"/tail") // longer than a line: cut inside, still whole
	r := &Report{OK: true}
	r.add(Check{Name: "sandbox launch", Status: OK, Detail: "line one\n" + strings.Join(words[2:], " ")})
	r.add(Check{Name: "kernel", Status: OK, Detail: "short"})

	var piped bytes.Buffer
	r.WriteTable(&piped, 0)
	want := "sandbox launch  ok      " + strings.Join(words, " ") + "\n"
	if !strings.Contains(piped.String(), want) || strings.Contains(piped.String(), "...") {
		t.Errorf("piped: want the whole detail on one line %q\n%s", want, piped.String())
	}

	var tty bytes.Buffer
	r.WriteTable(&tty, 80)
	var joined []string
	lines := strings.Split(strings.TrimSuffix(tty.String(), "\n"), "\n")
	for i, l := range lines {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("line %d has %d columns, more than 80: %q", i, n, l)
		}
		switch {
		case strings.HasPrefix(l, "sandbox launch  ok      "):
			joined = append(joined, strings.TrimPrefix(l, "sandbox launch  ok      "))
		case len(joined) > 0 && strings.HasPrefix(l, strings.Repeat(" ", 24)) && !strings.HasPrefix(l, strings.Repeat(" ", 25)):
			joined = append(joined, strings.TrimPrefix(l, strings.Repeat(" ", 24)))
		case len(joined) > 0 && strings.HasPrefix(l, "kernel"):
			goto done
		}
	}
done:
	if len(joined) < 3 {
		t.Fatalf("terminal: the detail is not wrapped onto continuation lines:\n%s", tty.String())
	}
	got := strings.Join(joined, " ")
	if !sameRunes(got, strings.Join(words, " ")) {
		t.Errorf("terminal: wrapped detail lost words\ngot  %q\nwant %q", got, strings.Join(words, " "))
	}
	if strings.Contains(tty.String(), "...") {
		t.Errorf("terminal: detail cut with ...:\n%s", tty.String())
	}
}

// sameRunes compares ignoring spaces (wrapping turns a space into a line break, and
// cuts a word longer than a line inside it).
func sameRunes(a, b string) bool {
	return strings.ReplaceAll(a, " ", "") == strings.ReplaceAll(b, " ", "")
}

// Details are error messages that can hold any path: wrapping one must not cut a
// UTF-8 sequence in half.
func TestWriteTableKeepsUTF8(t *testing.T) {
	r := &Report{OK: true}
	r.add(Check{Name: "sandbox launch", Status: Fail, Detail: "bind /" + strings.Repeat("é", 80) + ": permission denied"})
	for _, width := range []int{0, 40, 80} {
		var b bytes.Buffer
		r.WriteTable(&b, width)
		if !utf8.Valid(b.Bytes()) {
			t.Errorf("width %d: table is not valid UTF-8:\n%q", width, b.String())
		}
	}
}

func TestWriteJSON(t *testing.T) {
	r := sampleReport()
	r.add(Check{Name: "user namespace + id maps", Status: Fail, Detail: "EPERM", Fix: "fix-of-fail"})
	r.add(Check{Name: "mnt namespace", Status: Skip, Detail: "needs a user namespace"})
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &top); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b.String())
	}
	var keys []string
	for k := range top {
		keys = append(keys, k)
	}
	if len(top) != 4 || top["version"] == nil || top["ok"] == nil || top["uid"] == nil || top["checks"] == nil {
		t.Fatalf("top-level keys %q, want exactly version, ok, uid, checks", keys)
	}
	var doc struct {
		Version int                          `json:"version"`
		OK      bool                         `json:"ok"`
		UID     int                          `json:"uid"`
		Checks  []map[string]json.RawMessage `json:"checks"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != 1 || ReportVersion != 1 {
		t.Errorf("version %d (ReportVersion %d), want 1", doc.Version, ReportVersion)
	}
	if doc.OK || doc.UID != 1000 || len(doc.Checks) != len(r.Checks) {
		t.Errorf("ok %v uid %d checks %d: want false, 1000, %d", doc.OK, doc.UID, len(doc.Checks), len(r.Checks))
	}
	allowed := map[string]bool{"ok": true, "warn": true, "fail": true, "skip": true}
	for i, c := range doc.Checks {
		for k := range c {
			switch k {
			case "name", "status", "detail", "fix":
			default:
				t.Errorf("check %d: unknown key %q", i, k)
			}
		}
		var name, status string
		json.Unmarshal(c["name"], &name)
		json.Unmarshal(c["status"], &status)
		if name == "" || !allowed[status] {
			t.Errorf("check %d: name %q status %q", i, name, status)
		}
		if name != r.Checks[i].Name || status != string(r.Checks[i].Status) {
			t.Errorf("check %d is %q/%q, want %q/%q (order kept)", i, name, status, r.Checks[i].Name, r.Checks[i].Status)
		}
	}
	// detail and fix are omitted when empty: a consumer must treat them as optional.
	last := doc.Checks[len(doc.Checks)-1]
	if _, ok := last["fix"]; ok {
		t.Errorf("empty fix written: %s", b.String())
	}
	if !bytes.HasSuffix(b.Bytes(), []byte("}\n")) {
		t.Errorf("want one document ending in a newline")
	}
}

func TestReadFacts(t *testing.T) {
	f := ReadFacts()
	if f.Kernel == "" {
		t.Error("no kernel release")
	}
	if f.UID != os.Getuid() {
		t.Errorf("UID %d, want %d", f.UID, os.Getuid())
	}
	if _, err := os.Stat("/proc/sys/user/max_user_namespaces"); err == nil && f.MaxUserNamespaces == "" {
		t.Error("user.max_user_namespaces exists but was not read")
	}
	for _, p := range f.MaskedProc {
		if !strings.HasPrefix(p, "/proc/") {
			t.Errorf("masked entry %q is not under /proc", p)
		}
	}
	if sysctl("no.such.sysctl") != "" {
		t.Error("a missing sysctl reads as non-empty")
	}
	t.Logf("%+v", f)
}
