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
	"text/tabwriter"
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

// WriteTable prints the report as an aligned table.
func (r *Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, c.Status, oneLine(c.Detail))
	}
	tw.Flush()
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

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > 110 {
		s = string(r[:107]) + "..."
	}
	return s
}
