package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestDumpSpecs writes, when GOSBX_DUMP names a directory, the spec (JSON) or the
// error that CurrentHost/Effective/Build give for a set of workspaces rebuilt at fixed
// paths under /var/tmp/gosbx-equiv: run it before and after a change to the policy
// step and diff the two directories (they must be byte-identical).
func TestDumpSpecs(t *testing.T) {
	out := os.Getenv("GOSBX_DUMP")
	if out == "" {
		t.Skip("set GOSBX_DUMP=DIR")
	}
	base := "/var/tmp/gosbx-equiv"
	os.RemoveAll(base)
	mkdirs(t, base, out)
	t.Cleanup(func() { os.RemoveAll(base) })
	real, err := CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	link := func(target, l string) {
		mkdirs(t, filepath.Dir(l))
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		mkdirs(t, filepath.Dir(p))
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dump := func(name string, o Options, h Host) {
		if o.Args == nil {
			o.Args = []string{"/bin/true"}
		}
		var b []byte
		eff, err := Effective(o, h)
		if err == nil {
			var s any
			s, err = Build(eff, o.Args, h)
			if err == nil {
				b, _ = json.MarshalIndent(s, "", " ")
			}
		}
		if err != nil {
			b = []byte("error: " + err.Error() + "\n")
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	parse := func(src string) *Policy {
		p, err := Parse([]byte(src), "test.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	withCwd := func(h Host, cwd string) Host { h.Cwd = cwd; return h }

	// Plain and git workspaces, the default policy, the real host.
	plain := benchWorkspace(t, base, "plain")
	gitws := benchWorkspace(t, base, "git")
	dump("default-plain", Options{Workspace: plain}, real)
	dump("default-git", Options{Workspace: gitws}, real)
	dump("default-git-cwd", Options{Workspace: gitws}, withCwd(real, filepath.Join(gitws, "src", "pkg1", "sub")))
	dump("default-git-nonroot", Options{Workspace: gitws}, fakeHost(gitws))
	dump("commit-git", Options{Workspace: gitws, Policy: parse("extends: agent\nfilesystem:\n  git: commit\n")}, real)
	for _, prof := range []string{"build", "strict", "agent"} {
		p, _ := Builtin(prof)
		dump("profile-"+prof, Options{Workspace: plain, Policy: p}, real)
	}

	// Protected patterns, a deep working directory, symlinks and skipped trees.
	pw := filepath.Join(base, "prot")
	for _, f := range []string{".env", "a/.env", "a/b/.env", "a/b/c/.env", "a/b/c/d/.env", "a/b/c/d/e/f/.env",
		"config/tls.key", "config/tls.crt", "config/sub/x.key", "x/config/y.key", "node_modules/p/.env",
		".venv/.env", "build/.env", "deep/1/2/3/4/.env", "sub/.git/HEAD", "sub/x/.git", "s p a c e/.env",
		"uni\u00e9/<&>.key", "q[uo]te\"/\\.env"} {
		write(filepath.Join(pw, f), "")
	}
	mkdirs(t, filepath.Join(pw, "a", "b", "c", "d", "e", "f", "g"), filepath.Join(pw, "emptydir"))
	link(filepath.Join(pw, "a"), filepath.Join(pw, "alink"))
	link("nowhere", filepath.Join(pw, "dangling"))
	protPolicy := parse("extends: agent\nfilesystem:\n  protected: [.env, \"*.key\", \"config/*.crt\", \"**/.git\", \"sub/.git/HEAD\", \"x/config/y.key\", \"[\", \"a/b\", \"deep/1/2/3/4/.env\"]\n")
	dump("protected", Options{Workspace: pw, Policy: protPolicy}, withCwd(real, filepath.Join(pw, "a", "b", "c", "d", "e", "f", "g")))
	dump("protected-nonroot", Options{Workspace: pw, Policy: protPolicy}, fakeHost(filepath.Join(pw, "a", "b", "c", "d")))
	dump("protected-limit-5", Options{Workspace: pw, Policy: parse("extends: agent\nfilesystem:\n  scan_limit: 5\n")}, real)
	for n := 1; n <= 40; n++ {
		dump("protected-limit-"+strconv.Itoa(n), Options{Workspace: pw, Policy: parse("extends: agent\nfilesystem:\n  scan_limit: " + strconv.Itoa(n) + "\n")}, real)
	}
	dump("protected-symlink", Options{Workspace: pw, Policy: parse("extends: agent\nfilesystem:\n  protected: [alink]\n")}, real)
	dump("protected-through-symlink", Options{Workspace: pw, Policy: parse("extends: agent\nfilesystem:\n  protected: [alink/b]\n")}, real)

	// Extra binds, flags, a symlinked workspace, a non-root caller.
	other := filepath.Join(base, "other")
	tools := filepath.Join(base, "tools", "v1")
	mkdirs(t, filepath.Join(other, ".git"), tools, filepath.Join(base, "rel", "inner"))
	link("tools/v1", filepath.Join(base, "tool"))
	link(plain, filepath.Join(base, "plainlink"))
	link(filepath.Join(base, "tool"), filepath.Join(base, "chain"))
	write(filepath.Join(base, "cfg"), "x")
	link("cfg", filepath.Join(base, "cfgl"))
	nr := fakeHost(base)
	nr.Environ = []string{"PATH=/usr/bin", "LANG=C", "LC_ALL=C", "SECRET=x", "TERM=xterm", "FOO=bar"}
	dump("flags-nonroot", Options{Workspace: filepath.Join(base, "plainlink"), ReadOnly: []string{"tool", filepath.Join(base, "chain"), "cfgl", "/etc/hosts"},
		ReadWrite: []string{other, "rel/inner"}, Env: []string{"A=${home}", "B=1"}, PassEnv: []string{"FOO", "NOPE"}, Net: NetHost, Chdir: "src", Hostname: "box"}, nr)
	dump("flags-root", Options{Workspace: filepath.Join(base, "plainlink"), ReadOnly: []string{"tool"}, ReadWrite: []string{other}}, withCwd(real, base))
	dump("flags-root-abs", Options{Workspace: plain, ReadWrite: []string{other}}, withCwd(real, base))
	dump("rw-refused-git", Options{Workspace: plain, ReadWrite: []string{filepath.Join(other, ".git")}}, nr)

	// Limits: required, best effort, a cgroup parent.
	dump("limits", Options{Workspace: plain, Resources: Resources{Memory: "512M", CPUs: 1.5, Pids: 100, NoFile: 1024, FSize: "1G"}}, real)
	dump("limits-policy", Options{Workspace: plain, Policy: parse("extends: agent\nresources:\n  memory: 1G\n  memory_swap: \"-1\"\n  limits: best-effort\n  cgroup_parent: \"gosbx<&>\\u2028.slice\"\n")}, nr)
	dump("limits-swap-only", Options{Workspace: plain, Resources: Resources{MemorySwap: "1G"}}, real)
	idr := IDRange{Base: 3000000, Count: 7}
	dump("idrange", Options{Workspace: plain, IDRange: &idr}, real)

	// Masked globs, good and bad.
	dump("masked", Options{Workspace: plain, Policy: parse("extends: agent\nfilesystem:\n  masked: [\"/etc/*.conf\", \"/e?c/host*\", \"/etc/ss*/*\", \"/etc/[\", \"/etc//pass*\", \"/nonexistent/*\", \"/etc/*/*.conf\", \"" + base + "/*/v?\", \"" + base + "/c*\"]\n")}, nr)

	// Homes and credentials through symlinks and "..".
	home := filepath.Join(base, "realhome")
	mkdirs(t, filepath.Join(home, ".ssh"), filepath.Join(home, ".config", "gh"), filepath.Join(home, "proj"), filepath.Join(home, ".aws"))
	link(home, filepath.Join(base, "homelink"))
	link(filepath.Join(home, ".aws"), filepath.Join(home, ".kube"))
	link("../realhome/.ssh", filepath.Join(home, ".docker"))
	hh := fakeHost(filepath.Join(home, "proj"))
	hh.Home = filepath.Join(base, "homelink")
	hh.Homes = []string{home}
	credPolicy := parse("extends: agent\nfilesystem:\n  credentials: [\"~/.ssh/../.config/gh\", \"${home}/nope/../.aws\", \"" + base + "/chain\", \"~/proj/../proj/secret\", \"~/.kube/x\"]\n")
	dump("creds", Options{Workspace: filepath.Join(home, "proj"), Policy: credPolicy}, hh)
	dump("creds-refused", Options{Workspace: filepath.Join(home, "proj"), Policy: credPolicy, ReadWrite: []string{tools}}, hh)
	dump("creds-home-refused", Options{Workspace: home}, hh)
	dump("creds-root", Options{Workspace: plain, Policy: credPolicy}, real)

	// Real repositories: submodules, linked worktrees, config targets.
	if _, err := os.Stat("/usr/bin/git"); err == nil {
		lib := filepath.Join(base, "lib")
		repo := filepath.Join(base, "repo")
		newRepo(t, lib)
		newRepo(t, repo)
		gitCmd(t, repo, "submodule", "add", "-q", lib, "vendor/lib")
		gitCmd(t, repo, "config", "core.hooksPath", ".husky")
		gitCmd(t, repo, "config", "include.path", "../inc.cfg")
		write(filepath.Join(repo, "inc.cfg"), "")
		fakeGitDir(t, filepath.Join(repo, ".git", "modules", "plain"))
		wt := filepath.Join(base, "wt")
		gitCmd(t, repo, "worktree", "add", "-q", wt)
		for _, mode := range []string{GitReadOnly, GitCommit} {
			p := parse("extends: agent\nfilesystem:\n  git: " + mode + "\n")
			dump("repo-"+mode, Options{Workspace: repo, Policy: p}, real)
			dump("repo-"+mode+"-nonroot", Options{Workspace: repo, Policy: p}, fakeHost(repo))
			dump("wt-"+mode, Options{Workspace: wt, Policy: p}, real)
			dump("wt-"+mode+"-nonroot", Options{Workspace: wt, Policy: p}, fakeHost(wt))
		}
		bad := filepath.Join(base, "badsub")
		newRepo(t, bad)
		write(filepath.Join(bad, ".gitmodules"), "[submodule \"x\"]\n\tpath = lnk/inner\n")
		link(other, filepath.Join(bad, "lnk"))
		dump("repo-badsub", Options{Workspace: bad}, real)
	}
}
