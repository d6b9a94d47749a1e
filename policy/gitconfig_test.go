package policy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// git: commit gives the command the caller's git identity, user.name and user.email
// from their git config files, as GIT_AUTHOR_* and GIT_COMMITTER_*, and binds none of
// the files (they may hold credentials: an insteadOf URL with a token); the policy's
// and the flags' values win; git: readonly sets nothing.
func TestGitCommitIdentityEnv(t *testing.T) {
	base := canonTempDir(t)
	ws, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	mkdirs(t, ws, filepath.Join(home, ".config/git"))
	gc, xdg := filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config/git/config")
	write := func(f, text string) {
		t.Helper()
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(xdg, "[user]\n\tname = Xdg Name\n\temail = xdg@example.com\n")
	write(gc, "[url \"https://TOKEN-abc@github.com/\"]\n\tinsteadOf = https://github.com/\n[User]\n\tName = \"Host  Person\" # c\n")
	h := fakeHost(ws)
	h.Home, h.Homes = home, []string{home}
	compile := func(policyText string, o Options) (env []string, binds []string) {
		t.Helper()
		o.Policy, o.Workspace, o.Args = mustParse(t, policyText), ws, []string{"true"}
		s, err := Compile(o, h)
		if err != nil {
			t.Fatalf("%s: %v", policyText, err)
		}
		for _, m := range s.Mounts {
			if m.Type == "bind" && strings.HasPrefix(m.Source, home) {
				binds = append(binds, m.Source)
			}
		}
		for _, kv := range s.Process.Env {
			if strings.HasPrefix(kv, "GIT_") {
				env = append(env, kv)
			}
		}
		return env, binds
	}
	commit := "extends: agent\nfilesystem: {git: commit}\n"
	env, binds := compile(commit, Options{})
	want := []string{"GIT_AUTHOR_NAME=Host  Person", "GIT_AUTHOR_EMAIL=xdg@example.com",
		"GIT_COMMITTER_NAME=Host  Person", "GIT_COMMITTER_EMAIL=xdg@example.com"}
	if !slices.Equal(env, want) || len(binds) != 0 {
		t.Errorf("git: commit: env %q binds %q; want env %q (~/.gitconfig over ~/.config/git/config) and no bind of the home", env, binds, want)
	}
	if env, _ := compile("extends: agent\n", Options{}); len(env) != 0 {
		t.Errorf("git: readonly sets %q; want nothing", env)
	}
	// the policy's and the caller's explicit values win
	env, _ = compile(commit+"environment: {set: {GIT_AUTHOR_NAME: Policy Name}}\n",
		Options{Env: []string{"GIT_COMMITTER_EMAIL=flag@example.com"}})
	want = []string{"GIT_AUTHOR_EMAIL=xdg@example.com", "GIT_COMMITTER_NAME=Host  Person",
		"GIT_COMMITTER_EMAIL=flag@example.com", "GIT_AUTHOR_NAME=Policy Name"}
	slices.Sort(env)
	slices.Sort(want)
	if !slices.Equal(env, want) {
		t.Errorf("git: commit with set and --env: %q; want %q", env, want)
	}
	// so does a variable of the caller's that --pass-env names
	h.Environ = append(h.Environ, "GIT_AUTHOR_NAME=Caller Env")
	env, _ = compile(commit, Options{PassEnv: []string{"GIT_AUTHOR_NAME"}})
	if !slices.Contains(env, "GIT_AUTHOR_NAME=Caller Env") || slices.Contains(env, "GIT_AUTHOR_NAME=Host  Person") {
		t.Errorf("git: commit with --pass-env GIT_AUTHOR_NAME: %q; want the caller's value", env)
	}
	// $XDG_CONFIG_HOME's file is read too, before ~/.gitconfig
	other := filepath.Join(base, "xdg")
	mkdirs(t, filepath.Join(other, "git"))
	write(filepath.Join(other, "git/config"), "[user]\nemail = other@example.com\n")
	h.Environ = append(h.Environ, "XDG_CONFIG_HOME="+other)
	if env, _ := compile(commit, Options{}); !slices.Contains(env, "GIT_AUTHOR_EMAIL=other@example.com") {
		t.Errorf("with $XDG_CONFIG_HOME/git/config: %q; want its email", env)
	}
}

// GitIdentity's parser takes user.name and user.email as git-config(1) reads them, and
// nothing from a file git would refuse or a value that is not an identity.
func TestGitConfigIdent(t *testing.T) {
	for _, c := range []struct {
		text, name, email string
	}{
		{"[user]\n\tname = A B\n\temail = a@b\n", "A B", "a@b"},
		{"[USER]\nNAME=A\nEmail=a@b", "A", "a@b"},
		{"[user] name = inline ; comment\n", "inline", ""},
		{"[user]\nname = \"quoted # not a comment\"\n", "quoted # not a comment", ""},
		{"[user]\nname = Back\\\\slash \\\"q\\\"\n", `Back\slash "q"`, ""},
		{"[user]\nname = con\\\ntinued\n", "continued", ""},
		{"[user]\r\nname = crlf\r\n", "crlf", ""},
		{"[user]\nname = first\nname = last\n", "last", ""},
		{"[user \"sub\"]\nname = sub\n[user.x]\nname = old\n", "", ""},
		{"[core]\nname = core\n[user]\nemail = e\n[other]\nname = o\n", "", "e"},
		{"[user]\nname = x\nname\n", "", ""}, // a name with no value unsets it
		{"[user]\nname = \"\"\n", "", ""},
		{"[user]\nname = a\\nb\n", "", ""},             // a newline in it: none
		{"[user]\nname = ok\nbad line here\n", "", ""}, // git refuses the file
		{"[user]\nname = \"unterminated\n", "", ""},    // so does gosbx
		{"[user]\nname = ok\n[broken\n", "", ""},
		{"[user]\nname = bad \\q escape\n", "", ""},
		{"[include]\npath = other\n[user]\nname = n\n", "n", ""}, // includes not followed
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ".gitconfig"), []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if n, e := GitIdentity(dir, "", nil); n != c.name || e != c.email {
			t.Errorf("%q: %q %q; want %q %q", c.text, n, e, c.name, c.email)
		}
	}
	// not a regular file, too large, not absolute: nothing
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, ".gitconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, e := GitIdentity(dir, "", nil); n != "" || e != "" {
		t.Errorf("a FIFO: %q %q", n, e)
	}
	big := "[user]\nname = big\n" + strings.Repeat("# pad\n", gitConfigMax/6)
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".gitconfig"), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, _ := GitIdentity(dir, "", nil); n != "" {
		t.Errorf("a file over %d bytes: %q", gitConfigMax, n)
	}
	if n, _ := GitIdentity("relative", "", nil); n != "" {
		t.Errorf("a relative home: %q", n)
	}
}

