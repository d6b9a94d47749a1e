package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gosbx/gosbx/policy"
)

// prepareCache makes the launch's cache directory on the host (policy.Cache.Prepare),
// or says why the policy's cache is off on this host.
func prepareCache(eff *policy.Policy) error {
	if n := eff.CacheNote(); n != "" {
		fmt.Fprintf(os.Stderr, "gosbx: note: %s\n", n)
	}
	if c := eff.CacheDir(); c != nil {
		return c.Prepare()
	}
	return nil
}

func newCacheCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "cache",
		Short: "list or remove the workspaces' cache directories ($XDG_CACHE_HOME/gosbx, else ~/.cache/gosbx)",
	}
	var asJSON bool
	ls := &cobra.Command{
		Use:   "ls",
		Short: "list the cache directories: id, workspace, size, last use",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			root, err := cacheRoot()
			if err != nil {
				return err
			}
			list, err := policy.ListCaches(root)
			if err != nil {
				return &opFailure{err}
			}
			if asJSON {
				if list == nil {
					list = []policy.CacheEntry{}
				}
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tSIZE\tLAST USE\tWORKSPACE")
			for _, e := range list {
				last := "-"
				if !e.LastUse.IsZero() {
					last = e.LastUse.Local().Format(time.DateTime)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", e.ID, humanSize(e.Size), last, e.Workspace)
			}
			return w.Flush()
		},
	}
	ls.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	var all bool
	rm := &cobra.Command{
		Use:   "rm [--all | WORKSPACE | ID]...",
		Short: "remove cache directories: a workspace's (by its path) or by id, or all",
		RunE: func(c *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return usageError{errors.New("cache rm: name workspaces or ids, or --all")}
			}
			root, err := cacheRoot()
			if err != nil {
				return err
			}
			ids := args
			if all {
				list, err := policy.ListCaches(root)
				if err != nil {
					return &opFailure{err}
				}
				ids = nil
				for _, e := range list {
					ids = append(ids, e.ID)
				}
			}
			for _, a := range ids {
				id := a
				// a directory that exists names a workspace: its id, as the launch computes it
				if st, err := os.Stat(a); err == nil && st.IsDir() {
					canon, err := filepath.EvalSymlinks(a)
					if err == nil {
						canon, err = filepath.Abs(canon)
					}
					if err == nil {
						id, err = policy.WorkspaceID(canon)
					}
					if err != nil {
						return &opFailure{err}
					}
				}
				if err := policy.RemoveCache(root, id); err != nil {
					return &opFailure{err}
				}
				fmt.Fprintf(os.Stderr, "gosbx: removed the cache %s\n", id)
			}
			return nil
		},
	}
	rm.Flags().BoolVar(&all, "all", false, "remove every cache directory of yours")
	c.AddCommand(ls, rm)
	return c
}

// cacheRoot is the caller's cache root (policy.CacheRoot).
func cacheRoot() (*policy.Cache, error) {
	h, err := policy.CurrentHost()
	if err != nil {
		return nil, err
	}
	c, err := policy.CacheRoot(h)
	if err != nil {
		return nil, &opFailure{err}
	}
	return c, nil
}

// humanSize prints bytes in binary units.
func humanSize(n int64) string {
	const unit = 1024
	if n < 0 {
		return "unknown" // policy.CacheEntry.Size: too deep or unreadable
	}
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	d, e := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		d *= unit
		e++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(d), "KMGTPE"[e])
}
