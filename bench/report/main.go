// Command report reads the raw results of bench/run.sh (hyperfine exports, libbench
// results, the memory samples, meta.txt), prints the table of medians with the ratio
// gosbx/bwrap for each, checks the targets, and writes latest.json (and the table
// as Markdown, for BENCHMARKS.md).
//
//	report -raw bench/results/raw -out bench/results/latest.json -markdown bench/results/latest.md
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type hfResult struct {
	Command string    `json:"command"`
	Mean    float64   `json:"mean"`
	Stddev  float64   `json:"stddev"`
	Median  float64   `json:"median"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Times   []float64 `json:"times"`
	// User and System are the mean CPU times per run, s (getrusage RUSAGE_CHILDREN)
	User   float64 `json:"user"`
	System float64 `json:"system"`
}

type libResult struct {
	Label       string  `json:"label"`
	Launches    int     `json:"launches"`
	Concurrency int     `json:"concurrency"`
	WallSeconds float64 `json:"wall_seconds"`
	PerSecond   float64 `json:"launches_per_second"`
	MedianMs    float64 `json:"median_ms"`
	P90Ms       float64 `json:"p90_ms"`
	CompileMs   float64 `json:"compile_median_ms"`
	StartMs     float64 `json:"start_median_ms"` // -pool only: Start alone, to the command's execve
	RunMs       float64 `json:"run_median_ms"`   // with -pool: Wait alone
}

type rssSample struct {
	Label       string `json:"label"`
	LauncherRSS int    `json:"launcher_rss_kib"`
	ReaperRSS   int    `json:"reaper_rss_kib"`
	CommandRSS  int    `json:"command_rss_kib"`
	LauncherPSS int    `json:"launcher_pss_kib"`
	ReaperPSS   int    `json:"reaper_pss_kib"`
	CommandPSS  int    `json:"command_pss_kib"`
	LauncherUSS int    `json:"launcher_uss_kib"`
	ReaperUSS   int    `json:"reaper_uss_kib"`
	// Anonymous of smaps_rollup: heap, stacks, written .data/.bss (USS less it is the
	// binary's pages only this process maps)
	LauncherAnon int `json:"launcher_anon_kib"`
	ReaperAnon   int `json:"reaper_anon_kib"`
}

// startupResult is one line of bench/interleave -json: the interleaved start of the
// empty Go program and of gosbx version.
type startupResult struct {
	Name   string  `json:"name"`
	Median float64 `json:"median"`
	P10    float64 `json:"p10"`
	P90    float64 `json:"p90"`
	Runs   int     `json:"runs"`
	// CPUMean is the mean CPU time (user + system) of every process of a run, ms
	// (interleave -cpu only)
	CPUMean float64 `json:"cpu_ms_mean,omitempty"`
}

// startupResults are the start of the binary: gosbx version against an empty Go program.
type startupResults struct {
	EmptyMs     float64 `json:"empty_median_ms"`
	VersionMs   float64 `json:"version_median_ms"`
	Ratio       float64 `json:"version_ratio_to_empty"`
	HFEmptyMs   float64 `json:"hyperfine_empty_median_ms"`
	HFVersionMs float64 `json:"hyperfine_version_median_ms"`
	HFRatio     float64 `json:"hyperfine_version_ratio_to_empty"`
	Rounds      int     `json:"rounds"`
	GosbxBytes  string  `json:"gosbx_binary_bytes"`
}

// readInterleaved reads bench/interleave -json output: the results by name, nil when the
// file is missing.
func readInterleaved(path string) map[string]startupResult {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	out := map[string]startupResult{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r startupResult
		if json.Unmarshal([]byte(line), &r) == nil {
			out[r.Name] = r
		}
	}
	return out
}

func readStartup(raw string) *startupResults {
	il := readInterleaved(filepath.Join(raw, "startup.jsonl"))
	if il == nil {
		return nil
	}
	st := &startupResults{EmptyMs: il["empty"].Median, VersionMs: il["version"].Median, Rounds: il["version"].Runs}
	st.Ratio = st.VersionMs / st.EmptyMs
	h := readHF(filepath.Join(raw, "startup.json"), "empty", "version")
	st.HFEmptyMs, st.HFVersionMs = h["empty"].Median*1e3, h["version"].Median*1e3
	st.HFRatio = st.HFVersionMs / st.HFEmptyMs
	return st
}

// Variants, in table order. "direct" is the command without any sandbox.
// bwrap-filter is bwrap with gosbx's agent filter (--seccomp), started through a /bin/sh
// script (its cost is "sh-exec", measured once, in the cold start of /bin/true).
var variants = []string{"direct", "bwrap", "bwrap-filter", "gosbx", "gosbx-none"}

// coldVariants are the cold-start rows' variants: gosbx-mem is gosbx exec --memory 512M
// (a cgroup made, joined and removed per launch; bwrap makes none).
var coldVariants = append(append([]string(nil), variants...), "gosbx-mem")

// gapVariants are bwrap and gosbx timed after the same idle pause as library-pool
// (hyperfine --prepare 'sleep …', the pause not timed).
var gapVariants = []string{"bwrap-gap", "gosbx-gap"}

type target struct {
	Name   string  `json:"name"`
	Target string  `json:"target"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Met    bool    `json:"met"`
	Detail string  `json:"detail"`
}

type rssMedians struct {
	LauncherKiB float64 `json:"launcher_rss_kib"`
	ReaperKiB   float64 `json:"reaper_rss_kib"`
	CommandKiB  float64 `json:"command_rss_kib"`
	LauncherPSS float64 `json:"launcher_pss_kib"`
	ReaperPSS   float64 `json:"reaper_pss_kib"`
	LauncherUSS float64 `json:"launcher_uss_kib"`
	ReaperUSS   float64 `json:"reaper_uss_kib"`
	// Anonymous of smaps_rollup, KiB (0: raw files older than the field)
	LauncherAnon float64 `json:"launcher_anon_kib"`
	ReaperAnon   float64 `json:"reaper_anon_kib"`
	Samples      int     `json:"samples"`
}

