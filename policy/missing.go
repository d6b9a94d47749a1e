package policy

import (
	"os"
	"path/filepath"
	"strconv"
)

// MissingBinds lists the filesystem.read_only and read_write paths of p that are not
// optional and do not exist on this host, expanded as a launch by h would expand them
// (${home}, ${uid}, ~/; a relative path from h.Cwd): a launch under p stops there
// (125) unless the path is marked {path: P, optional: true}. A path that names
// ${workspace}, known only at launch, is left out.
func (p *Policy) MissingBinds(h Host) []MissingBind {
	home := h.Home
	if !filepath.IsAbs(home) || filepath.Clean(home) == "/" {
		home = fallbackHome
	}
	vars := map[string]string{"home": filepath.Clean(home), "uid": strconv.Itoa(h.UID)}
	var out []MissingBind
	for _, list := range [][]Bind{p.Filesystem.ReadOnly, p.Filesystem.ReadWrite} {
		for _, b := range list {
			if b.Optional {
				continue
			}
			v, err := expand(b.Path, vars)
			if err != nil {
				continue // ${workspace}
			}
			if !filepath.IsAbs(v) {
				v = filepath.Join(h.Cwd, v)
			}
			if _, err := os.Stat(v); os.IsNotExist(err) {
				out = append(out, MissingBind{Given: b.Path, Path: v})
			}
		}
	}
	return out
}

// MissingBind is a required bind source that does not exist: the path as the policy
// gives it, and as expanded on this host.
type MissingBind struct{ Given, Path string }
