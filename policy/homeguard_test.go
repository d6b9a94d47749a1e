package policy

import (
	"slices"
	"testing"
)

// Every home-based guard takes every name of the caller's home (attack review 38 F1):
// credential paths under "~" for the sandbox's home, $HOME and the passwd home.
func TestCredentialsEveryHome(t *testing.T) {
	h := Host{Home: "/", Homes: []string{"/", "/gosbx-no-such/root"}, Environ: []string{"XDG_CONFIG_HOME=/gosbx-no-such/xdg"}}
	got, err := credentials(newResolver(), []string{"~/.ssh", "${home}/.aws", "~/.config/gh", "/gosbx-no-such/abs"}, map[string]string{"home": fallbackHome}, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fallbackHome + "/.ssh", "/.ssh", "/gosbx-no-such/root/.ssh", "/gosbx-no-such/root/.aws",
		"/gosbx-no-such/root/.config/gh", "/gosbx-no-such/abs"} {
		if !slices.Contains(got, want) {
			t.Errorf("credentials %q: %s missing", got, want)
		}
	}
	if n := len(got); n != 10 {
		t.Errorf("credentials %q: %d, want 10 (three homes for each of three, and abs: each once)", got, n)
	}
}

// A config value under "~" names a path in every home: the launcher's git takes ~ from
// its $HOME, the account's git in a login shell from the passwd home.
func TestConfigPathsEveryHome(t *testing.T) {
	p := &gitPlan{reads: gitReads{rb: &readBudget{left: launchReadBudget, homes: []string{"/", "/r"}}}}
	if got := p.configPaths("~/hooks", "/w"); !slices.Equal(got, []string{"/hooks", "/r/hooks"}) {
		t.Errorf("~/hooks: %q", got)
	}
	if got := p.configPaths("hooks", "/w"); !slices.Equal(got, []string{"/w/hooks"}) {
		t.Errorf("hooks: %q", got)
	}
	if got := p.configPath("~/hooks", "/w"); got != "/hooks" {
		t.Errorf("configPath ~/hooks: %q, want the launcher's (first)", got)
	}
}
