package policy

import "path/filepath"

// EmptyRootNote is a warning for a policy that extends no built-in profile and binds
// none of the system's library directories (/usr/lib, /lib, or a tree holding them):
// such a policy starts from an empty root, where no dynamically linked program (a
// shell, ls, python3) can start, because its ELF interpreter and libraries are not
// there; a file that simply forgot `extends:` looks valid otherwise. "" when the
// policy extends a profile or shows those directories.
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
			if under("/usr/lib", d) || under("/lib", d) {
				return ""
			}
		}
	}
	return "the policy has no `extends:`, so it starts from an empty root and binds no system library directory " +
		"(/usr/lib, /lib): dynamically linked programs (sh, ls, python3) cannot start in it; " +
		"start it with `extends: agent` (or strict, build) to get the profile's system binds"
}
