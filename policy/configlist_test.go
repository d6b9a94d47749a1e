package policy

import (
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
	"format.signaturefile":              "data: a patch's signature text",
	"gitcvs.logfile":                    "a log git-cvsserver writes",
	"guitool.<name>.needsfile":          "a boolean",
	"mailmap.file":                      "data: name mapping",
	"sendemail.smtpserveroption":        "an option",
	"sendemail.forbidsendmailvariables": "a boolean",
}

// configNameLooks matches a variable name that may hold a path or a command.
var configNameLooks = regexp.MustCompile(`(?i)(cmd|command|program|helper|path|hookspath|proxy|tool|editor|pager|browser|tunnel|driver|textconv|clean|smudge|process|templatedir|receivepack|uploadpack|httpd|file)$`)

// Every variable `git help --config` lists whose name looks like a path or command is
// either classified by configTarget or reviewed in configNotPaths, so that the list of
// guarded settings cannot fall behind git's (review 28 F2).
func TestConfigTargetCoversGitHelpConfig(t *testing.T) {
	out, err := exec.Command("git", "help", "--config").Output()
	if err != nil {
		t.Skipf("git help --config: %v", err)
	}
	n := 0
	for _, name := range strings.Fields(string(out)) {
		lname := strings.ToLower(name)
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
