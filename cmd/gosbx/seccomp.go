package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gosbx/gosbx/policy"
	"github.com/gosbx/gosbx/seccomp"
)

func newSeccompCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "seccomp",
		Short: "Export the seccomp filter a policy generates",
	}
	var pol, format string
	export := &cobra.Command{
		Use:   "export [--policy P] [--format bpf|text]",
		Short: "Write the policy's seccomp filter (for root, with the set-ID rules a root caller's launch adds): raw sock_filter array (bwrap --seccomp reads it) or a listing",
		Example: `  gosbx seccomp export --format text | less
  gosbx seccomp export --policy strict > filter.bpf && bwrap --seccomp 3 ... 3<filter.bpf`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p, err := policy.Load(pol)
			if err != nil {
				return &setupFailure{step: "policy", err: err}
			}
			sc := policy.CallerSeccomp(policy.NetworkSeccomp(p.Seccomp, p.Network.Mode), os.Geteuid()) // as a launch by this caller
			spec, err := sc.Spec()
			if err != nil {
				return &setupFailure{step: "seccomp", err: err}
			}
			prog, err := seccomp.Compile(spec)
			if err != nil {
				return &setupFailure{step: "seccomp", err: err}
			}
			switch format {
			case "bpf":
				_, err = os.Stdout.Write(prog.Bytes())
			case "text":
				_, err = fmt.Fprint(os.Stdout, prog.Text())
			default:
				return usageError{fmt.Errorf("--format %q: want bpf or text", format)}
			}
			return err
		},
	}
	export.Flags().StringVar(&pol, "policy", "", "a built-in profile (agent, strict, build) or a policy `FILE` (default agent)")
	export.Flags().StringVar(&format, "format", "bpf", "`bpf` (struct sock_filter array, native endian) or text")
	c.AddCommand(export)
	return c
}
