package policy

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// configNotPaths are the variables of git-config(1) whose names look like a path or
// command setting (configNameLooks) but whose value git neither runs nor reads as a
// file or directory gosbx must keep read-only: reviewed by hand (review 28, git 2.39).
var configNotPaths = map[string]string{
	"advice.updatesparsepath":           "a boolean",
	"advice.waitingforeditor":           "a boolean",
	"color.pager":                       "a boolean",
	"column.clean":                      "a layout",
	"core.quotepath":                    "a boolean",
	"credential.usehttppath":            "a boolean",
	"diff.<driver>.cachetextconv":       "a boolean",
	"diff.guitool":                      "a tool name (difftool.<tool>.cmd, guarded)",
	"diff.tool":                         "a tool name (difftool.<tool>.cmd, guarded)",
	"merge.guitool":                     "a tool name (mergetool.<tool>.cmd, guarded)",
	"merge.tool":                        "a tool name (mergetool.<tool>.cmd, guarded)",
	"fsck.gitmodulespath":               "a message severity",
	"receive.fsck.gitmodulespath":       "a message severity",
	"gitcvs.dbdriver":                   "a Perl DBI driver name",
	"help.htmlpath":                     "documentation opened in a browser, not run",
	"http.proxy":                        "a URL",
	"remote.<name>.proxy":               "a URL",
	"credential.<url>.usehttppath":      "a boolean",
	"core.fsmonitorhookversion":         "a number",
	"includeif.<condition>.path":        "guarded as an include (includeFile)",
	"advice.addignoredfile":             "a boolean",
	"blame.ignorerevsfile":              "data: revisions blame skips",
	"diff.orderfile":                    "data: the order of a diff's files",
	"gitcvs.logfile":                    "a log git-cvsserver writes",
	"guitool.<name>.needsfile":          "a boolean",
	"mailmap.file":                      "data: name mapping",
	"sendemail.smtpserveroption":        "an option",
	"sendemail.forbidsendmailvariables": "a boolean",
	"completion.commands":               "command names to complete",
	"submodule.<name>.path":             "a path in the worktree (guardSubmodulePaths)",
	"submodule.foo.path":                "submodule.<name>.path, in an example",
	"http.getanyfile":                   "a boolean (git-http-backend's service switch)",
	"http.uploadpack":                   "a boolean (git-http-backend's service switch)",
	"http.receivepack":                  "a boolean (git-http-backend's service switch)",
	"lfs.standalonetransferagent":       "the name of an lfs.customtransfer.<name> (its path guarded)",
}

// gitLFSVariables are git-lfs-config(5)'s program-valued variables (git-lfs is not on
// every machine, so they are listed here rather than read from its manual).
var gitLFSVariables = []string{
	"lfs.customtransfer.<name>.path",
	"lfs.extension.<name>.clean",
	"lfs.extension.<name>.smudge",
	"lfs.standalonetransferagent",
}

// configNameLooks matches a variable name that may hold a path or a command.
var configNameLooks = regexp.MustCompile(`(?i)(cmd|command|program|helper|path|hookspath|proxy|tool|editor|pager|browser|tunnel|driver|textconv|clean|smudge|process|templatedir|receivepack|uploadpack|httpd|file)$`)

// manVariable matches a dotted variable name in a git manual page's text (roff
// escapes removed): section, then subsections or <placeholders>, then the key.
var manVariable = regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9]*(\.(<[a-zA-Z ]+>|\*|[a-zA-Z0-9_-]+))+\b`)

// manPageVariables returns the variable names the installed git manual pages mention
// (man1, man5, man7 git*), lowercased: git help --config lists only git-config(1)'s
// own, and a variable documented only with its command (tar.<format>.command in
// git-archive(1)) was missed that way (attack review 31 F9). nil when no manual is
// installed.
func manPageVariables(t *testing.T) []string {
	var names []string
	pages, _ := filepath.Glob("/usr/share/man/man[157]/git*")
	roff := strings.NewReplacer(`\fB`, "", `\fI`, "", `\fR`, "", `\fP`, "", `\&`, "", `\-`, "-", `\(aq`, "'", `\(oq`, "'", `\(cq`, "'")
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		if strings.HasSuffix(p, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		}
		for _, n := range manVariable.FindAllString(roff.Replace(string(b)), -1) {
			names = append(names, strings.ToLower(n))
		}
	}
	return names
}

// Every variable `git help --config` lists or a git manual page names, and git-lfs's,
// whose name looks like a path or command is either classified by configTarget or
// reviewed in configNotPaths, so that the list of guarded settings cannot fall behind
// git's (review 28 F2, review 31 F9).
func TestConfigTargetCoversGitHelpConfig(t *testing.T) {
	out, err := exec.Command("git", "help", "--config").Output()
	if err != nil {
		t.Skipf("git help --config: %v", err)
	}
	listed := strings.Fields(string(out))
	sections := map[string]bool{"lfs": true}
	for _, name := range listed {
		sections[strings.ToLower(strings.Split(name, ".")[0])] = true
	}
	man := manPageVariables(t)
	if len(man) == 0 {
		t.Log("no git manual pages installed: only git help --config's variables checked")
	}
	n, seen := 0, map[string]bool{}
	for _, name := range append(append(listed, man...), gitLFSVariables...) {
		lname := strings.ToLower(name)
		if seen[lname] || !sections[strings.Split(lname, ".")[0]] {
			continue // a file name or an example's host name in a manual, not a variable
		}
		seen[lname] = true
		if !configNameLooks.MatchString(lname) && !strings.HasPrefix(lname, "alias.") && !strings.HasPrefix(lname, "pager.") {
			continue
		}
		n++
		if _, ok := configNotPaths[lname]; ok {
			continue
		}
		e := configEntry{value: "!x/y", set: true}
		parts := strings.Split(lname, ".")
		e.section, e.key = parts[0], parts[len(parts)-1]
		if len(parts) > 2 {
			e.sub = strings.Join(parts[1:len(parts)-1], ".")
		}
		if e.key == "*" || strings.HasPrefix(e.key, "<") {
			e.key = "x"
		}
		if configTarget(e) == notTarget {
			t.Errorf("git config %s is neither guarded (configTarget) nor reviewed as not a path (configNotPaths)", name)
		}
	}
	if n < 40 {
		t.Errorf("only %d path-like variables in git help --config: the listing changed shape", n)
	}
	for _, must := range []string{"tar.<format>.command", "lfs.customtransfer.<name>.path"} {
		if len(man) > 0 && !seen[must] {
			t.Errorf("%s not among the variables checked: the manual page reading is broken", must)
		}
	}
}

// parseGitConfig keeps a value's inner blanks as git does (review 28 F7): each unquoted
// TAB, CR or space between words one space, a quoted TAB kept; checked against git
// config itself on the same text.
func TestParseGitConfigBlanksAsGit(t *testing.T) {
	text := "[core]\n\ta = x\ty\n\tb = \"x\ty\"\n\tc = x\ry\n\td = x \t y\n"
	f := filepath.Join(t.TempDir(), "c")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, ok := parseGitConfig(text)
	if !ok || len(entries) != 4 {
		t.Fatalf("parseGitConfig: %+v %v", entries, ok)
	}
	for _, e := range entries {
		out, err := exec.Command("git", "config", "-f", f, "core."+e.key).Output()
		if err != nil {
			t.Skipf("git config: %v", err)
		}
		if want := strings.TrimSuffix(string(out), "\n"); e.value != want {
			t.Errorf("core.%s: parsed %q, git gives %q", e.key, e.value, want)
		}
	}
}
