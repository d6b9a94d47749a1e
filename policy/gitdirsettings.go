package policy

import (
	"bufio"
	"bytes"
	"path/filepath"
	"strings"
)

// guardGitDirSettings guards what git reads for the checkout at worktree whose git dir
// is gd (a bare repository: worktree is gd itself, git's working directory there): the
// paths and programs its settings name (configTargets: hooks, core.hooksPath, command
// settings, includes) and the repositories its remotes name as local paths, config
// remotes and the legacy remotes/ and branches/ files alike (guardLocalRemotes). Every
// way the plan reaches a git dir a host git may run in goes through it (the scan's
// .git entries and bare repositories, an enclosing repository, the checkouts a
// repository's records name), so that none guards one and forgets the other (attack
// review 30 F6, F7). Errors are *Error (field "protected").
func (plan *gitPlan) guardGitDirSettings(worktree, gd string, inWritable func(string) bool) error {
	entries, err := plan.configTargets(worktree, gd, inWritable)
	if err != nil {
		return err
	}
	return plan.guardLocalRemotes(worktree, gd, entries, inWritable)
}

// legacyRemoteURLs are the URLs of the remotes git 2.39 still reads from files of the
// common git dir common (remote.c read_remotes_file, read_branches_file), for a name
// the settings entries give no url: remotes/NAME's "URL:" lines, and the first line of
// branches/NAME up to a "#" (the branch). Each is rewritten as a config remote's url is
// (insteadOf; pushInsteadOf too, these remotes have no pushurl). Unreadable files are
// left out: git reads them with the same rights, and skips what it cannot open.
func legacyRemoteURLs(common string, entries []sourcedEntry) []remoteURL {
	insteadOf, pushInsteadOf := urlRules(entries)
	hasURL := map[string]bool{}
	for _, se := range entries {
		if se.e.section == "remote" && se.e.sub != "" && se.e.key == "url" && se.e.set {
			hasURL[se.e.sub] = true
		}
	}
	var out []remoteURL
	add := func(name, file, u string) {
		setting := "remote " + name + " (a legacy " + filepath.Base(filepath.Dir(file)) + "/ file)"
		out = append(out, remoteURL{url: aliasURL(u, insteadOf), setting: setting, file: file})
		if r, ok := rewriteURL(u, pushInsteadOf); ok {
			out = append(out, remoteURL{url: r, setting: setting, file: file})
		}
	}
	for _, kind := range []string{"remotes", "branches"} {
		dir := filepath.Join(common, kind)
		ents, err := readDirCapped(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			name, f := e.Name(), filepath.Join(dir, e.Name())
			if hasURL[name] {
				continue
			}
			b, err := readRegularFollow(f, 1<<20)
			if err != nil {
				continue
			}
			if kind == "branches" {
				line, _, _ := strings.Cut(string(b), "\n")
				u, _, _ := strings.Cut(strings.TrimSpace(line), "#")
				if u != "" {
					add(name, f, u)
				}
				continue
			}
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "URL:"); ok {
					if v = strings.TrimSpace(v); v != "" {
						add(name, f, v)
					}
				}
			}
		}
	}
	return out
}

// urlRules are the url.<base>.insteadOf and .pushInsteadOf rules among entries
// ({prefix, base}), in the order git reads them.
func urlRules(entries []sourcedEntry) (insteadOf, pushInsteadOf [][2]string) {
	for _, se := range entries {
		e := se.e
		switch {
		case e.section == "url" && e.set && e.key == "insteadof":
			insteadOf = append(insteadOf, [2]string{e.value, e.sub})
		case e.section == "url" && e.set && e.key == "pushinsteadof":
			pushInsteadOf = append(pushInsteadOf, [2]string{e.value, e.sub})
		}
	}
	return insteadOf, pushInsteadOf
}
