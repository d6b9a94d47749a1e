// Command interleave times commands round-robin: each round starts every command once,
// in turn, so that a machine whose speed drifts over minutes (a shared VM) slows every
// variant alike. It prints, per command, the median, the 10th and 90th percentile and
// the mean of the wall time from fork to reaping, in ms, and with -json one JSON object
// per command.
//
//	interleave [-n ROUNDS] [-warmup N] [-pause D] [-json] [-cpu] NAME=CMD [NAME=CMD ...]
//
// -pause sleeps D (untimed) before each timed start: a caller that pauses between
// commands (an agent) rather than one that runs them back to back.
//
// CMD is split on spaces (no quoting); stdin, stdout and stderr are /dev/null. A command
// that exits non-zero stops the run (exit 1), so a broken variant is not timed.
//
// With -cpu it also counts the CPU time (user + system, getrusage(2)) of every process a
// run starts: it is a child subreaper (prctl(2) PR_SET_CHILD_SUBREAPER), so a process the
// command leaves behind (a sandbox's pid 1 that the launcher does not wait for) is
// reparented to it; after each timed run it reaps until ECHILD and adds the rusage of
// each process reaped. Waiting for them is not timed. A launcher's own rusage (what
// hyperfine's user and system see) counts only the children it waited for.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

type variant struct {
	name  string
	argv  []string
	times []float64 // ms
	cpu   []float64 // ms, user + system of every process of the run (-cpu)
}

func main() {
	rounds := flag.Int("n", 200, "rounds")
	warmup := flag.Int("warmup", 5, "untimed rounds first")
	asJSON := flag.Bool("json", false, "print one JSON object per command")
	cpu := flag.Bool("cpu", false, "also count the CPU time of every process a run starts (as a child subreaper)")
	pause := flag.Duration("pause", 0, "untimed sleep before each start")
	flag.Parse()
	if *cpu {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			fmt.Fprintf(os.Stderr, "interleave: prctl PR_SET_CHILD_SUBREAPER: %v\n", err)
			os.Exit(1)
		}
	}
	var vs []*variant
	for _, a := range flag.Args() {
		name, cmd, ok := strings.Cut(a, "=")
		if !ok || len(strings.Fields(cmd)) == 0 {
			fmt.Fprintf(os.Stderr, "interleave: %q: want NAME=CMD\n", a)
			os.Exit(2)
		}
		vs = append(vs, &variant{name: name, argv: strings.Fields(cmd)})
	}
	for r := 0; r < *warmup+*rounds; r++ {
		for _, v := range vs {
			if *pause > 0 {
				time.Sleep(*pause)
			}
			res, err := run(v.argv, *cpu)
			if err != nil {
				fmt.Fprintf(os.Stderr, "interleave: %s: %v\n", v.name, err)
				os.Exit(1)
			}
			if r >= *warmup {
				v.times = append(v.times, res.wallMs)
				if *cpu {
					v.cpu = append(v.cpu, res.cpuMs)
				}
			}
		}
	}
	for _, v := range vs {
		s := append([]float64(nil), v.times...)
		sort.Float64s(s)
		q := func(f float64) float64 { return s[int(f*float64(len(s)-1))] }
		var sum float64
		for _, x := range s {
			sum += x
		}
		if *asJSON {
			o := map[string]any{"name": v.name, "median": q(0.5), "p10": q(0.1), "p90": q(0.9),
				"mean": sum / float64(len(s)), "runs": len(s)}
			if *cpu {
				o["cpu_ms_mean"], o["cpu_ms_median"] = mean(v.cpu), medianOf(v.cpu)
			}
			b, _ := json.Marshal(o)
			fmt.Println(string(b))
			continue
		}
		fmt.Printf("%-24s median %7.3f ms  p10 %7.3f  p90 %7.3f  mean %7.3f  (%d runs)", v.name, q(0.5), q(0.1), q(0.9), sum/float64(len(s)), len(s))
		if *cpu {
			fmt.Printf("  cpu mean %7.3f ms", mean(v.cpu))
		}
		fmt.Println()
	}
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func medianOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