type report struct {
	Meta     map[string]string             `json:"meta"`
	Notes    []string                      `json:"notes"`
	ColdMs   map[string]map[string]float64 `json:"cold_start_median_ms"`
	ColdRat  map[string]map[string]float64 `json:"cold_start_ratio_to_bwrap"`
	Through  map[string]float64            `json:"throughput_launches_per_second"`
	ThruRat  map[string]float64            `json:"throughput_ratio_to_bwrap"`
	HeavyS   map[string]map[string]float64 `json:"syscall_heavy_median_s"`
	Seccomp  map[string]map[string]float64 `json:"seccomp_overhead_pct"`
	RSS      map[string]rssMedians         `json:"memory_median"`
	Library  map[string]libResult          `json:"library"`
	Sessions *sessionResults               `json:"sessions,omitempty"`
	Startup  *startupResults               `json:"startup,omitempty"`
	// Interleaved: bench/interleave's medians (cold-bwrap, cold-gosbx, session-bwrap,
	// session-exec, session-gosbx), in ms
	Interleaved map[string]startupResult `json:"interleaved,omitempty"`
	Egress      *egressResults           `json:"egress,omitempty"`
	Nobody      *nobodyResults           `json:"nobody,omitempty"`
	CacheS      map[string]float64       `json:"warm_cache_median_s,omitempty"`
	Pause       *pauseResults            `json:"after_pause,omitempty"`
	CPU         *cpuResults              `json:"cpu_per_launch"`
	Targets     []target                 `json:"targets"`
	RawFiles    []string                 `json:"raw_files"`
}

