// Package doctor proves, on this host and for this caller, that gosbx can build its
// sandbox, or says exactly why not and how to fix it. Every check exercises the feature
// through the code gosbx exec uses (Go's clone with the namespace flags and id maps as
// nsinit does, the cgroup package, a real nsinit launch under the default policy with an
// escape probe inside); sysctls and mount tables are read only to explain a failure.
package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Status of a check.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn" // works with less than the best (no cgroup delegation): does not fail
	Fail Status = "fail" // the default policy cannot be built
	Skip Status = "skip" // not applicable here, or not reached
)

// Check is one result.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// ReportVersion is the version of the --json schema: {"version": 1, "ok": bool,
// "uid": N, "checks": [{"name", "status", "detail", "fix"}]}. Fields are only added
// within a version.
const ReportVersion = 1

// Report is every check, in order.
type Report struct {
	Version int     `json:"version"`
	OK      bool    `json:"ok"` // no check failed: exec works with the default policy
	UID     int     `json:"uid"`
	Checks  []Check `json:"checks"`
}

func (r *Report) add(c Check) {
	r.Checks = append(r.Checks, c)
	if c.Status == Fail {
		r.OK = false
	}
}

// WriteTable prints the report as an aligned table: CHECK, STATUS, DETAIL. Each
// detail is printed whole (its line breaks as spaces): with width > 0 (a terminal's
// columns) a detail longer than the space after the first two columns wraps at spaces
// onto indented continuation lines; with width 0 (a pipe or a file) it stays on one line.
func (r *Report) WriteTable(w io.Writer, width int) {
	nameW, statW := len("CHECK"), len("STATUS")
	for _, c := range r.Checks {
		nameW = max(nameW, utf8.RuneCountInString(c.Name))
		statW = max(statW, len(c.Status))
	}
	indent := nameW + 2 + statW + 2
	room := 0 // runes a detail line may hold; 0: no limit
	if width > 0 {
		room = max(width-indent, 30) // a too narrow terminal still gets readable pieces
	}
	row := func(name, status, detail string) {
		pad := func(s string, n int) string { return s + strings.Repeat(" ", n-utf8.RuneCountInString(s)) }
		lines := wrap(strings.Join(strings.Fields(detail), " "), room)
		fmt.Fprintln(w, strings.TrimRight(pad(name, nameW+2)+pad(status, statW+2)+lines[0], " "))
		for _, l := range lines[1:] {
			fmt.Fprintln(w, strings.Repeat(" ", indent)+l)
		}
	}
	row("CHECK", "STATUS", "DETAIL")
	for _, c := range r.Checks {
		row(c.Name, string(c.Status), c.Detail)
	}
	fixes := false
	for _, c := range r.Checks {
		if c.Fix != "" && (c.Status == Fail || c.Status == Warn) {
			if !fixes {
				fmt.Fprintln(w, "\nHow to fix:")
				fixes = true
			}
			fmt.Fprintf(w, "- %s: %s\n", c.Name, c.Fix)
		}
	}
	if r.OK {
		fmt.Fprintln(w, "\ngosbx can build its default sandbox here.")
	} else {
		fmt.Fprintln(w, "\ngosbx cannot build its default sandbox here: see the failed checks.")
	}
}

// WriteJSON prints the report as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// wrap cuts s into lines of at most room runes, at spaces where it can (a word longer
// than room is cut inside); room 0 keeps s whole.
func wrap(s string, room int) []string {
	var lines []string
	for room > 0 && utf8.RuneCountInString(s) > room {
		r := []rune(s)
		cut := strings.LastIndex(string(r[:room+1]), " ")
		if cut <= 0 {
			cut = len(string(r[:room]))
			lines, s = append(lines, s[:cut]), s[cut:]
			continue
		}
		lines, s = append(lines, s[:cut]), s[cut+1:]
	}
	return append(lines, s)
}
