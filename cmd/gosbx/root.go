package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise the module
// build info gives it.
var version = ""

// newRootCmd builds the command tree for args. `gosbx exec` and `gosbx version` get
// only their own command, without the completion command (a launch parses its flags
// and builds no other command's flags, help or completion machinery); any other
// first argument (help, completion, a policy or seccomp subcommand, a typo cobra
// suggests a command for) gets the whole tree.
func newRootCmd(args []string) *cobra.Command {
	root := &cobra.Command{
		Use:   "gosbx",
		Short: "Run untrusted commands behind one fail-closed Linux sandbox boundary",
		Long: `gosbx runs a command in new user, mount, pid, network, ipc, uts and cgroup
namespaces, on a fresh read-only root built from bind mounts, with one writable
workspace, no capabilities and no network unless asked. If the sandbox cannot be
built, the command does not run and gosbx exits 125.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	// --version is the root's own flag, not cobra's Version field: cobra prints that
	// field through a text/template only when its output is changed
	// (SetVersionTemplate), and a reachable text/template makes the linker keep every
	// exported method of every type (its evalField calls reflect's MethodByName): 1.9
	// MB of binary and ~15 page faults on every start (docs/decisions.md, "Speed, sixth
	// attempt: the launcher's start").
	showVersion := root.Flags().BoolP("version", "v", false, "version for gosbx")
	root.RunE = func(c *cobra.Command, _ []string) error {
		if *showVersion {
			fmt.Fprintln(c.OutOrStdout(), "gosbx "+versionString())
			return nil
		}
		return c.Help() // what cobra does for a root without a Run
	}
	if len(args) > 0 {
		switch args[0] {
		case "exec":
			root.CompletionOptions.DisableDefaultCmd = true
			root.AddCommand(newExecCmd())
			return root
		case "version":
			root.CompletionOptions.DisableDefaultCmd = true
			root.AddCommand(newVersionCmd())
			return root
		}
	}
	root.AddCommand(newExecCmd(), newSessionCmd(), newJobCmd(), newPolicyCmd(), newSeccompCmd(), newDoctorCmd(), newCacheCmd(), newVersionCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the gosbx version",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintln(c.OutOrStdout(), "gosbx "+versionString())
			return nil
		},
	}
}

// versionString is the -ldflags version, else the module version and VCS revision.
func versionString() string {
	if version != "" {
		return version
	}
	v := "(devel)"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			v += " " + s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			v += "+dirty"
		}
	}
	return v
}
