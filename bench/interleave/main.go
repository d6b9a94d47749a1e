// Command interleave times commands round-robin: each round starts every command once,
// in turn, so that a machine whose speed drifts over minutes (a shared VM) slows every
// variant alike. It prints, per command, the median, the 10th and 90th percentile and
// the mean of the wall time from fork to reaping, in ms, and with -json one JSON object
// per command.
//
//	interleave [-n ROUNDS] [-warmup N] [-pause D] [-json] NAME=CMD [NAME=CMD ...]
//
// -pause sleeps D (untimed) before each timed start: a caller that pauses between
// commands (an agent) rather than one that runs them back to back.
//
// CMD is split on spaces (no quoting); stdin, stdout and stderr are /dev/null. A command
// that exits non-zero stops the run (exit 1), so a broken variant is not timed.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

type variant struct {
	name  string
	argv  []string
	times []float64 // ms
}

func main() {
	rounds := flag.Int("n", 200, "rounds")
	warmup := flag.Int("warmup", 5, "untimed rounds first")
	asJSON := flag.Bool("json", false, "print one JSON object per command")
	pause := flag.Duration("pause", 0, "untimed sleep before each start")
	flag.Parse()
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
			c := exec.Command(v.argv[0], v.argv[1:]...)
			if *pause > 0 {
				time.Sleep(*pause)
			}
			t := time.Now()
			err := c.Run()
			d := time.Since(t)
			if err != nil {
				fmt.Fprintf(os.Stderr, "interleave: %s: %v\n", v.name, err)
				os.Exit(1)
			}
			if r >= *warmup {
				v.times = append(v.times, float64(d.Microseconds())/1000)
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
			b, _ := json.Marshal(map[string]any{"name": v.name, "median": q(0.5), "p10": q(0.1), "p90": q(0.9),
				"mean": sum / float64(len(s)), "runs": len(s)})
			fmt.Println(string(b))
			continue
		}
		fmt.Printf("%-24s median %7.3f ms  p10 %7.3f  p90 %7.3f  mean %7.3f  (%d runs)\n", v.name, q(0.5), q(0.1), q(0.9), sum/float64(len(s)), len(s))
	}
}
