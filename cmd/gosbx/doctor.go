package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/doctor"
)

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	var workspace string
	var allowHosts []string
	return func() *cobra.Command {
		c := &cobra.Command{
			Use:   "doctor [--json]",
			Short: "Prove that this host can build the sandbox, or say exactly why not",
			Long: `Exercise every kernel feature the sandbox needs, as this caller: user namespaces and id
maps, each namespace type, the new mount API, overlayfs, pidfd_open/close_range/openat2,
for a root caller whether the workspace (--workspace, default the current directory) can be
idmapped, Landlock, the cgroup mode and whether limits can be applied, then one real sandbox under the
default policy with an escape probe inside (write outside the workspace, read a host file,
reach the host's loopback, TIOCSTI, create a user namespace). Failures come with the fix.

Exit status: 0 when everything the default policy needs works (warnings do not fail), 1
otherwise. --json prints {"version": 1, "ok": bool, "uid": N, "checks": [{"name", "status"
(ok, warn, fail, skip), "detail", "fix"}]}.`,
			Args: cobra.NoArgs,
			RunE: func(c *cobra.Command, _ []string) error {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				if workspace != "" {
					if st, err := os.Stat(workspace); err != nil || !st.IsDir() {
						return usageError{fmt.Errorf("--workspace %s: not a directory", workspace)}
					}
				}
				completeJournals(nil) // what killed launches left undone
				r := doctor.RunFor(exe, workspace)
				if len(allowHosts) > 0 {
					r.Checks = append(r.Checks, doctor.CheckEgress(allowHosts)...)
				}
				if asJSON {
					r.WriteJSON(c.OutOrStdout())
				} else {
					r.WriteTable(c.OutOrStdout(), terminalWidth(c.OutOrStdout()))
				}
				if !r.OK {
					return statusError(1)
				}
				return nil
			},
		}
		c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
		c.Flags().StringArrayVar(&allowHosts, "allow-host", nil, "also check, from the host side, that --net proxy's `PATTERN` resolves to addresses the proxy accepts and answers (repeatable)")
		c.Flags().StringVar(&workspace, "workspace", "", "for a root caller: check that `DIR` (default: the current directory) can be idmapped")
		return c
	}()
}

// terminalWidth is the columns of the terminal w writes to (TIOCGWINSZ, tty_ioctl(4)),
// or 0 when w is not a terminal (a pipe, a file): the doctor's table then prints each
// detail whole.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 0
	}
	return int(ws.Col)
}
