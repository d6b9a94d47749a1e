package policy

import (
	"slices"
	"strings"
)

// noteMadeHooks records that the launch creates the hooks directory dir, which the
// setting name names and which did not exist, empty and read-only. A nil rb records
// nothing.
func (rb *readBudget) noteMadeHooks(dir, name string) {
	if rb == nil || slices.ContainsFunc(rb.madeHooks, func(m [2]string) bool { return m[0] == dir }) {
		return
	}
	rb.madeHooks = append(rb.madeHooks, [2]string{dir, name})
}

// madeHooksNoteText is the launch's note for rb.madeHooks ("" when none): a hook
// manager that generates its hooks directory (husky v9's .husky/_, made by npm
// install's prepare step) cannot fill it inside, and the host's git runs no hook from
// the empty directory left behind until the user runs the installer on the host
// (attack review 31 F12).
func madeHooksNoteText(rb *readBudget) string {
	if rb == nil || len(rb.madeHooks) == 0 {
		return ""
	}
	var where []string
	for _, m := range rb.madeHooks {
		where = append(where, Shown(m[0])+" ("+Shown(m[1])+")")
	}
	return "gosbx: note: git's hooks directory " + strings.Join(where, ", ") + " did not exist: it is created empty and read-only for this run, so that the command cannot plant hooks the host's git would run. A hook installer inside (husky's prepare step in npm install) cannot write it; the host's git runs no hooks from it (as before) until you run the installer on the host (npx husky, lefthook install)."
}
