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
		Short: "list the cache directories: id, size, last use, workspace (\"(gone)\": it no longer exists; cache rm --gone)",
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
				ws := e.Workspace
				if e.Gone {
					ws += " (gone)"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", e.ID, humanSize(e.Size), last, ws)
			}
			return w.Flush()
		},
	}
	ls.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	var all, gone bool
	rm := &cobra.Command{
		Use:   "rm [--all | --gone | WORKSPACE | ID]...",
		Short: "remove cache directories: a workspace's (by its path, also one that no longer exists) or by id, those of workspaces gone, or all",
		RunE: func(c *cobra.Command, args []string) error {
			if all && gone || (all || gone) == (len(args) > 0) {
				return usageError{errors.New("cache rm: name workspaces or ids, or --all, or --gone")}
			}
			root, err := cacheRoot()
			if err != nil {
				return err
			}
			var ids []string
			if all || gone {
				list, err := policy.ListCaches(root)
				if err != nil {
					return &opFailure{err}
				}
				for _, e := range list {
					if all || e.Gone {
						ids = append(ids, e.ID)
					}
				}
			}
			for _, a := range args {
				found, err := cacheIDsFor(root, a)
				if err != nil {
					return &opFailure{err}
				}
				ids = append(ids, found...)
			}
			for _, id := range ids {
				if err := policy.RemoveCache(root, id); err != nil {
					return &opFailure{err}
				}
				fmt.Fprintf(os.Stderr, "gosbx: removed the cache %s\n", id)
			}
			return nil
		},
	}
	rm.Flags().BoolVar(&all, "all", false, "remove every cache directory of yours")
	rm.Flags().BoolVar(&gone, "gone", false, "remove the cache directories of workspaces that no longer exist (cache ls marks them gone)")
	c.AddCommand(ls, rm)
	return c
}

// cacheIDsFor is the entries `cache rm ARG` names: a directory that exists names a
// workspace, by its id as the launch computes it; a path that does not, or an existing
// workspace with no entry under its id, names the entries whose recorded workspace it
// is (a workspace removed, or removed and made again); else ARG is an id. Nothing
// found is an error that points at the ID column of cache ls.
func cacheIDsFor(root *policy.Cache, a string) ([]string, error) {
	notFound := func(what string) error {
		return fmt.Errorf("cache rm: %s: name an entry by the ID column of `gosbx cache ls` (or a workspace it shows)", what)
	}
	byWorkspace := func(ws string) ([]string, error) {
		list, err := policy.ListCaches(root)
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, e := range list {
			if e.Workspace == ws {
				ids = append(ids, e.ID)
			}
		}
		return ids, nil
	}
	if st, err := os.Stat(a); err == nil && st.IsDir() {
		canon, err := filepath.EvalSymlinks(a)
		if err == nil {
			canon, err = filepath.Abs(canon)
		}
		var id string
		if err == nil {
			id, err = policy.WorkspaceID(canon)
		}
		if err != nil {
			return nil, err
		}
		if _, err := os.Lstat(filepath.Join(root.Root(), id)); err == nil {
			return []string{id}, nil
		}
		ids, err := byWorkspace(canon)
		if err != nil || len(ids) > 0 {
			return ids, err
		}
		// the state asked for already holds (a second `cache rm` of it): exit 0, as
		// rm -f does, with a note; an argument that names no workspace and no entry
		// stays an error (a typo cannot be told from it)
		fmt.Fprintf(os.Stderr, "gosbx: cache rm %s: no cache entry for this workspace (id %s): nothing to remove\n", canon, id)
		return nil, nil
	}
	if policy.ValidCacheID(a) {
		if _, err := os.Lstat(filepath.Join(root.Root(), a)); err == nil {
			return []string{a}, nil
		}
	}
	// a path that does not exist (a workspace since removed): the entries recorded for it
	ws, err := filepath.Abs(a)
	if err != nil {
		return nil, err
	}
	ids, err := byWorkspace(ws)
	if err != nil || len(ids) > 0 {
		return ids, err
	}
	if policy.ValidCacheID(a) {
		return nil, notFound(fmt.Sprintf("no cache entry has the id %q, nor records the workspace %s", a, ws))
	}
	return nil, notFound(fmt.Sprintf("%q is not a cache id, and no cache entry records the workspace %s", a, ws))
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
