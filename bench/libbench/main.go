// Command libbench times gosbx's library API: one long-lived Go program that links
// nsinit and, for each launch, compiles the policy (policy.Compile) and runs the command
// in a fresh sandbox (nsinit.Command(cfg).Run()). There is no launcher process start:
// only the re-executed init stage pays a Go runtime start.
//
//	libbench -workspace DIR [-policy FILE] [-n 200] [-warmup 10] [-P 1] [-pool N] [-gap D] [-label L] [-json OUT] -- /bin/true
//
// With -pool N the policy is compiled once and every launch takes a sandbox built ahead
// from an nsinit.Pool of N (Pool.Command(process).Start, then Wait); -gap pauses each
// caller between launches, unmeasured, as an agent's think time lets the pool refill.
//
// With -P above 1, -n launches are shared by P goroutines (throughput); the per-launch
// times are then wall times under contention. It prints one line of medians and, with
// -json, writes every per-launch time (milliseconds) for bench/run.sh's report.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/policy"
)

type result struct {
	Label       string    `json:"label"`
	Command     []string  `json:"command"`
	Policy      string    `json:"policy"`
	Launches    int       `json:"launches"`
	Concurrency int       `json:"concurrency"`
	WallSeconds float64   `json:"wall_seconds"`
	PerSecond   float64   `json:"launches_per_second"`
	MedianMs    float64   `json:"median_ms"`
	MeanMs      float64   `json:"mean_ms"`
	P90Ms       float64   `json:"p90_ms"`
	MinMs       float64   `json:"min_ms"`
	CompileMs   float64   `json:"compile_median_ms"`         // policy.Compile alone
	StartMs     float64   `json:"start_median_ms,omitempty"` // with -pool: Start alone (to the command's execve)
	RunMs       float64   `json:"run_median_ms"`             // nsinit.Command(cfg).Run() alone
	TimesMs     []float64 `json:"times_ms"`                  // Compile + Run, each launch
}

func main() {
	nsinit.Init() // must come first: this binary is re-executed as the sandbox's init

	ws := flag.String("workspace", "", "the sandbox's workspace (required)")
	polFile := flag.String("policy", "", "a policy file (default: the built-in agent profile)")
	n := flag.Int("n", 200, "launches measured")
	warm := flag.Int("warmup", 10, "launches run first and not measured")
	par := flag.Int("P", 1, "concurrent callers (goroutines)")
	label := flag.String("label", "library", "name of this measurement")
	out := flag.String("json", "", "write the results as JSON to this file")
	poolSize := flag.Int("pool", 0, "take sandboxes from an nsinit.Pool of this size, built ahead from the policy compiled once")
	gap := flag.Duration("gap", 0, "pause between one caller's launches, not measured (lets a pool refill, as an agent's think time does)")
	flag.Parse()
	args := flag.Args()
	if *ws == "" || len(args) == 0 || *n < 1 || *par < 1 {
		fmt.Fprintln(os.Stderr, "usage: libbench -workspace DIR [-policy FILE] [-n N] [-warmup N] [-P N] [-label L] [-json OUT] -- CMD [ARGS...]")
		os.Exit(2)
	}
	var pol *policy.Policy
	if *polFile != "" {
		p, err := policy.LoadFile(*polFile)
		if err != nil {
			fail(err)
		}
		pol = p
	}
	host, err := policy.CurrentHost()
	if err != nil {
		fail(err)
	}

	var pool *nsinit.Pool
	if *poolSize > 0 {
		tmpl, err := policy.Compile(policy.Options{Policy: pol, Workspace: *ws, Args: args}, host)
		if err != nil {
			fail(err)
		}
		if pool, err = nsinit.NewPool(tmpl, *poolSize); err != nil {
			fail(err)
		}
		defer pool.Close()
		proc := tmpl.Process
		// The template is compiled once; the first time is Start (to the command's
		// execve), the second the rest of Run (Wait).
		launchPool := func() (start, run time.Duration) {
			t1 := time.Now()
			cmd := pool.Command(proc)
			if err := cmd.Start(); err != nil {
				fail(err)
			}
			started := time.Since(t1)
			if err := cmd.Wait(); err != nil {
				fail(err)
			}
			if cmd.Result == nil || cmd.Result.ExitCode != 0 {
				fail(fmt.Errorf("command failed: %+v", cmd.Result))
			}
			return started, time.Since(t1) - started
		}
		measure(*label, args, *polFile, *n, *warm, *par, *gap, *out, true, launchPool)
		return
	}
	launch := func() (compile, run time.Duration) {
		t0 := time.Now()
		cfg, err := policy.Compile(policy.Options{Policy: pol, Workspace: *ws, Args: args}, host)
		if err != nil {
			fail(err)
		}
		t1 := time.Now()
		cmd := nsinit.Command(cfg) // stdio nil: /dev/null
		if err := cmd.Run(); err != nil {
			fail(err)
		}
		if cmd.Result == nil || cmd.Result.ExitCode != 0 {
			fail(fmt.Errorf("command failed: %+v", cmd.Result))
		}
		return t1.Sub(t0), time.Since(t1)
	}
	measure(*label, args, *polFile, *n, *warm, *par, *gap, *out, false, launch)
}

