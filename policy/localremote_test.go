package policy

import "testing"

// localRemotePath takes plain paths and file:/// URLs as local, every other URL form of
// git-push(1) "GIT URLS" as not.
func TestLocalRemotePath(t *testing.T) {
	for v, want := range map[string]string{
		"../origin.git":             "../origin.git",
		"/srv/git/x.git":            "/srv/git/x.git",
		"file:///srv/git/x.git":     "/srv/git/x.git",
		"FILE:///a":                 "/a",
		"~/repos/x.git":             "~/repos/x.git",
		"./a:b/c":                   "./a:b/c",
		"git@github.com:o/r.git":    "",
		"host:path":                 "",
		"https://example.com/r.git": "",
		"ssh://h/r":                 "",
		"ext::sh -c x":              "",
		"file://host/r":             "",
		"":                          "",
	} {
		if got := localRemotePath(v); got != want {
			t.Errorf("localRemotePath(%q) = %q, want %q", v, got, want)
		}
	}
}