func main() {
	raw := flag.String("raw", "bench/results/raw", "directory of the raw results")
	out := flag.String("out", "bench/results/latest.json", "the summary JSON")
	md := flag.String("markdown", "", "also write the table as Markdown here")
	flag.Parse()

	r := report{
		Meta:    readMeta(filepath.Join(*raw, "meta.txt")),
		ColdMs:  map[string]map[string]float64{},
		ColdRat: map[string]map[string]float64{},
		Through: map[string]float64{},
		ThruRat: map[string]float64{},
		HeavyS:  map[string]map[string]float64{},
		Seccomp: map[string]map[string]float64{},
		RSS:     map[string]rssMedians{},
		Library: map[string]libResult{},
	}
	r.Notes = []string{
		"Medians throughout. gosbx = gosbx exec with the default agent policy (its seccomp filter on); " +
			"gosbx-none = the same boundary with `seccomp: {profile: none}`, which still loads a " +
			r.Meta["seccomp_none_instructions"] + "-instruction filter (native architecture only, everything else allowed); " +
			"bwrap has no seccomp filter; bwrap-filter = the same bwrap argv with gosbx's agent filter (bwrap --seccomp, from gosbx seccomp export), " +
			"started through a /bin/sh script whose own cost is in the notes. library = bench/libbench: policy.Compile + nsinit.Command(spec).Run() in one Go process.",
		"Ratios are gosbx/bwrap: below 1 is better for times and memory, above 1 is better for throughput.",
		"library-pool = bench/libbench -pool: the policy is compiled once into a template, and an nsinit.Pool keeps " + r.Meta["pool_size"] +
			" sandboxes built ahead from it (namespaces, mounts, pivot_root, cgroup, the seccomp filter compiled: all but the command); each launch takes one " +
			"(Pool.Command(process).Start, then Wait) and the pool builds its replacement in the background, once the command has ended (or has run 20 ms). " +
			"A sandbox runs one command and is never reused. " +
			"library-pool Start = Start() alone, until the command's execve (what a caller waits before its command runs); " +
			"library-pool = Start + Wait, the full run until the command and the sandbox's init have exited (the cgroup is removed in the background, untimed).",
		"The idle gap: in the cold-start measurement each library-pool launch is followed by a " + r.Meta["gap_ms"] + " ms pause (libbench -gap, not timed), " +
			"as an agent's think time between commands, so the pool refills between launches. bwrap-gap and gosbx-gap are bwrap and gosbx exec timed " +
			"with the same pause before each run (hyperfine --prepare '" + r.Meta["gap_prepare"] + "', not timed): an idle machine can be slower to start a process " +
			"than one in a tight loop, so library-pool is compared with bwrap-gap for like with like, and with bwrap as well. " +
			"In the throughput table library-pool has no gap: the pool is drained as fast as it refills.",
		"The warm-path target is met when the library-pool Start median is below half of bwrap-gap's median.",
		"gosbx-mem = gosbx exec --memory 512M: the launch makes a cgroup (v1 here: memory, pids, cpu), its command joins it, and it is removed after; " +
			"a root caller's default launch (gosbx) has none, its process limit being RLIMIT_NPROC. bwrap makes no cgroup, so gosbx-mem/bwrap includes the group's cost.",
	}
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }

	// Cold start.
	libTrue := readLib(filepath.Join(*raw, "lib-true.json"))
	libNone := readLib(filepath.Join(*raw, "lib-true-none.json"))
	libTP := readLib(filepath.Join(*raw, "lib-throughput.json"))
	libTPPool := readLib(filepath.Join(*raw, "lib-throughput-pool.json"))
	libPool := map[string]libResult{
		"true": readLib(filepath.Join(*raw, "lib-true-pool.json")),
		"sh":   readLib(filepath.Join(*raw, "lib-sh-pool.json")),
	}
	r.Library["true"], r.Library["true-none"], r.Library["throughput"] = libTrue, libNone, libTP
	r.Library["true-pool"], r.Library["sh-pool"], r.Library["throughput-pool"] = libPool["true"], libPool["sh"], libTPPool
	p("Cold start, median ms (hyperfine -N, %s runs after %s warmup; library: %d launches after 10; "+
		"library-pool: %d launches after 10 from a pool of %s with a %s ms idle gap between launches, Start = until the command's execve)\n\n",
		r.Meta["runs"], r.Meta["warmup"], libTrue.Launches, libPool["true"].Launches, r.Meta["pool_size"], r.Meta["gap_ms"])
	p("| command | direct | bwrap | bwrap-filter | gosbx | gosbx-none | gosbx-mem | library | library-none | library-pool | library-pool Start | gosbx/bwrap | gosbx/bwrap-filter | gosbx-none/bwrap | gosbx-mem/bwrap | library/bwrap | library-pool/bwrap | library-pool Start/bwrap |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	var gapRows []string
	var coldTrue map[string]hfResult
	for _, c := range []struct{ key, file, gapFile, label string }{
		{"true", "cold-true.json", "cold-true-gap.json", "`/bin/true`"},
		{"sh", "cold-sh.json", "cold-sh-gap.json", "`sh -c 'echo hi'`"},
		{"python", "cold-python.json", "", "`python3 -c pass`"},
	} {
		h := readHF(filepath.Join(*raw, c.file))
		m := map[string]float64{}
		for _, v := range coldVariants {
			if x, ok := h[v]; ok { // gosbx-mem: not in raw files older than the column
				m[v] = x.Median * 1e3
			}
		}
		if c.key == "true" {
			coldTrue = h
		}
		lib, libn := "—", "—"
		libRatio := "—"
		if c.key == "true" {
			m["library"], m["library-none"] = libTrue.MedianMs, libNone.MedianMs
			lib, libn = f2(libTrue.MedianMs), f2(libNone.MedianMs)
			libRatio = f2(libTrue.MedianMs/m["bwrap"]) + "×"
		}
		r.ColdMs[c.key] = m
		r.ColdRat[c.key] = map[string]float64{"gosbx": m["gosbx"] / m["bwrap"], "gosbx-none": m["gosbx-none"] / m["bwrap"],
			"gosbx_vs_bwrap-filter": m["gosbx"] / m["bwrap-filter"]}
		memRatio := "—"
		if _, ok := m["gosbx-mem"]; ok {
			r.ColdRat[c.key]["gosbx-mem"] = m["gosbx-mem"] / m["bwrap"]
			memRatio = f2(m["gosbx-mem"]/m["bwrap"]) + "×"
		}
		pool, poolStart, poolRatio, poolStartRatio := "—", "—", "—", "—"
		if c.gapFile != "" {
			g := readHF(filepath.Join(*raw, c.gapFile), gapVariants...)
			for _, v := range gapVariants {
				m[v] = g[v].Median * 1e3
			}
			lp := libPool[c.key]
			m["library-pool"], m["library-pool-start"] = lp.MedianMs, lp.StartMs
			rat := r.ColdRat[c.key]
			rat["library-pool"], rat["library-pool-start"] = lp.MedianMs/m["bwrap"], lp.StartMs/m["bwrap"]
			rat["library-pool_vs_bwrap-gap"], rat["library-pool-start_vs_bwrap-gap"] = lp.MedianMs/m["bwrap-gap"], lp.StartMs/m["bwrap-gap"]
			rat["gosbx-gap_vs_bwrap-gap"] = m["gosbx-gap"] / m["bwrap-gap"]
			rat["bwrap-gap_vs_bwrap"], rat["gosbx-gap_vs_gosbx"] = m["bwrap-gap"]/m["bwrap"], m["gosbx-gap"]/m["gosbx"]
			pool, poolStart = f2(lp.MedianMs), f2(lp.StartMs)
			poolRatio, poolStartRatio = f2(rat["library-pool"])+"×", f2(rat["library-pool-start"])+"×"
			gapRows = append(gapRows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s× | %s× | %s× | %s× | %s× |\n", c.label,
				f2(m["bwrap"]), f2(m["bwrap-gap"]), f2(m["gosbx"]), f2(m["gosbx-gap"]), pool, poolStart,
				f2(rat["bwrap-gap_vs_bwrap"]), f2(rat["gosbx-gap_vs_gosbx"]), f2(rat["gosbx-gap_vs_bwrap-gap"]),
				f2(rat["library-pool_vs_bwrap-gap"]), f2(rat["library-pool-start_vs_bwrap-gap"])))
		}
		if sh, ok := h["sh-exec"]; ok {
			m["sh-exec"] = sh.Median * 1e3
			r.Notes = append(r.Notes, fmt.Sprintf("bwrap-filter includes its /bin/sh script: `sh-exec /bin/true` (the script exec'ing /bin/true without bwrap) %s ms against %s ms direct, so about %s ms of each bwrap-filter time is the script.",
				f2(m["sh-exec"]), f2(m["direct"]), f2(m["sh-exec"]-m["direct"])))
		}
		if c.key == "true" {
			r.ColdRat[c.key]["library"] = m["library"] / m["bwrap"]
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s× | %s× | %s× | %s | %s | %s | %s |\n", c.label,
			f2(m["direct"]), f2(m["bwrap"]), f2(m["bwrap-filter"]), f2(m["gosbx"]), f2(m["gosbx-none"]), cpuCell(m, "gosbx-mem"), lib, libn, pool, poolStart,
			f2(m["gosbx"]/m["bwrap"]), f2(m["gosbx"]/m["bwrap-filter"]), f2(m["gosbx-none"]/m["bwrap"]), memRatio, libRatio, poolRatio, poolStartRatio)
	}

	// Cold start after an idle gap: the like-for-like comparison for library-pool.
	p("\nCold start after a %s ms idle gap before each launch, median ms (bwrap-gap, gosbx-gap: hyperfine -N --prepare '%s', %s runs after %s warmup, the gap not timed; "+
		"library-pool: libbench -pool %s -gap %sms; bwrap and gosbx without the gap repeated from above)\n\n",
		r.Meta["gap_ms"], r.Meta["gap_prepare"], r.Meta["runs"], r.Meta["warmup"], r.Meta["pool_size"], r.Meta["gap_ms"])
	p("| command | bwrap | bwrap-gap | gosbx | gosbx-gap | library-pool | library-pool Start | bwrap-gap/bwrap | gosbx-gap/gosbx | gosbx-gap/bwrap-gap | library-pool/bwrap-gap | library-pool Start/bwrap-gap |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, row := range gapRows {
		p("%s", row)
	}

	// After an idle pause (bench/pause.sh), and the CPU per launch.
	back := map[string]float64{}
	for _, v := range pauseVariants {
		back[v] = r.ColdMs["true"][v]
	}
	if _, err := os.Stat(filepath.Join(*raw, "session-true.json")); err == nil {
		back["gosbx-session"] = readHF(filepath.Join(*raw, "session-true.json"), "gosbx-session")["gosbx-session"].Median * 1e3
	}
	var pauseHF map[string]hfResult
	r.Pause, pauseHF = readPause(*raw, r.Meta, back)
	r.CPU = readCPU(*raw, coldTrue, pauseHF)
	pauseTables(p, r.Meta, r.Pause, r.CPU)

	// Throughput.
	n := atof(r.Meta["tp_launches"])
	tp := readHF(filepath.Join(*raw, "throughput.json"))
	for _, v := range variants {
		r.Through[v] = n / tp[v].Median
	}
	r.Through["library"] = libTP.PerSecond
	r.Through["library-pool"] = libTPPool.PerSecond
	for _, v := range []string{"gosbx", "gosbx-none", "library", "library-pool"} {
		r.ThruRat[v] = r.Through[v] / r.Through["bwrap"]
	}
	r.ThruRat["gosbx_vs_bwrap-filter"] = r.Through["gosbx"] / r.Through["bwrap-filter"]
	p("\nThroughput, launches of `/bin/true` per second (%s launches from %s concurrent callers, xargs -P; median of %s runs; library: %d goroutines, one run; "+
		"library-pool: %d goroutines sharing a pool of %d, no gap, one run)\n\n",
		r.Meta["tp_launches"], r.Meta["tp_callers"], r.Meta["tp_runs"], libTP.Concurrency, libTPPool.Concurrency, libTPPool.Concurrency)
	p("| direct | bwrap | bwrap-filter | gosbx | gosbx-none | library | library-pool | gosbx/bwrap | gosbx/bwrap-filter | gosbx-none/bwrap | library/bwrap | library-pool/bwrap |\n")
	p("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	p("| %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s× | %s× | %s× | %s× | %s× |\n", r.Through["direct"], r.Through["bwrap"],
		r.Through["bwrap-filter"], r.Through["gosbx"], r.Through["gosbx-none"], r.Through["library"], r.Through["library-pool"],
		f2(r.ThruRat["gosbx"]), f2(r.ThruRat["gosbx_vs_bwrap-filter"]), f2(r.ThruRat["gosbx-none"]), f2(r.ThruRat["library"]), f2(r.ThruRat["library-pool"]))

	// Syscall-heavy.
	p("\nSyscall-heavy workloads, median s (%s runs after 2 warmup); the filter's cost is gosbx against gosbx-none\n\n", r.Meta["heavy_runs"])
	p("| workload | direct | bwrap | bwrap-filter | gosbx | gosbx-none | filter cost in gosbx (gosbx/gosbx-none) | filter cost in bwrap (bwrap-filter/bwrap) | gosbx/direct | gosbx/bwrap |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range []struct{ key, file, label string }{
		{"find", "heavy-find.json", "`find /usr -type f \\| wc -l`"},
		{"stat", "heavy-stat.json", "python3, 300k `os.stat`"},
	} {
		h := readHF(filepath.Join(*raw, c.file))
		m := map[string]float64{}
		for _, v := range variants {
			m[v] = h[v].Median
		}
		r.HeavyS[c.key] = m
		r.Seccomp[c.key] = map[string]float64{
			"filter_vs_none":        pct(m["gosbx"], m["gosbx-none"]),
			"gosbx_vs_direct":       pct(m["gosbx"], m["direct"]),
			"gosbx_vs_bwrap":        pct(m["gosbx"], m["bwrap"]),
			"bwrap-filter_vs_bwrap": pct(m["bwrap-filter"], m["bwrap"]),
		}
		p("| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %+.1f%% | %+.1f%% | %+.1f%% | %s× |\n", c.label, m["direct"], m["bwrap"], m["bwrap-filter"], m["gosbx"], m["gosbx-none"],
			r.Seccomp[c.key]["filter_vs_none"], r.Seccomp[c.key]["bwrap-filter_vs_bwrap"], r.Seccomp[c.key]["gosbx_vs_direct"], f2(m["gosbx"]/m["bwrap"]))
	}

	// Memory.
	samples := readRSS(filepath.Join(*raw, "rss.jsonl"))
	p("\nResident memory while `sleep 2` runs inside, MiB: VmRSS (Pss / USS = Private_Clean + Private_Dirty; Anon = Anonymous); median of %s\n\n", r.Meta["rss_reps"])
	p("| | launcher | reaper (pid 1 inside) | command (`sleep`) |\n|---|--:|--:|--:|\n")
	for _, v := range []string{"bwrap", "gosbx", "gosbx-none", "library", "gosbx-raw-nobody"} {
		var l, rp, c, lp, rpp, lu, ru, la, ra []float64
		for _, s := range samples {
			if s.Label == v {
				l, rp, c = append(l, float64(s.LauncherRSS)), append(rp, float64(s.ReaperRSS)), append(c, float64(s.CommandRSS))
				lp, rpp = append(lp, float64(s.LauncherPSS)), append(rpp, float64(s.ReaperPSS))
				lu, ru = append(lu, float64(s.LauncherUSS)), append(ru, float64(s.ReaperUSS))
				la, ra = append(la, float64(s.LauncherAnon)), append(ra, float64(s.ReaperAnon))
			}
		}
		if len(l) == 0 {
			continue // a row older raw files do not have
		}
		m := rssMedians{median(l), median(rp), median(c), median(lp), median(rpp), median(lu), median(ru), median(la), median(ra), len(l)}
		r.RSS[v] = m
		name := v
		switch v {
		case "library":
			name = "library (launcher = bench/libbench itself)"
		case "gosbx-raw-nobody":
			name = "gosbx as uid 65534, raw init (the launcher's memory is the raw init's: reaper = the same)"
		}
		p("| %s | %s (%s / %s; %s) | %s (%s / %s; %s) | %s |\n", name, mib(m.LauncherKiB), mib(m.LauncherPSS), mib(m.LauncherUSS), mib(m.LauncherAnon),
			mib(m.ReaperKiB), mib(m.ReaperPSS), mib(m.ReaperUSS), mib(m.ReaperAnon), mib(m.CommandKiB))
	}
	p("| gosbx/bwrap | %s× (USS %s×; Anon %s×) | %s× (USS %s×; Anon %s×) | |\n", f2(r.RSS["gosbx"].LauncherKiB/r.RSS["bwrap"].LauncherKiB),
		f2(r.RSS["gosbx"].LauncherUSS/r.RSS["bwrap"].LauncherUSS), f2(r.RSS["gosbx"].LauncherAnon/r.RSS["bwrap"].LauncherAnon),
		f2(r.RSS["gosbx"].ReaperKiB/r.RSS["bwrap"].ReaperKiB), f2(r.RSS["gosbx"].ReaperUSS/r.RSS["bwrap"].ReaperUSS),
		f2(r.RSS["gosbx"].ReaperAnon/r.RSS["bwrap"].ReaperAnon))
	p("\nAnon (Anonymous of smaps_rollup) is the heap, the stacks and the written copies of `.data`/`.bss`: memory the kernel can take back only by swapping. USS less Anon is file pages only this process maps, for gosbx its own binary's code and read-only data: clean page cache, mapped shared (and out of USS) as soon as a second gosbx process maps them, reclaimable either way. A static binary's USS counts them; a dynamically linked one's (bwrap's) counts little of its libraries, which other processes map. Anonymous also counts pages a fork() left shared copy-on-write (bwrap's reaper is a fork of bwrap: its Anon can exceed its USS); gosbx's processes are exec'd or `CLONE_VM` children, which share none.\n")
	if st := readStartup(*raw); st != nil {
		r.Startup = st
		p("\nStart of the binary: `gosbx version` against an empty Go program (`func main() {}`), median ms\n\n")
		p("| | empty | gosbx version | version/empty |\n|---|--:|--:|--:|\n")
		p("| interleaved, %d rounds | %.3f | %.3f | %s× |\n", st.Rounds, st.EmptyMs, st.VersionMs, f2(st.Ratio))
		p("| hyperfine -N | %.3f | %.3f | %s× |\n", st.HFEmptyMs, st.HFVersionMs, f2(st.HFRatio))
	}

	// A caller other than root: the Go init against the raw init (bench/nobody.sh).
	if nb := readNobody(*raw, atof(r.Meta["tp_launches"])); nb != nil {
		r.Nobody = nb
		il := nb.Interleaved
		p("\nA caller other than root (uid 65534): gosbx with the Go init (a `-tags gosbxgoinit` build: what every launch took before) and with the raw init (the default build's, issue 20), `/bin/true`; cold start median ms (bench/interleave, %d rounds), throughput launches per second (%s launches from %s callers, median of %s runs)\n\n",
			il["bwrap"].Runs, r.Meta["tp_launches"], r.Meta["tp_callers"], r.Meta["tp_runs"])
		p("| | bwrap | gosbx (Go init) | gosbx-raw (raw init) | gosbx/bwrap | gosbx-raw/bwrap |\n|---|--:|--:|--:|--:|--:|\n")
		p("| cold start, ms | %.2f | %.2f | %.2f | %s× | %s× |\n", il["bwrap"].Median, il["gosbx"].Median, il["gosbx-raw"].Median,
			f2(il["gosbx"].Median/il["bwrap"].Median), f2(il["gosbx-raw"].Median/il["bwrap"].Median))
		p("| throughput, launches/s | %.0f | %.0f | %.0f | %s× | %s× |\n", nb.Through["bwrap"], nb.Through["gosbx"], nb.Through["gosbx-raw"],
			f2(nb.Through["gosbx"]/nb.Through["bwrap"]), f2(nb.Through["gosbx-raw"]/nb.Through["bwrap"]))
	}

	// Targets (issue 8).
	cold := r.ColdRat["true"]["gosbx"]
	coldDetail := fmt.Sprintf("gosbx %s ms, bwrap %s ms (library %s ms, %s×)", f2(r.ColdMs["true"]["gosbx"]), f2(r.ColdMs["true"]["bwrap"]), f2(r.ColdMs["true"]["library"]), f2(r.ColdRat["true"]["library"]))
	if il := readInterleaved(filepath.Join(*raw, "cold-true-interleaved.jsonl")); il != nil {
		r.Interleaved = map[string]startupResult{"cold-bwrap": il["bwrap"], "cold-gosbx": il["gosbx"]}
		hf := cold
		cold = il["gosbx"].Median / il["bwrap"].Median
		coldDetail = fmt.Sprintf("interleaved, %d rounds: gosbx %.2f ms, bwrap %.2f ms; hyperfine -N %s× (%s)", il["gosbx"].Runs, il["gosbx"].Median, il["bwrap"].Median, f2(hf), coldDetail)
	}
	r.Targets = []target{
		{"cold start of /bin/true", "≤ 1.0× bwrap", cold, "× bwrap", cold <= 1.0, coldDetail},
		{"throughput, " + r.Meta["tp_launches"] + " launches from " + r.Meta["tp_callers"] + " callers", "≥ 1.0× bwrap", r.ThruRat["gosbx"], "× bwrap", r.ThruRat["gosbx"] >= 1.0,
			fmt.Sprintf("gosbx %.0f/s, bwrap %.0f/s (library %.0f/s)", r.Through["gosbx"], r.Through["bwrap"], r.Through["library"])},
	}
	worst := math.Inf(-1)
	var parts []string
	for _, k := range []string{"find", "stat"} {
		o := r.Seccomp[k]["filter_vs_none"]
		worst = math.Max(worst, o)
		parts = append(parts, fmt.Sprintf("%s %+.1f%% (in bwrap %+.1f%%; gosbx vs direct %+.1f%%, vs bwrap %+.1f%%)", k, o,
			r.Seccomp[k]["bwrap-filter_vs_bwrap"], r.Seccomp[k]["gosbx_vs_direct"], r.Seccomp[k]["gosbx_vs_bwrap"]))
	}
	r.Targets = append(r.Targets,
		target{"seccomp overhead, syscall-heavy", "< 5%", worst, "% (worst)", worst < 5, strings.Join(parts, ", ")},
		target{"launcher RSS", "< 15 MiB", r.RSS["gosbx"].LauncherKiB / 1024, "MiB", r.RSS["gosbx"].LauncherKiB < 15*1024,
			fmt.Sprintf("gosbx exec %s MiB, bwrap %s MiB; reaper %s MiB vs %s MiB", mib(r.RSS["gosbx"].LauncherKiB), mib(r.RSS["bwrap"].LauncherKiB), mib(r.RSS["gosbx"].ReaperKiB), mib(r.RSS["bwrap"].ReaperKiB))},
	)
	g := r.RSS["gosbx"]
	r.Targets = append(r.Targets, target{"launcher and init unique memory while a command runs (issue 20)", "≤ 1 MiB each",
		math.Max(g.LauncherUSS, g.ReaperUSS) / 1024, "MiB USS (larger of the two)", g.LauncherUSS <= 1024 && g.ReaperUSS <= 1024,
		fmt.Sprintf("launcher %s MiB (Anon %s), init %s MiB (Anon %s); bwrap %s and %s MiB", mib(g.LauncherUSS), mib(g.LauncherAnon), mib(g.ReaperUSS), mib(g.ReaperAnon),
			mib(r.RSS["bwrap"].LauncherUSS), mib(r.RSS["bwrap"].ReaperUSS))})
	if st := r.Startup; st != nil {
		r.Targets = append(r.Targets, target{"gosbx version against an empty Go program (issue 20)", "≤ 1.3×", st.Ratio, "×",
			st.Ratio <= 1.3, fmt.Sprintf("interleaved: version %.3f ms, empty %.3f ms; hyperfine -N %s×", st.VersionMs, st.EmptyMs, f2(st.HFRatio))})
	}
	ct, crt := r.ColdMs["true"], r.ColdRat["true"]
	r.Targets = append(r.Targets, target{"warm path (library pool): start well under bwrap", "Start ≪ bwrap",
		crt["library-pool-start_vs_bwrap-gap"], "× bwrap-gap", ct["library-pool-start"] < ct["bwrap-gap"]/2,
		fmt.Sprintf("library-pool Start %s ms, bwrap-gap %s ms (bwrap %s ms, Start %s×); full run %s ms, %s× bwrap-gap",
			f2(ct["library-pool-start"]), f2(ct["bwrap-gap"]), f2(ct["bwrap"]), f2(crt["library-pool-start"]),
			f2(ct["library-pool"]), f2(crt["library-pool_vs_bwrap-gap"]))})
	if _, err := os.Stat(filepath.Join(*raw, "session-true.json")); err == nil {
		r.Sessions = readSessions(*raw)
		se := r.Sessions
		p("\nSessions (issue 16): a whole `gosbx exec --session S -- /bin/true` call, `session start`, median ms; idle memory\n\n")
		p("| bwrap | gosbx exec | exec --session | session start | exec --session/bwrap | session start/gosbx exec | USS, 1 session | USS per session, 20 |\n|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		p("| %s | %s | %s | %s | %s× | %s× | %s MiB | %s MiB |\n", f2(se.BwrapMs), f2(se.GosbxMs), f2(se.SessionExecMs), f2(se.StartMs),
			f2(se.SessionExecMs/se.BwrapMs), f2(se.StartMs/se.StartGosbxMs), mib(se.USS1KiB), mib(se.USS20KiB))
		sessRatio := se.SessionExecMs / se.BwrapMs
		sessDetail := fmt.Sprintf("exec --session %s ms, bwrap %s ms", f2(se.SessionExecMs), f2(se.BwrapMs))
		if il := readInterleaved(filepath.Join(*raw, "session-true-interleaved.jsonl")); il != nil {
			if r.Interleaved == nil {
				r.Interleaved = map[string]startupResult{}
			}
			r.Interleaved["session-bwrap"], r.Interleaved["session-exec"], r.Interleaved["session-gosbx"] = il["bwrap"], il["gosbx-session"], il["gosbx"]
			p("| interleaved, %d rounds: %.2f | %.2f | %.2f | | %s× | | | |\n", il["bwrap"].Runs, il["bwrap"].Median, il["gosbx"].Median,
				il["gosbx-session"].Median, f2(il["gosbx-session"].Median/il["bwrap"].Median))
			sessRatio = il["gosbx-session"].Median / il["bwrap"].Median
			sessDetail = fmt.Sprintf("interleaved: exec --session %.2f ms, bwrap %.2f ms; hyperfine -N %s× (%s)", il["gosbx-session"].Median, il["bwrap"].Median,
				f2(se.SessionExecMs/se.BwrapMs), sessDetail)
		}
		p("\nPer session, USS (Anon = Anonymous: heap and stacks; the rest is the binary's pages only the session's processes map): 1 idle session %s MiB (Anon %s), 20 idle %s (Anon %s)",
			mib(se.USS1KiB), mib(se.Anon1KiB), mib(se.USS20KiB), mib(se.Anon20KiB))
		if se.Requests > 0 {
			p("; the 20 once each has served %d `exec --session` requests and idled 1 s %s (Anon %s)", se.Requests, mib(se.USS20UsedKiB), mib(se.Anon20UsedKiB))
		}
		p("\n")
		r.Targets = append(r.Targets,
			target{"exec into a running session (/bin/true, whole call)", "≤ 0.5× bwrap", sessRatio, "× bwrap",
				sessRatio <= 0.5, sessDetail},
			target{"idle session memory at 20 sessions", "≤ 2 MiB a session", se.USS20KiB / 1024, "MiB USS", se.USS20KiB <= 2048,
				fmt.Sprintf("supervisor + init + the commands' pid 1 (Anon %s MiB); 20 sessions %s MiB in all; 1 session %s MiB", mib(se.Anon20KiB), mib(se.USS20KiB*20), mib(se.USS1KiB))})
	}
	if _, err := os.Stat(filepath.Join(*raw, "cache-go.json")); err == nil {
		w := readHF(filepath.Join(*raw, "cache-go.json"), "direct", "gosbx-cache")
		c := readHF(filepath.Join(*raw, "cache-go-cold.json"), "gosbx-nocache")
		r.CacheS = map[string]float64{"direct": w["direct"].Median, "gosbx-cache": w["gosbx-cache"].Median, "gosbx-nocache": c["gosbx-nocache"].Median}
		cs := r.CacheS
		p("\nWarm caches (issue 19): `go test -count=1` of a trivial module, median s (%s runs; cold %s runs)\n\n", r.Meta["cache_runs"], r.Meta["cold_go_runs"])
		p("| direct (warm GOCACHE) | build, --cache (second run) | build, --no-cache (cold) | --cache/direct | --no-cache/direct |\n|--:|--:|--:|--:|--:|\n")
		p("| %.3f | %.3f | %.3f | %s× | %s× |\n", cs["direct"], cs["gosbx-cache"], cs["gosbx-nocache"], f2(cs["gosbx-cache"]/cs["direct"]), f2(cs["gosbx-nocache"]/cs["direct"]))
		r.Targets = append(r.Targets, target{"second go test under build (warm cache)", "≤ 2× direct", cs["gosbx-cache"] / cs["direct"], "× direct",
			cs["gosbx-cache"] <= 2*cs["direct"], fmt.Sprintf("build --cache %.3f s, direct %.3f s, --no-cache %.2f s", cs["gosbx-cache"], cs["direct"], cs["gosbx-nocache"])})
	}
	if _, err := os.Stat(filepath.Join(*raw, "egress.jsonl")); err == nil {
		r.Egress = readEgress(*raw)
		eg := r.Egress
		p("\nEgress (issue 17): %s MiB downloads and %s new HTTPS connections from a local server, timed by the client inside the sandbox, median of %s\n\n",
			r.Meta["eg_mb"], r.Meta["eg_reqs"], r.Meta["eg_reps"])
		p("| | direct (--net host) | proxy (variables) | capture (no variables) | proxy/direct | capture/direct |\n|---|--:|--:|--:|--:|--:|\n")
		for _, c := range []string{"http-download", "https-download"} {
			m := eg.MBps[c]
			p("| %s, MB/s | %.0f | %.0f | %.0f | %s× | %s× |\n", c, m["direct"], m["proxy"], m["capture"], f2(m["proxy"]/m["direct"]), f2(m["capture"]/m["direct"]))
		}
		m := eg.MsPerRequest
		p("| https request on a new connection, ms | %.3f | %.3f | %.3f | %+.3f ms | %+.3f ms |\n", m["direct"], m["proxy"], m["capture"], m["proxy"]-m["direct"], m["capture"]-m["direct"])
		worst, worstWhat := math.Inf(1), ""
		for _, c := range []string{"http-download", "https-download"} {
			for _, mode := range []string{"proxy", "capture"} {
				if x := eg.MBps[c][mode] / eg.MBps[c]["direct"]; x < worst {
					worst, worstWhat = x, c+" "+mode
				}
			}
		}
		extra := math.Max(m["proxy"]-m["direct"], m["capture"]-m["direct"])
		r.Targets = append(r.Targets,
			target{"egress throughput (100 MB download)", "≥ 0.9× direct", worst, "× direct (worst)", worst >= 0.9, "worst: " + worstWhat},
			target{"egress latency of a new HTTPS connection", "≤ +0.3 ms", extra, "ms (worst)", extra <= 0.3,
				fmt.Sprintf("direct %.3f ms, proxy %.3f ms, capture %.3f ms a request", m["direct"], m["proxy"], m["capture"])})
	}
	p("\nTargets (issues 8, 16, 17, 19, 20)\n\n| target | wanted | measured | met |\n|---|---|---|---|\n")
	for _, t := range r.Targets {
		met := "**no**"
		if t.Met {
			met = "yes"
		}
		p("| %s | %s | %s %s: %s | %s |\n", t.Name, t.Target, f2(t.Value), t.Unit, t.Detail, met)
	}

	p("\nNotes\n\n")
	for _, n := range r.Notes {
		p("- %s\n", n)
	}

	ents, _ := os.ReadDir(*raw)
	for _, e := range ents {
		r.RawFiles = append(r.RawFiles, filepath.Join("raw", e.Name()))
	}
	sort.Strings(r.RawFiles)

	fmt.Print(b.String())
	data, err := json.MarshalIndent(r, "", "  ")
	check(err)
	check(os.WriteFile(*out, append(data, '\n'), 0o644))
	if *md != "" {
		check(os.WriteFile(*md, []byte(b.String()), 0o644))
	}
}

