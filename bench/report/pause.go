package main

import (
	"os"
	"path/filepath"
	"strings"
)

// pauseVariants are bench/pause.sh's commands, each timed after an idle pause.
var pauseVariants = []string{"bwrap", "gosbx", "gosbx-mem", "gosbx-session"}

// cpuVariants are the rows of the CPU table.
var cpuVariants = []string{"bwrap", "gosbx", "gosbx-none", "gosbx-mem"}

// pauseResults are bench/pause.sh's rows: /bin/true after a PauseMs idle pause, by variant,
// beside the same command back to back (the cold-start rows; gosbx-session from the
// sessions rows).
type pauseResults struct {
	PauseMs    float64            `json:"pause_ms"`
	Runs       int                `json:"runs"`
	MedianMs   map[string]float64 `json:"median_ms"`
	BackMs     map[string]float64 `json:"back_to_back_median_ms"`
	RatioBwrap map[string]float64 `json:"ratio_to_bwrap_after_pause"`
	BackRatio  map[string]float64 `json:"back_to_back_ratio_to_bwrap"`
	Slowdown   map[string]float64 `json:"after_pause_vs_back_to_back"`
}

// cpuResults are the CPU time (user + system) of one launch of /bin/true, mean ms by
// variant: Launcher is hyperfine's user + system, the launcher's rusage with the children
// it waited for, back to back and after a pause; All is bench/interleave -cpu, every process
// of the launch (a child subreaper reaps the sandbox's pid 1 too), back to back.
type cpuResults struct {
	LauncherMs      map[string]float64 `json:"launcher_mean_ms"`
	LauncherPauseMs map[string]float64 `json:"launcher_after_pause_mean_ms,omitempty"`
	AllMs           map[string]float64 `json:"all_processes_mean_ms,omitempty"`
}

// cpuMs is a hyperfine result's mean CPU time per run, user + system, in ms. hyperfine
// takes both from getrusage(RUSAGE_CHILDREN) around each run, so they include every
// descendant the command waited for, and no other.
func cpuMs(h hfResult) float64 { return (h.User + h.System) * 1e3 }

// readPause reads pause-true.json; back holds the back-to-back medians (ms) of the
// same variants. It returns the results and the export's results by name, or nil, nil
// when the run had no pause rows.
func readPause(raw string, meta map[string]string, back map[string]float64) (*pauseResults, map[string]hfResult) {
	path := filepath.Join(raw, "pause-true.json")
	if _, err := os.Stat(path); err != nil {
		return nil, nil
	}
	h := readHF(path, pauseVariants...)
	pr := &pauseResults{PauseMs: atof(meta["pause_ms"]), MedianMs: map[string]float64{}, BackMs: map[string]float64{},
		RatioBwrap: map[string]float64{}, BackRatio: map[string]float64{}, Slowdown: map[string]float64{}}
	for _, v := range pauseVariants {
		pr.MedianMs[v] = h[v].Median * 1e3
		pr.Runs = len(h[v].Times)
		pr.RatioBwrap[v] = pr.MedianMs[v] / (h["bwrap"].Median * 1e3)
		if back[v] > 0 && back["bwrap"] > 0 { // absent from raw files older than the row
			pr.BackMs[v] = back[v]
			pr.BackRatio[v] = back[v] / back["bwrap"]
			pr.Slowdown[v] = pr.MedianMs[v] / back[v]
		}
	}
	return pr, h
}

// readCPU gathers the CPU per launch: from cold (the back-to-back hyperfine export of
// /bin/true), from pause (nil without the pause rows) and from cpu-true.jsonl (bench/interleave
// -cpu, absent in older runs).
func readCPU(raw string, cold, pause map[string]hfResult) *cpuResults {
	c := &cpuResults{LauncherMs: map[string]float64{}}
	for _, v := range cpuVariants {
		if h, ok := cold[v]; ok {
			c.LauncherMs[v] = cpuMs(h)
		}
		if h, ok := pause[v]; ok {
			if c.LauncherPauseMs == nil {
				c.LauncherPauseMs = map[string]float64{}
			}
			c.LauncherPauseMs[v] = cpuMs(h)
		}
	}
	if il := readInterleaved(filepath.Join(raw, "cpu-true.jsonl")); il != nil {
		c.AllMs = map[string]float64{}
		for _, v := range cpuVariants {
			if r, ok := il[v]; ok {
				c.AllMs[v] = r.CPUMean
			}
		}
	}
	return c
}

// pauseTables prints the after-a-pause and the CPU tables as Markdown.
func pauseTables(p func(string, ...any), meta map[string]string, pr *pauseResults, c *cpuResults) {
	if pr != nil {
		p("\nCold start after a %s ms idle pause before each launch (issue 20), `/bin/true`, median ms (hyperfine -N --prepare '%s', %d runs after 2 warmup, the pause not timed); "+
			"back to back = the cold-start rows (exec --session: the sessions rows). bwrap has no cgroup: gosbx-mem's ratio includes the v1 group gosbx makes, joins and removes\n\n",
			meta["pause_ms"], meta["pause_prepare"], pr.Runs)
		p("| | after the pause | back to back | after/back to back | /bwrap after the pause | /bwrap back to back |\n|---|--:|--:|--:|--:|--:|\n")
		for _, v := range pauseVariants {
			p("| %s | %s | %s | %s | %s× | %s |\n", pauseLabel(v), f2(pr.MedianMs[v]), cpuCell(pr.BackMs, v), timesCell(pr.Slowdown, v),
				f2(pr.RatioBwrap[v]), timesCell(pr.BackRatio, v))
		}
	}
	p("\nCPU time (user + system) per launch of `/bin/true`, mean ms: the launcher's = hyperfine's user + system, the launcher's rusage " +
		"with the children it waited for (neither bwrap nor gosbx waits for its sandbox's pid 1); all processes = bench/interleave -cpu, " +
		"a child subreaper that also reaps pid 1 and the command. Kernel work in worker threads (the network namespace's cleanup, the cgroup's removal) is in neither\n\n")
	p("| | launcher's, back to back | launcher's, after the pause | all processes, back to back |\n|---|--:|--:|--:|\n")
	for _, v := range cpuVariants {
		p("| %s | %s | %s | %s |\n", pauseLabel(v), cpuCell(c.LauncherMs, v), cpuCell(c.LauncherPauseMs, v), cpuCell(c.AllMs, v))
	}
	var cells []string
	for _, m := range []map[string]float64{c.LauncherMs, c.LauncherPauseMs, c.AllMs} {
		if m["bwrap"] > 0 && m["gosbx"] > 0 {
			cells = append(cells, f2(m["gosbx"]/m["bwrap"])+"×")
		} else {
			cells = append(cells, "—")
		}
	}
	p("| gosbx/bwrap | %s |\n", strings.Join(cells, " | "))
}

// timesCell is m[v] as a ratio ("1.50×"), or "—" when m has no v.
func timesCell(m map[string]float64, v string) string {
	if x, ok := m[v]; ok {
		return f2(x) + "×"
	}
	return "—"
}

// cpuCell is m[v] with two decimals, or "—" when m has no v (a row the run did not have).
func cpuCell(m map[string]float64, v string) string {
	if x, ok := m[v]; ok {
		return f2(x)
	}
	return "—"
}

func pauseLabel(v string) string {
	switch v {
	case "gosbx-mem":
		return "gosbx-mem (`--memory 512M`)"
	case "gosbx-session":
		return "`exec --session S`"
	}
	return v
}
