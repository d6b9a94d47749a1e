package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

func newPolicyCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "policy",
		Short: "Show, check and export sandbox policies",
		Long: `A policy is the declarative boundary of a sandbox, in YAML or JSON: what of the host is
visible and how, the workspace, protected and masked paths, the environment, the network
and the process. Built-in profiles: agent (the default), strict, build. A file can
"extends:" one of them. 'gosbx policy schema' prints the JSON Schema for editors.`,
	}
	c.AddCommand(newPolicyShowCmd(), newPolicyCheckCmd(), newPolicyExportCmd(), newPolicySchemaCmd())
	return c
}

func newPolicyShowCmd() *cobra.Command {
	var b boundaryFlags
	c := &cobra.Command{
		Use:   "show [--policy P] [exec flags]",
		Short: "Print the effective policy after flags and variable expansion, as YAML",
		Example: `  gosbx policy show                    # the agent profile for the current directory
  gosbx policy show --policy strict --workspace ~/src/app
  gosbx policy show --policy ./sandbox.yaml --rw /var/tmp/cache`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			eff, _, _, err := b.effective(nil)
			if err != nil {
				return err
			}
			out, err := policy.MarshalYAML(eff)
			if err != nil {
				return err
			}
			name := b.policy
			if name == "" {
				name = policy.DefaultProfile
			}
			fmt.Fprintf(c.OutOrStdout(), "# effective policy: %s, with the flags given and variables expanded\n", name)
			if n := eff.EmptyRootNote(); n != "" {
				fmt.Fprintf(c.ErrOrStderr(), "gosbx: warning: %s\n", n)
			}
			if cd := eff.CacheDir(); cd != nil {
				fmt.Fprintf(c.OutOrStdout(), "# cache: %s (workspace id %s), bound read-write as ~/.cache\n", cd.Source(), cd.ID)
			} else if n := eff.CacheNote(); n != "" {
				fmt.Fprintf(c.OutOrStdout(), "# %s\n", n)
			}
			fmt.Fprint(c.OutOrStdout(), string(out))
			printToolchains(c.OutOrStdout(), eff)
			if env := eff.GitIdentityEnv(); len(env) > 0 {
				// not in environment.set: the variables are the caller's, not the policy's
				fmt.Fprintf(c.OutOrStdout(), "# git: commit sets your identity (user.name, user.email of your git config) where the policy and flags do not: %s\n", strings.Join(shownAll(env), " "))
			}
			if note := eff.Resources.CPUPlacement(); note != "" {
				fmt.Fprintf(c.OutOrStdout(), "# %s\n", note)
			}
			return nil
		},
	}
	b.register(c.Flags())
	return c
}

func newPolicyCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE...",
		Short: "Validate policy files; exit 125 if any is invalid",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, files []string) error {
			bad := 0
			for _, f := range files {
				p, err := policy.LoadFile(f)
				if err != nil {
					fmt.Fprintln(c.ErrOrStderr(), "gosbx: "+err.Error())
					bad++
					continue
				}
				ext := ""
				if p.Base() != "" {
					ext = " (extends " + p.Base() + ")"
				}
				fmt.Fprintf(c.OutOrStdout(), "%s: ok%s\n", f, ext)
				if n := p.EmptyRootNote(); n != "" {
					fmt.Fprintf(c.ErrOrStderr(), "gosbx: warning: %s: %s\n", f, n)
				}
				// valid, but a launch on this host would stop at a required bind
				if host, err := policy.CurrentHost(); err == nil {
					for _, m := range p.MissingBinds(host) {
						fmt.Fprintf(c.ErrOrStderr(), "gosbx: warning: %s: %s does not exist here, and a launch under this policy "+
							"stops there (125); mark it {path: %s, optional: true} if it may be absent\n", f, m.Path, m.Given)
					}
				}
			}
			if bad > 0 {
				return statusError(125)
			}
			return nil
		},
	}
}

func newPolicyExportCmd() *cobra.Command {
	var b boundaryFlags
	var oci bool
	c := &cobra.Command{
		Use:   "export --oci [--policy P] [exec flags] [-- CMD [ARGS...]]",
		Short: "Print the compiled config as a runtime-spec config.json",
		Long: `Print, as a runtime-spec config.json, the config that 'gosbx exec' with the same flags
would launch (CMD defaults to sh); gosbx's own fields (symlinks, limits, id range, after-run
cleanup) are org.gosbx.* annotations, and nsinit/config.FromSpec reads the file back. Building
it is the same code path as exec: host paths are canonicalized, protected and masked paths
found, the seccomp filter compiled.`,
		DisableFlagsInUseLine: true,
		RunE: func(c *cobra.Command, args []string) error {
			if !oci {
				return usageError{errors.New("export: say --oci (the only format)")}
			}
			if len(args) == 0 {
				args = []string{"sh"}
			}
			eff, _, host, err := b.effective(args)
			if err != nil {
				return err
			}
			cfg, err := policy.Build(eff, args, host)
			if err != nil {
				return &setupFailure{step: "policy", err: err}
			}
			spec, err := config.ToSpec(cfg)
			if err != nil {
				return &setupFailure{step: "policy", err: err}
			}
			enc := json.NewEncoder(c.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(spec)
		},
	}
	f := c.Flags()
	f.SetInterspersed(false)
	f.BoolVar(&oci, "oci", false, "runtime-spec config.json format")
	b.register(f)
	return c
}

func newPolicySchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of policy files",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := os.Stdout.Write(policy.Schema())
			return err
		},
	}
}

// printToolchains lists, as YAML comments after the policy, the toolchain roots
// filesystem.toolchains bound read-only and what led to each, and what auto mode left out.
func printToolchains(w io.Writer, eff *policy.Policy) {
	bound, skipped := eff.Toolchains()
	if len(bound) == 0 && len(skipped) == 0 {
		return
	}
	fmt.Fprintln(w, "# toolchains bound read-only (filesystem.toolchains):")
	for _, b := range bound {
		fmt.Fprintf(w, "#   %s  <- %s\n", commentSafe(b.Path), commentSafe(b.Why))
	}
	if len(skipped) > 0 {
		fmt.Fprintln(w, "# toolchain paths not bound:")
		for _, s := range skipped {
			fmt.Fprintf(w, "#   %s  <- %s\n", commentSafe(s.Path), commentSafe(s.Why))
		}
	}
}

// commentSafe keeps a path (a PATH entry is the caller's, any bytes) on its comment line.
func commentSafe(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return strconv.Quote(s)
	}
	return s
}