// measure runs warm launches, then n launches from par callers, and prints and writes
// the results. launch returns two parts of one launch: compile and run, or with a pool
// (pooled) Start and Wait.
func measure(label string, args []string, polFile string, n, warm, par int, gap time.Duration, out string, pooled bool, launch func() (time.Duration, time.Duration)) {
	for i := 0; i < warm; i++ {
		launch()
		time.Sleep(gap)
	}
	compiles := make([]float64, n)
	runs := make([]float64, n)
	totals := make([]float64, n)
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for g := 0; g < par; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, r := launch()
				compiles[i], runs[i], totals[i] = ms(c), ms(r), ms(c+r)
				time.Sleep(gap)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	wall := time.Since(start) - time.Duration(n/par)*gap

	res := result{
		Label: label, Command: args, Policy: polFile, Launches: n, Concurrency: par,
		WallSeconds: wall.Seconds(), PerSecond: float64(n) / wall.Seconds(),
		MedianMs: quantile(totals, 0.5), MeanMs: mean(totals), P90Ms: quantile(totals, 0.9),
		MinMs: quantile(totals, 0), CompileMs: quantile(compiles, 0.5), RunMs: quantile(runs, 0.5),
		TimesMs: totals,
	}
	if res.Policy == "" {
		res.Policy = "agent"
	}
	if pooled {
		res.StartMs, res.CompileMs = res.CompileMs, 0
		fmt.Printf("%-28s %4d launches, %d callers: median %.2f ms (Start %.2f + Wait %.2f), p90 %.2f ms, %.0f launches/s\n",
			res.Label, res.Launches, res.Concurrency, res.MedianMs, res.StartMs, res.RunMs, res.P90Ms, res.PerSecond)
	} else {
		fmt.Printf("%-28s %4d launches, %d callers: median %.2f ms (compile %.2f + run %.2f), p90 %.2f ms, %.0f launches/s\n",
			res.Label, res.Launches, res.Concurrency, res.MedianMs, res.CompileMs, res.RunMs, res.P90Ms, res.PerSecond)
	}
	if out != "" {
		data, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			fail(err)
		}
		if err := os.WriteFile(out, append(data, '\n'), 0o644); err != nil {
			fail(err)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func quantile(v []float64, q float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	i := q * float64(len(s)-1)
	lo := int(i)
	if lo+1 >= len(s) {
		return s[lo]
	}
	return s[lo] + (i-float64(lo))*(s[lo+1]-s[lo])
}

func mean(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t / float64(len(v))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "libbench:", err)
	os.Exit(1)
}
