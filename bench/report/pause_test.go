package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hfExport is a hyperfine --export-json file with one result a variant: median s, and
// mean user and system s per run.
func hfExport(t *testing.T, path string, rows map[string][3]float64) {
	t.Helper()
	var rs []string
	for name, v := range rows {
		rs = append(rs, fmt.Sprintf(`{"command": %q, "mean": %g, "median": %g, "user": %g, "system": %g, "times": [%g, %g, %g], "exit_codes": [0, 0, 0]}`,
			name, v[0], v[0], v[1], v[2], v[0], v[0], v[0]))
	}
	if err := os.WriteFile(path, []byte(`{"results": [`+strings.Join(rs, ", ")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestPauseAndCPU(t *testing.T) {
	raw := t.TempDir()
	hfExport(t, filepath.Join(raw, "pause-true.json"), map[string][3]float64{
		"bwrap":         {0.010, 0.001, 0.002},
		"gosbx":         {0.020, 0.003, 0.004},
		"gosbx-mem":     {0.025, 0.003, 0.006},
		"gosbx-session": {0.005, 0.0005, 0.0005},
	})
	cold := map[string]hfResult{
		"bwrap":      {User: 0.0010, System: 0.0008},
		"gosbx":      {User: 0.0025, System: 0.0030},
		"gosbx-none": {User: 0.0020, System: 0.0030},
		"gosbx-mem":  {User: 0.0025, System: 0.0060},
		"direct":     {User: 0.0005, System: 0.0001},
	}
	il := `{"name":"bwrap","median":4,"p10":3,"p90":5,"mean":4,"runs":3,"cpu_ms_mean":3.5,"cpu_ms_median":3.4}
{"name":"gosbx","median":8,"p10":7,"p90":9,"mean":8,"runs":3,"cpu_ms_mean":7,"cpu_ms_median":6.9}
`
	if err := os.WriteFile(filepath.Join(raw, "cpu-true.jsonl"), []byte(il), 0o644); err != nil {
		t.Fatal(err)
	}
	back := map[string]float64{"bwrap": 4, "gosbx": 8, "gosbx-mem": 10, "gosbx-session": 4}
	pr, h := readPause(raw, map[string]string{"pause_ms": "500"}, back)
	if pr == nil || len(h) != 4 {
		t.Fatalf("readPause: %+v, %d results", pr, len(h))
	}
	for v, want := range map[string]float64{"bwrap": 10, "gosbx": 20, "gosbx-mem": 25, "gosbx-session": 5} {
		if !near(pr.MedianMs[v], want) {
			t.Errorf("median %s = %v ms, want %v", v, pr.MedianMs[v], want)
		}
	}
	if !near(pr.RatioBwrap["gosbx"], 2) || !near(pr.BackRatio["gosbx-mem"], 2.5) || !near(pr.Slowdown["bwrap"], 2.5) || pr.Runs != 3 || pr.PauseMs != 500 {
		t.Errorf("ratios: to bwrap %v, back to back %v, slowdown %v, runs %d, pause %v", pr.RatioBwrap, pr.BackRatio, pr.Slowdown, pr.Runs, pr.PauseMs)
	}

	c := readCPU(raw, cold, h)
	// user + system, s to ms; direct is not a CPU row
	for v, want := range map[string]float64{"bwrap": 1.8, "gosbx": 5.5, "gosbx-none": 5, "gosbx-mem": 8.5} {
		if !near(c.LauncherMs[v], want) {
			t.Errorf("launcher CPU %s = %v ms, want %v", v, c.LauncherMs[v], want)
		}
	}
	if _, ok := c.LauncherMs["direct"]; ok {
		t.Errorf("direct in the CPU rows: %v", c.LauncherMs)
	}
	if !near(c.LauncherPauseMs["gosbx-mem"], 9) || !near(c.LauncherPauseMs["bwrap"], 3) {
		t.Errorf("launcher CPU after the pause: %v", c.LauncherPauseMs)
	}
	if _, ok := c.LauncherPauseMs["gosbx-session"]; ok {
		t.Errorf("gosbx-session in the CPU rows: %v", c.LauncherPauseMs)
	}
	if !near(c.AllMs["bwrap"], 3.5) || !near(c.AllMs["gosbx"], 7) || len(c.AllMs) != 2 {
		t.Errorf("all processes' CPU: %v", c.AllMs)
	}

	var b strings.Builder
	pauseTables(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, map[string]string{"pause_ms": "500", "pause_prepare": "sleep 0.500"}, pr, c)
	for _, row := range []string{
		"| gosbx-mem (`--memory 512M`) | 25.00 | 10.00 | 2.50× | 2.50× | 2.50× |",
		"| gosbx | 5.50 | 7.00 | 7.00 |",
		"| gosbx-none | 5.00 | — | — |",
		"| gosbx/bwrap | 3.06× | 2.33× | 2.00× |",
	} {
		if !strings.Contains(b.String(), row) {
			t.Errorf("no row %q in:\n%s", row, b.String())
		}
	}
}

func TestNoPauseRows(t *testing.T) {
	if pr, h := readPause(t.TempDir(), nil, nil); pr != nil || h != nil {
		t.Errorf("readPause without pause-true.json: %+v, %v", pr, h)
	}
}
