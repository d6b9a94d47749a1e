package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/cleanup"
)

// mountPointCleanups are the after-run cleanup entries for the mount points the launch
// creates on the host: a tmpfs whose destination lies inside a bind of a host tree (the
// workspace, a --rw tree) and does not exist there is mounted on a directory the mount
// step makes through the bind, with its missing parents, on the host. The first missing
// component is removed after the run (cleanup.RemoveIfCreated), with anything put in
// it. A path through a symlink on the host is left alone (the mount step resolves it
// inside the root, where it may lead elsewhere). mounts are in mount order; paths are
// canonical (Build).
func mountPointCleanups(mounts []specs.Mount) []cleanup.Entry {
	var out []cleanup.Entry
	for i, m := range mounts {
		if m.Type != "tmpfs" {
			continue
		}
		// the deepest bind mounted before it that holds it
		var bind *specs.Mount
		for j := range mounts[:i] {
			b := &mounts[j]
			if b.Type == "bind" && m.Destination != b.Destination && under(m.Destination, b.Destination) && (bind == nil || depth(b.Destination) > depth(bind.Destination)) {
				bind = b
			}
		}
		if bind == nil {
			continue
		}
		rel := strings.TrimPrefix(m.Destination, bind.Destination)
		host := bind.Source
		for _, c := range strings.Split(strings.Trim(rel, "/"), "/") {
			host = filepath.Join(host, c)
			fi, err := os.Lstat(host)
			if os.IsNotExist(err) {
				if !slices.ContainsFunc(out, func(e cleanup.Entry) bool { return e.Path == host }) {
					out = append(out, cleanup.Entry{Kind: cleanup.RemoveIfCreated, Path: host})
				}
				break
			}
			if err != nil || !fi.IsDir() {
				break
			}
		}
	}
	return out
}
