package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

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
		Short: "Write the policy's seccomp filter (for root, with the set-ID rules a root caller's launch adds): raw sock_filter array (bwrap --seccomp reads it; refused on a terminal) or a listing naming calls, arguments and actions",
		Example: `  gosbx seccomp export --format text | less
  gosbx seccomp export --policy strict > filter.bpf && bwrap --seccomp 3 ... 3<filter.bpf`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p, err := policy.Load(pol)
			if err != nil {
				return &setupFailure{step: "policy", err: err}
			}
			// as a launch by this caller, but the set-ID calls fail with EPERM: no init answers
			sc := policy.ExportSeccomp(policy.NetworkSeccomp(p.Seccomp, p.Network.Mode), os.Geteuid())
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
				// Binary on a terminal is noise at best and escape sequences at worst.
				if _, terr := unix.IoctlGetTermios(int(os.Stdout.Fd()), unix.TCGETS); terr == nil {
					return usageError{fmt.Errorf("--format bpf writes binary and stdout is a terminal: redirect it (> filter.bpf) or read it with --format text")}
				}
				_, err = os.Stdout.Write(prog.Bytes())
			case "text":
				var text string
				if text, err = seccomp.Listing(spec); err != nil {
					return &setupFailure{step: "seccomp", err: err}
				}
				_, err = fmt.Fprint(os.Stdout, text)
			default:
				return usageError{fmt.Errorf("--format %q: want bpf or text", format)}
			}
			return err
		},
	}
	export.Flags().StringVar(&pol, "policy", "", "a built-in profile (agent, strict, build) or a policy `FILE` (default agent)")
	export.Flags().StringVar(&format, "format", "bpf", "`bpf` (struct sock_filter array, native endian; stdout must not be a terminal) or text (rules with calls, arguments and actions named)")
	c.AddCommand(export, newContainerProfileCmd())
	return c
}

// defaultContainerBase is Podman's default seccomp profile (Debian's package
// golang-github-containers-common installs it with podman).
const defaultContainerBase = "/usr/share/containers/seccomp.json"

func newContainerProfileCmd() *cobra.Command {
	var base string
	c := &cobra.Command{
		Use:   "container-profile [--base FILE]",
		Short: "Write a container seccomp profile (Docker, Podman, Kubernetes) that lets gosbx build its sandbox inside: the runtime's default profile plus exactly what gosbx calls",
		Example: `  gosbx seccomp container-profile > gosbx.json    # from Podman's /usr/share/containers/seccomp.json
  gosbx seccomp container-profile --base docker-default.json > gosbx.json
  docker run --security-opt seccomp=gosbx.json ...`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			b, err := os.ReadFile(base)
			if err != nil {
				return usageError{fmt.Errorf("--base: %w (name a container runtime's default seccomp profile)", err)}
			}
			out, err := seccomp.ContainerProfile(b)
			if err != nil {
				return usageError{fmt.Errorf("--base %s: %w", base, err)}
			}
			_, err = os.Stdout.Write(out)
			return err
		},
	}
	c.Flags().StringVar(&base, "base", defaultContainerBase, "the container runtime's default seccomp profile (JSON) to add gosbx's calls to")
	return c
}