func readMeta(path string) map[string]string {
	f, err := os.Open(path)
	check(err)
	defer f.Close()
	m := map[string]string{}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), "="); ok {
			m[k] = v
		}
	}
	check(s.Err())
	return m
}

// readHF reads a hyperfine export and checks that it has a result for each of names
// (default: variants).
func readHF(path string, names ...string) map[string]hfResult {
	var doc struct {
		Results []hfResult `json:"results"`
	}
	data, err := os.ReadFile(path)
	check(err)
	check(json.Unmarshal(data, &doc))
	m := map[string]hfResult{}
	for _, r := range doc.Results {
		m[r.Command] = r
	}
	if len(names) == 0 {
		names = variants
	}
	for _, v := range names {
		if _, ok := m[v]; !ok {
			check(fmt.Errorf("%s: no result named %q", path, v))
		}
	}
	return m
}

func readLib(path string) libResult {
	var r libResult
	data, err := os.ReadFile(path)
	check(err)
	check(json.Unmarshal(data, &r))
	return r
}

func readRSS(path string) []rssSample {
	f, err := os.Open(path)
	check(err)
	defer f.Close()
	var out []rssSample
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.TrimSpace(s.Text()) == "" {
			continue
		}
		var r rssSample
		check(json.Unmarshal(s.Bytes(), &r))
		out = append(out, r)
	}
	check(s.Err())
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func pct(a, base float64) float64 { return (a/base - 1) * 100 }
func f2(x float64) string         { return fmt.Sprintf("%.2f", x) }
func mib(kib float64) string      { return fmt.Sprintf("%.1f", kib/1024) }