// The parser agrees with git itself (git config -f FILE --get, when git is installed):
// the same user.name where git reads the file, none where git refuses it, none where
// the value holds a control character.
func TestGitConfigIdentLikeGit(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	for _, text := range []string{
		"[user]\n\tname = A B\n", "[USER]\nNAME=A", "[user] name = inline ; comment\n",
		"[user]\nname = \"quoted # not a comment\"\n", "[user]\nname = Back\\\\slash \\\"q\\\"\n",
		"[user]\nname = con\\\ntinued\n", "[user]\r\nname = crlf\r\n", "[user]\nname = first\nname = last\n",
		"[user \"sub\"]\nname = sub\n[user.x]\nname = old\n", "[core]\nname = core\n[other]\nname = o\n",
		"[user]\nname =   lead  \"  in q \"  mid\t\ttab  # c\n", "[user]\nname = a\" b\"c\n",
		"[user]\nname = ok\nbad line here\n", "[user]\nname = \"unterminated\n", "[user]\nname = ok\n[broken\n",
		"[user]\nname = bad \\q escape\n", "[user]\nname=\"\"x\n", "[  user]\nname=sp\n", "[user ]\nname=sp\n",
		"[user]name=nospace\n", "[Sec \"s\\\\u\"]\nk=v\n[user]\nname=after\n", "[user]\nname = tab\\tx\n",
		"\ufeff[user]\nname=bom\n", "[user]\nname\n", "[url \"https://t@h/\"]\n\tinsteadOf = https://h/\n[user]\nname=u\n",
	} {
		f := filepath.Join(t.TempDir(), ".gitconfig")
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(gitBin, "config", "-f", f, "--get", "user.name")
		cmd.Env = []string{"HOME=" + filepath.Dir(f), "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
		out, err := cmd.Output()
		want := strings.TrimSuffix(string(out), "\n")
		if err != nil || strings.ContainsAny(want, "\t\n") {
			want = ""
		}
		if got, _ := GitIdentity(filepath.Dir(f), "", nil); got != want {
			t.Errorf("%q: %q; git reads %q (%v)", text, got, want, err)
		}
	}
}

// The build profile binds go's checksum-database cache (GOPATH/pkg/sumdb) read-only
// beside the module cache, where it exists: go verifies a module it adds to go.sum
// against it, offline (the trial's `go run` of a module without its go.sum line).
func TestBuildBindsGoSumdb(t *testing.T) {
	base := canonTempDir(t)
	ws, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	sumdb := filepath.Join(home, "go/pkg/sumdb")
	mkdirs(t, ws, filepath.Join(home, "go/pkg/mod"), filepath.Join(sumdb, "sum.golang.org"))
	h := fakeHost(ws)
	h.Home, h.Homes = home, []string{home}
	p, _ := Builtin("build")
	s, err := Compile(Options{Policy: p, Workspace: ws, Args: []string{"true"}}, h)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range s.Mounts {
		if m.Type == "bind" && m.Source == sumdb && m.Destination == sumdb {
			found = slices.Contains(m.Options, "ro")
		}
	}
	if !found {
		t.Errorf("build does not bind %s read-only: %+v", sumdb, s.Mounts)
	}
}

// A config file reached through a tree the sandbox can write gives no identity: a link
// an earlier command planted there (attack review 20, F1) would make the launcher read
// a file the sandbox cannot; a file outside such trees is read, through links too. A
// value longer than identMax is no identity (F2: an E2BIG at the command's execve).
func TestGitIdentityNotThroughWritable(t *testing.T) {
	base := t.TempDir()
	home, ws, secret := filepath.Join(base, "home"), filepath.Join(base, "ws"), filepath.Join(base, "secret")
	for _, d := range []string{home, ws, secret, filepath.Join(ws, "xdg", "git"), filepath.Join(home, "dotfiles")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, text string) {
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(secret, "cfg"), "[user]\n\tname = root-only\n")
	write(filepath.Join(home, "dotfiles", "gitconfig"), "[user]\n\tname = Host User\n")
	if err := os.Symlink(filepath.Join(home, "dotfiles", "gitconfig"), filepath.Join(home, ".gitconfig")); err != nil {
		t.Fatal(err)
	}
	// planted: $XDG_CONFIG_HOME/git/config, in the workspace, a link to the secret
	if err := os.Symlink(filepath.Join(secret, "cfg"), filepath.Join(ws, "xdg", "git", "config")); err != nil {
		t.Fatal(err)
	}
	xdg := filepath.Join(ws, "xdg")
	if n, _ := GitIdentity(home, xdg, []string{ws}); n != "Host User" {
		t.Errorf("name %q: want the home's (a dotfiles link outside the writable trees is followed), never the planted link's", n)
	}
	if n, _ := GitIdentity(home, xdg, nil); n != "Host User" && n != "root-only" {
		t.Errorf("without writable trees: name %q", n)
	}
	// a writable directory on the way: ~/.config a link into the workspace
	if err := os.Symlink(filepath.Join(ws, "xdg"), filepath.Join(home, ".config")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(home, ".gitconfig"))
	if n, _ := GitIdentity(home, "", []string{ws}); n != "" {
		t.Errorf("~/.config through the workspace: name %q, want none", n)
	}
	if !throughWritable(filepath.Join(home, ".config", "git", "config"), []string{ws}) ||
		throughWritable(filepath.Join(home, "dotfiles", "gitconfig"), []string{ws}) {
		t.Error("throughWritable: wrong on the link into the workspace or the plain file")
	}
	long := strings.Repeat("n", identMax+1)
	if cleanIdent(long) != "" || cleanIdent(long[:identMax]) == "" {
		t.Errorf("identMax: a value of %d bytes must be none, one of %d kept", identMax+1, identMax)
	}
}
