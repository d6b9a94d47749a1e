package policy

import "path/filepath"

// EmptyRootNote is a warning for a policy that extends no built-in profile and shows
// neither /lib nor /lib64 as programs name them (a bind of that path, or of a tree
// holding it): such a policy starts from an empty root, where no dynamically linked
// program (a shell, ls, python3) can start, because the ELF interpreter it names
// (/lib64/ld-linux-x86-64.so.2, /lib/ld-linux-aarch64.so.1) is not there. A bind of /usr
// alone does not show it: on a merged-usr host /lib64 and /lib are links into /usr that
// only a bind of them makes. A file that simply forgot `extends:` looks valid otherwise.
// "" when the policy extends a profile or shows one of them.
func (p *Policy) EmptyRootNote() string {
	if p.base != "" || p.Extends != "" {
		return ""
	}
	for _, list := range [][]Bind{p.Filesystem.ReadOnly, p.Filesystem.ReadWrite} {
		for _, b := range list {
			if b.Dest != "" && b.Dest != b.Path {
				continue
			}
			d := filepath.Clean(b.Path)
			if under("/lib", d) || under("/lib64", d) {
				return ""
			}
		}
	}
	return "the policy has no `extends:`, so it starts from an empty root, and binds neither /lib nor /lib64, " +
		"where programs find their ELF interpreter (a bind of /usr does not make the merged-usr links to it): " +
		"dynamically linked programs (sh, ls, python3) cannot start in it; " +
		"start it with `extends: agent` (or strict, build) to get the profile's system binds"
}