func atof(s string) float64 {
	var x float64
	_, err := fmt.Sscan(s, &x)
	check(err)
	return x
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

// sessionResults are bench/sessions.sh's measures.
type sessionResults struct {
	BwrapMs       float64 `json:"bwrap_median_ms"`
	GosbxMs       float64 `json:"gosbx_exec_median_ms"`
	SessionExecMs float64 `json:"exec_session_median_ms"`
	StartMs       float64 `json:"session_start_median_ms"`
	StartGosbxMs  float64 `json:"session_start_run_gosbx_exec_median_ms"`
	USS1KiB       float64 `json:"uss_kib_1_session"`
	USS20KiB      float64 `json:"uss_kib_per_session_at_20"`
	// the 20 sessions again, once each has served Requests exec --session calls
	USS20UsedKiB float64 `json:"uss_kib_per_session_at_20_after_requests,omitempty"`
	Requests     int     `json:"requests_each,omitempty"`
	// the Anonymous part of each (smaps_rollup): heap and stacks
	Anon1KiB      float64 `json:"anon_kib_1_session"`
	Anon20KiB     float64 `json:"anon_kib_per_session_at_20"`
	Anon20UsedKiB float64 `json:"anon_kib_per_session_at_20_after_requests,omitempty"`
}

func readSessions(raw string) *sessionResults {
	h := readHF(filepath.Join(raw, "session-true.json"), "bwrap", "gosbx-session", "gosbx")
	st := readHF(filepath.Join(raw, "session-start.json"), "session-start", "gosbx")
	se := &sessionResults{BwrapMs: h["bwrap"].Median * 1e3, GosbxMs: h["gosbx"].Median * 1e3, SessionExecMs: h["gosbx-session"].Median * 1e3,
		StartMs: st["session-start"].Median * 1e3, StartGosbxMs: st["gosbx"].Median * 1e3}
	data, err := os.ReadFile(filepath.Join(raw, "session-memory.jsonl"))
	check(err)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m struct {
			Sessions int     `json:"sessions"`
			Requests int     `json:"requests"`
			USS      float64 `json:"uss_kib"`
			Anon     float64 `json:"anon_kib"`
		}
		check(json.Unmarshal([]byte(line), &m))
		switch {
		case m.Requests > 0:
			se.USS20UsedKiB, se.Anon20UsedKiB, se.Requests = m.USS/float64(m.Sessions), m.Anon/float64(m.Sessions), m.Requests
		case m.Sessions == 1:
			se.USS1KiB, se.Anon1KiB = m.USS, m.Anon
		case m.Sessions == 20:
			se.USS20KiB, se.Anon20KiB = m.USS/20, m.Anon/20
		}
	}
	return se
}

// egressResults are bench/egress.sh's medians by mode (direct, proxy, capture).
type egressResults struct {
	MBps         map[string]map[string]float64 `json:"download_mb_per_s"` // by case, then mode
	MsPerRequest map[string]float64            `json:"https_request_ms"`  // a new connection each
}

func readEgress(raw string) *egressResults {
	data, err := os.ReadFile(filepath.Join(raw, "egress.jsonl"))
	check(err)
	mbps := map[string]map[string][]float64{}
	ms := map[string][]float64{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var x struct {
			Case, Mode string
			Seconds    float64
			Bytes      float64
			Requests   int
		}
		check(json.Unmarshal([]byte(line), &x))
		if x.Case == "https-requests" {
			ms[x.Mode] = append(ms[x.Mode], x.Seconds*1e3/float64(x.Requests))
			continue
		}
		if mbps[x.Case] == nil {
			mbps[x.Case] = map[string][]float64{}
		}
		mbps[x.Case][x.Mode] = append(mbps[x.Case][x.Mode], x.Bytes/1e6/x.Seconds)
	}
	r := &egressResults{MBps: map[string]map[string]float64{}, MsPerRequest: map[string]float64{}}
	for c, byMode := range mbps {
		r.MBps[c] = map[string]float64{}
		for m, v := range byMode {
			r.MBps[c][m] = median(v)
		}
	}
	for m, v := range ms {
		r.MsPerRequest[m] = median(v)
	}
	return r
}

// nobodyResults are bench/nobody.sh's rows: uid 65534's launches by bwrap, gosbx (Go
// init) and gosbx-raw (raw init).
type nobodyResults struct {
	Interleaved map[string]startupResult `json:"cold_start_interleaved"`
	Through     map[string]float64       `json:"throughput_launches_per_second"`
}

// readNobody reads nobody-interleaved.jsonl and nobody-throughput.json (launches per run:
// n), or returns nil when the run had none.
func readNobody(raw string, n float64) *nobodyResults {
	il := readInterleaved(filepath.Join(raw, "nobody-interleaved.jsonl"))
	if il == nil {
		return nil
	}
	names := []string{"bwrap", "gosbx", "gosbx-raw"}
	for _, v := range names {
		if _, ok := il[v]; !ok {
			check(fmt.Errorf("nobody-interleaved.jsonl: no result named %q", v))
		}
	}
	tp := readHF(filepath.Join(raw, "nobody-throughput.json"), names...)
	nb := &nobodyResults{Interleaved: il, Through: map[string]float64{}}
	for _, v := range names {
		nb.Through[v] = n / tp[v].Median
	}
	return nb
}
