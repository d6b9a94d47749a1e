package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/cleanup"
	"github.com/gosbx/gosbx/nsinit/config"
)

// refusedWorkspaces cannot be the read-write workspace or a --rw bind: the root, and
// directories shared by the whole system or by every user.
var refusedWorkspaces = []string{"/", "/home", "/media", "/mnt", "/opt", "/root", "/srv", "/tmp",
	"/var", "/var/cache", "/var/lib", "/var/log", "/var/mail", "/var/spool", "/var/tmp"}

// systemTrees are never writable inside, nor anything beneath them: the system roots,
// the kernel's interfaces and the host's runtime state.
var systemTrees = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
	"/proc", "/run", "/sbin", "/sys", "/usr", "/var/run"}

// noBindUnder are host trees that are never bound: the sandbox gets its own.
var noBindUnder = []string{"/proc", "/dev"}

// resolverFiles are /etc files that are often symlinks out of /etc (systemd-resolved's
// resolv.conf into /run); when /etc is bound whole, a target outside the read-only binds
// is bound at its own path so the link resolves inside.
var resolverFiles = []string{"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/localtime"}

// procReadOnly and procMasked follow runc's defaults: kernel tunables read-only,
// kernel memory, keys and timer/scheduler internals hidden.
var procReadOnly = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
var procMasked = []string{"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/sched_debug", "/proc/scsi", "/proc/timer_list", "/proc/timer_stats"}

// DefaultHostname is the sandbox's hostname unless the policy or the caller names one.
const DefaultHostname = "gosbx"

// Compile is Effective then Build: the config of a sandbox running o.Args under
// o.Policy (the agent profile when nil) with the caller's flags. Errors are *Error
// naming the field, the path and the reason.
func Compile(o Options, h Host) (*config.Config, error) {
	p, err := Effective(o, h)
	if err != nil {
		return nil, err
	}
	return Build(p, o.Args, h)
}

// Build compiles an effective policy (from Effective) into the sandbox's config,
// canonicalizing every host path once and compiling the seccomp filter (a filter that
// does not compile is an *Error of field "seccomp"). It reads the host and writes
// nothing: the directories the guard needs (a commit-mode git dir's missing hooks/,
// info/, objects/info/, an unpopulated submodule path) are named in the config
// (Config.MakeDirs) and created by the launch (nsinit), so that the command cannot
// make them. Errors are *Error.
func Build(p *Policy, args []string, h Host) (*config.Config, error) {
	return build(p, args, h, nil)
}

// BuildNoted is Build that also returns the notes the launcher prints on stderr before
// the command runs, one sentence each: the PATH entries in a writable tree where the
// command could put a program the host's git or shell looks up (guardPathProgram), with
// the fix. Errors are Build's.
func BuildNoted(p *Policy, args []string, h Host) (*config.Config, []string, error) {
	var notes []string
	c, err := build(p, args, h, &notes)
	return c, notes, err
}

// build is Build, appending its notes to notes when not nil.
func build(p *Policy, args []string, h Host, notes *[]string) (*config.Config, error) {
	if len(args) == 0 || args[0] == "" {
		return nil, errorf("command", "", nil, "no command given (usage: gosbx exec [flags] -- CMD [ARGS...])")
	}
	ws := p.Workspace.Path
	if ws == "" || p.workspaceGiven == "" {
		return nil, errorf("workspace", ws, nil, "the policy was not made by Effective")
	}
	b := &builder{}
	f := p.Filesystem
	// r resolves paths up to the scan for protected paths, before anything is created.
	r := newLaunchResolver(pathEntries(h.Environ))
	creds := f.Credentials

	// Read-only binds; a bind named through a symlink (merged-usr /bin) is bound at its
	// target and the symlink recreated.
	var roDests []string
	type alias struct{ path, target string }
	var aliases []alias
	b.origin = "a read-only bind"
	var moved []movedBind // binds at another path inside (destbind.go)
	for _, ro := range append(clone(f.ReadOnly), p.toolchainBinds()...) {
		if ro.Dest != "" {
			moved = append(moved, movedBind{ro, true})
			continue
		}
		given, canon, err := canonical(r, "ro", ro.Path, h.Cwd)
		if err != nil {
			if ro.Optional && isAbsent(err) {
				continue
			}
			return nil, err
		}
		if canon == "/" || under(canon, noBindUnder...) {
			return nil, errorf("ro", given, nil, "refusing to bind %s: the sandbox has its own root, /proc and /dev", canon)
		}
		if given != canon {
			path, text := aliasFor(r, given, canon)
			aliases = append(aliases, alias{path, text})
		}
		if !contains(roDests, canon) {
			b.origin = "the read-only bind " + ro.Path
			roDests = append(roDests, canon)
		}
	}
	// Drop binds already inside another read-only bind (/usr/bin when /usr is bound).
	sort.Strings(roDests)
	for _, d := range roDests {
		if !underAny(d, roDests) {
			b.origin = "the read-only bind " + d
			b.bind(d, d, true)
		}
	}

	home := sandboxHome(r, p.home)
	var tmpfsDests []string
	for _, t := range f.Tmpfs {
		dst := t.Path
		if dst == p.home {
			dst = home
			b.origin = "the sandbox's private HOME (bind what you need of your home, e.g. --ro ~/.gitconfig)"
		} else {
			b.origin = "the private tmpfs " + dst
		}
		if contains(tmpfsDests, dst) {
			continue // HOME=/tmp: one tmpfs serves both
		}
		tmpfsDests = append(tmpfsDests, dst)
		if dst == shmPath {
			continue // the size and mode of /dev's own shm, below
		}
		if dst == "/" || under(dst, noBindUnder...) {
			return nil, errorf("tmpfs", dst, nil, "refusing a tmpfs over the root, /proc or /dev")
		}
		mode := t.Mode
		if mode == "" {
			mode = "0755"
		}
		b.tmpfs(dst, mode)
	}
	b.origin = "the sandbox's own /dev"
	b.dev()
	if err := sizeScratch(b.mounts, f.Tmpfs, home, p.home, mergeResources(p.defaults, p.Resources), h.MemTotal); err != nil {
		return nil, err
	}
	b.origin = "the sandbox's own /proc"
	b.add(specs.Mount{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "nodev", "noexec"}})
	b.origin = "the sandbox's own /sys"
	b.sys()

	cwd, err := workdir(r, p.Process.Cwd, ws, h.Cwd)
	if err != nil {
		return nil, err
	}
	// Writable trees: the workspace, then each read-write bind. linked: one was named
	// through a symlink.
	linked := p.workspaceGiven != ws
	b.origin = "the workspace"
	b.bind(ws, ws, false)
	trees := []string{ws}
	for _, rw := range f.ReadWrite {
		if rw.Dest != "" {
			moved = append(moved, movedBind{rw, false})
			continue
		}
		given, canon, err := canonical(r, "rw", rw.Path, h.Cwd)
		if err != nil {
			if rw.Optional && isAbsent(err) {
				continue
			}
			return nil, err
		}
		if err := writable("rw", canon, h, creds); err != nil {
			return nil, err
		}
		if h.Root {
			st, err := os.Stat(canon)
			if err != nil {
				return nil, errorf("rw", given, err, "cannot stat")
			}
			raw := rw.Path
			if rw.relative {
				raw = "." // from the current directory
			}
			if err := viaSymlink("rw", raw, given, canon, st, h); err != nil {
				return nil, err
			}
			if st.Mode()&(os.ModeSocket|os.ModeDevice|os.ModeCharDevice) != 0 {
				// idmapped to its owner, a socket would take the command's connect() as
				// its owner's (a root daemon that trusts the file's mode)
				return nil, errorf("rw", given, nil, "is a socket or device: a root caller's command would reach it as its owner (its read-write binds are idmapped to their owners)")
			}
		}
		b.origin = "the read-write bind " + rw.Path
		b.bind(canon, canon, false)
		linked = linked || given != canon
		trees = append(trees, canon)
		if given != canon {
			path, text := aliasFor(r, given, canon)
			aliases = append(aliases, alias{path, text})
		}
	}
	if p.cache != nil {
		if err := b.bindCache(p.cache, home, trees, p, h); err != nil {
			return nil, err
		}
	}
	// gitRW: the common dirs of linked worktrees that the git plan binds read-write
	// (commit mode), found before any guard runs so that every guard asks one
	// inWritable that knows them (attack review 31 F13).
	var gitRW []string
	inWritable := func(p string) bool {
		return underAny(p, trees) || contains(trees, p) || underAny(p, gitRW) || contains(gitRW, p)
	}
	// A policy file the command could rewrite would decide the next sandbox.
	if p.source != "" && inWritable(p.source) {
		return nil, errorf("policy", p.source, nil, "the policy file lies in a tree the sandbox can write; keep it outside the workspace and read-write binds")
	}
	if err := policyLinks(p.source, trees); err != nil {
		return nil, err
	}
	var protected, makeDirs []string
	var cleanups []cleanup.Entry
	rb := newReadBudget() // what this launch reads of files a sandbox could write
	rb.homes = h.homeNames()
	rb.trees = clone(trees)
	rb.fs = r.outside(inWritable)
	genv, err := gitEnvOf(h.Environ, rb.homes, h.Cwd)
	if err != nil {
		return nil, err
	}
	rb.globals, rb.env = genv.globals, genv
	// The scan first: a local remote found by a repository's guard (enclosing or
	// scanned) that is a git dir the scan guards in commit mode is left to that guard.
	// What this search finds is bound read-only: the known paths of a session's guard
	// (SessionGuard), which searches the same trees again around each command.
	guard := ProtectedScan{Trees: slices.Clone(trees), Cwd: cwd, Patterns: f.Protected, Limit: f.ScanLimit}
	founds := make([][]string, len(trees))
	for i, t := range trees {
		c := ""
		if t == ws {
			c = cwd
		}
		found, err := scanProtected(r, t, c, f.Protected, f.ScanLimit)
		if err != nil {
			return nil, err
		}
		if err := guard.know(found); err != nil {
			return nil, err
		}
		founds[i] = found
	}
	if f.Git == GitCommit {
		rb.commitGitDirs = commitGitDirs(founds)
	}
	// A linked worktree's common dir outside the writable trees is bound read-write
	// (commit mode) only for the .git of a tree the user named, and never under a --ro.
	outsideRW := func(entry, d string) bool {
		return contains(trees, filepath.Dir(entry)) && !underAny(d, roDests) && !contains(roDests, d)
	}
	if f.Git == GitCommit && slices.Contains(f.Protected, ".git") {
		for _, found := range founds {
			for _, m := range found {
				c := rwCommonDir(m, rb)
				if c == "" || inWritable(c) || !outsideRW(m, c) {
					continue
				}
				if err := hostGitDir(c, h, creds); err != nil {
					return nil, err
				}
				b.origin = "the git dir of a linked worktree"
				b.bind(c, c, false)
				gitRW = append(gitRW, c)
			}
		}
		rb.trees = append(rb.trees, gitRW...)
	}
	if slices.Contains(f.Protected, ".git") {
		// what the caller's own git config names in a writable tree, for host git anywhere
		gplan := gitPlan{reads: gitReads{rb: rb}, writable: inWritable}
		if err := gplan.guardGlobalConfig(inWritable); err != nil {
			return nil, err
		}
		protected = append(protected, gplan.readOnly...)
		makeDirs = append(makeDirs, gplan.makeDirs...)
		// the repositories that hold a writable tree from above
		for _, t := range trees {
			plan, err := guardEnclosing(t, trees, inWritable, rb)
			if err != nil {
				return nil, err
			}
			protected = append(protected, plan.readOnly...)
			makeDirs = append(makeDirs, plan.makeDirs...)
			cleanups = append(cleanups, plan.cleanups...)
		}
	}
	for _, found := range founds {
		checkoutGitDirs := gitDirsNamed(found)
		for _, m := range found {
			if filepath.Base(m) != ".git" && checkoutGitDirs[m] {
				continue // a bare-looking git dir a checkout's .git leads to: guarded with it
			}
			if filepath.Base(m) != ".git" {
				if st, err := os.Lstat(m); err == nil && st.Mode()&os.ModeSymlink != 0 {
					return nil, errorf("protected", m, nil, "is a symlink: a symlink cannot be made read-only in place, and the command could replace it (protect its target, or remove the pattern)")
				}
				protected = append(protected, m)
				if isGitDir(m) && slices.Contains(f.Protected, ".git") {
					// a bare repository: read-only whole, and what its config names
					// guarded as a checkout's, from inside it as git takes it (attack
					// review 30 F7)
					plan := gitPlan{reads: gitReads{rb: rb}, writable: inWritable, mode: f.Git}
					if err := plan.guardGitDirSettings(m, m, inWritable); err != nil {
						return nil, err
					}
					if err := plan.guardCheckouts(m); err != nil {
						return nil, err
					}
					protected = append(protected, plan.readOnly...)
					makeDirs = append(makeDirs, plan.makeDirs...)
					cleanups = append(cleanups, plan.cleanups...)
				}
				continue
			}
			plan, err := guardGit(m, f.Git, inWritable, outsideRW, rb)
			if err != nil {
				return nil, err
			}
			makeDirs = append(makeDirs, plan.makeDirs...)
			for _, g := range plan.readOnly {
				if st, err := os.Lstat(g); err == nil && st.Mode()&os.ModeSymlink != 0 {
					return nil, errorf("protected", g, nil, "is a symlink: it cannot be guarded in git commit mode (the command could replace it); use git: readonly")
				}
			}
			protected = append(protected, plan.readOnly...)
			cleanups = append(cleanups, plan.cleanups...)
			for _, d := range plan.bindRO {
				if err := hostGitDir(d, h, creds); err != nil {
					return nil, err
				}
				if !inWritable(d) && !underAny(d, roDests) {
					b.origin = "the git dir of a linked worktree"
					b.bind(d, d, true)
					// the workspace's repository: for a root caller its files are
					// seen as the command's own, as the workspace's are (git checks)
					last := &b.mounts[len(b.mounts)-1]
					last.Options = append(last.Options, "idmap")
				}
			}
			for _, d := range plan.bindRW {
				// bound above (gitRW), so that every guard counted it writable; a
				// common dir the guard would bind that the early pass missed would
				// leave what the guards pin inside it writable
				return nil, errorf("protected", d, nil, "the git dir of a linked worktree would be bound read-write without the guards knowing it writable (an internal error); use git: readonly")
			}
		}
	}

	trees = append(trees, gitRW...)
	if n := pathNoteText(rb, inWritable); n != "" && notes != nil {
		*notes = append(*notes, n)
	}
	if n := madeHooksNoteText(rb); n != "" && notes != nil {
		*notes = append(*notes, n)
	}
	// A path guarded twice (by an enclosing repository and by the scan) is bound once.
	protected, makeDirs = unique(protected), unique(makeDirs)
	masked := append([]string{}, procMasked...)
	checked := dirChecks{fresh: inWritable}
	for _, m := range f.Masked {
		masked = append(masked, checked.maskPaths(m)...)
	}
	// Pin every directory between a writable tree's root and a protected or masked path:
	// a bind onto itself makes it a mount point, which cannot be renamed or removed, so
	// the command cannot move a protected path aside and put one of its own making in its
	// place (mv .git .old; mkdir .git), nor move a masked file's directory where the
	// next launch's mask no longer matches (mv sub sub2; cat sub2/.env).
	dests := map[string]bool{}
	for _, m := range b.mounts {
		dests[m.Destination] = true
	}
	var pins []string
	for _, pp := range append(append([]string{}, protected...), masked...) {
		t := deepest(pp, trees)
		if ro := deepest(pp, roDests); ro != "" && len(ro) > len(t) {
			continue // inside a read-only bind: nothing there can be renamed
		}
		for d := filepath.Dir(pp); t != "" && d != t && underAny(d, []string{t}); d = filepath.Dir(d) {
			if !dests[d] && !contains(protected, d) && !contains(masked, d) {
				dests[d] = true
				pins = append(pins, d)
			}
		}
	}
	b.origin = "a directory holding a protected path"
	for _, d := range pins {
		b.bind(d, d, false)
	}

	// Symlinks whose targets are bound elsewhere: resolver files in /etc (each link of
	// the chain and the target file), names given through a symlink, the workspace as
	// the caller named it.
	b.origin = "a resolver file's target"
	rr := r.outside(inWritable)
	var dotdotDirs []string
	for _, rf := range resolverFiles {
		if !underAny(rf, roDests) && !contains(roDests, filepath.Dir(rf)) {
			continue
		}
		b.origin = "the target of " + rf
		if dirs, ok := b.resolverChain(rr, rf, roDests, trees); ok {
			dotdotDirs = append(dotdotDirs, dirs...)
			if t, err := rr.evalSymlinks(rf); err == nil && !contains(roDests, t) {
				roDests = append(roDests, t)
			}
		}
	}
	// Never in a bound tree: there the name exists already, and creating it would
	// write the host.
	var made []string
	for _, a := range aliases {
		if contains(made, a.path) {
			continue // /bin for both /bin and /bin/false
		}
		made = append(made, a.path)
		if !under(a.path, roDests...) && !under(a.path, trees...) {
			b.links = append(b.links, config.Symlink{Path: a.path, Target: a.target})
		}
	}
	if p.workspaceGiven != ws && !under(p.workspaceGiven, roDests...) && !under(p.workspaceGiven, trees...) {
		b.links = append(b.links, config.Symlink{Path: p.workspaceGiven, Target: ws})
	}
	movedLinked, err := b.destBinds(r, moved, p, h, masked, ws)
	if err != nil {
		return nil, err
	}
	linked = linked || movedLinked
	if err := b.userLinks(f.Symlinks); err != nil {
		return nil, err
	}
	b.emptyDirs(dotdotDirs)
	if err := b.check(); err != nil {
		return nil, err
	}
	sort.SliceStable(b.mounts, func(i, j int) bool { return depth(b.mounts[i].Destination) < depth(b.mounts[j].Destination) })

	env, err := environment(p, h, home, b.mounts)
	if err != nil {
		return nil, err
	}
	ns := []specs.LinuxNamespace{{Type: specs.UserNamespace}, {Type: specs.MountNamespace},
		{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}, {Type: specs.CgroupNamespace}}
	if p.Network.Mode != NetHost {
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace})
	}
	publish, err := ParsePublish(p.Network.Publish)
	if err != nil {
		return nil, errorf("publish", "", err, "bad port forward")
	}
	resources, rlimits, limitsInfo, err := limits(p.Resources, p.defaults)
	if err != nil {
		return nil, err
	}
	// The command's ids inside: 0 for a root caller (mapped to a host id of the
	// range by nsinit), the caller's own otherwise, or the ones asked for.
	uid, gid, rng := CommandIDs(h, p.uid, p.gid, p.idRange)
	var rootID *config.RootID
	if rng != nil {
		// a root caller's command runs as a host id of the range; for a uid 0 that is
		// not one, an id of the range owns the sandbox's user namespace (nsinit)
		r := *rng
		// Never host uid 0 for a tree reached through a symlink: one planted by an
		// earlier command could lead to a file system that cannot be idmapped. Only a
		// root caller (h.Root) may keep host uid 0 at all.
		rootID = &config.RootID{Range: r, AllowHostRoot: h.Root && p.RootIdentityMap != RootIdentityDeny && !linked}
	}
	// The filter is compiled here (or ahead of time, for a built-in's), so that a bad
	// one is a policy error (policy check, export), and the launcher and the init only
	// pass the program on.
	source, filter, err := launchFilter(p.Seccomp, p.Network.Mode, h.UID, uid, gid)
	if err != nil {
		return nil, errorf("seccomp", "", err, "bad filter")
	}
	var sessionGuard config.Guard
	if len(f.Protected) > 0 {
		// the moved read-write binds' trees, searched (and refused when they held a
		// protected path) by destBinds
		for _, m := range moved {
			if m.ro {
				continue
			}
			if _, canon, err := canonical(r, "rw", m.Path, h.Cwd); err == nil && !slices.Contains(guard.Trees, canon) {
				guard.Trees = append(guard.Trees, canon)
			}
		}
		guard.Configs = rb.configStamps()
		guard.keepWorktrees(rb)
		sessionGuard = NewSessionGuard("", guard)
	}
	return &config.Config{
		Guard: sessionGuard,
		Process: &specs.Process{
			User:            specs.User{UID: uid, GID: gid},
			Args:            args,
			Env:             env,
			Cwd:             cwd,
			Rlimits:         rlimits,
			NoNewPrivileges: true,
		},
		Hostname: p.Process.Hostname,
		Mounts:   b.mounts,
		Linux: &config.Linux{
			UIDMappings:   []specs.LinuxIDMapping{{ContainerID: uid, HostID: uint32(h.UID), Size: 1}},
			GIDMappings:   []specs.LinuxIDMapping{{ContainerID: gid, HostID: uint32(h.GID), Size: 1}},
			Namespaces:    ns,
			ReadonlyPaths: append(protected, procReadOnly...),
			MaskedPaths:   masked,
			Filter:        filter,
			Seccomp:       source,
			Resources:     resources,
		},
		Symlinks:         b.links,
		Files:            append(loginProfile(home, env, b.mounts, b.links), goTelemetryOff(home, b.mounts, b.links)...),
		ReadonlyOptional: procReadOnly,
		Limits:           limitsInfo,
		RootID:           rootID,
		Cleanup:          append(cleanups, mountPointCleanups(b.mounts)...),
		MakeDirs:         makeDirs,
		Timeout:          p.Timeout(),
		Egress:           egressConfig(p.Network),
		Publish:          publish,
		HostPorts:        p.Network.HostPorts,
	}, nil
}

// hostGitDir checks a linked worktree's git dir that is bound from outside the writable
// trees, as a read-write bind would be: not in a system tree, not a home or its
// parent, not in a credential path.
func hostGitDir(d string, h Host, creds []string) error {
	for _, t := range systemTrees {
		if under(d, t) {
			return errorf("protected", d, nil, "refusing to bind the git dir %s of a linked worktree: it lies in the system directory %s", d, t)
		}
	}
	for _, c := range creds {
		if under(d, c) || under(c, d) {
			return errorf("protected", d, nil, "refusing to bind the git dir %s of a linked worktree: it is, holds or lies in the credential path %s", d, c)
		}
	}
	for _, home := range h.Homes {
		if under(home, d) {
			return errorf("protected", d, nil, "refusing to bind the git dir %s of a linked worktree: it is or holds the home directory %s", d, home)
		}
	}
	return nil
}

// deepest returns the deepest of trees that holds p, or "".
func deepest(p string, trees []string) string {
	best := ""
	for _, t := range trees {
		if under(p, t) && len(t) > len(best) {
			best = t
		}
	}
	return best
}

// aliasFor is the symlink that makes given reach canon inside: given itself when its
// directory is canonical, else the first component of given that is a symlink on the
// host (/bin for /bin/false on merged-usr, with its own text "usr/bin"). A link at
// /bin/false could not be made inside: /bin there is that symlink already.
func aliasFor(r *resolver, given, canon string) (path, text string) {
	for p := given; ; {
		parent := filepath.Dir(p)
		if parent == p {
			break
		}
		if c, err := r.evalSymlinks(parent); err != nil || c == parent {
			if p == given {
				return given, linkText(r, given, canon)
			}
			if t, err := r.evalSymlinks(p); err == nil {
				return p, linkText(r, p, t)
			}
			break
		}
		p = parent
	}
	return given, linkText(r, given, canon)
}

// linkText is what a symlink at given should say: the host's own text when given itself
// is the symlink (merged-usr's relative "usr/bin"), else the canonical target.
func linkText(r *resolver, given, canon string) string {
	if st, err := r.lstat(given); err == nil && st.Mode()&os.ModeSymlink != 0 {
		if parent, err := r.evalSymlinks(filepath.Dir(given)); err == nil && parent == filepath.Dir(given) {
			if t, err := r.readlink(given); err == nil {
				return t
			}
		}
	}
	return canon
}

// unique returns list without its repeats, in order.
func unique(list []string) []string {
	out := list[:0]
	if len(list) <= 32 { // the usual few: no map
		for _, p := range list {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
		return out
	}
	seen := make(map[string]bool, len(list))
	for _, p := range list {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func isNotExist(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason == "does not exist"
}

// isAbsent reports whether an optional bind whose canonical() gave err is skipped: it
// does not exist, or the caller may not reach it (EACCES on a directory on the way, as
// ${home}/go for uid 65534 with HOME=/root). Nothing the caller cannot read is lost by
// leaving it out; a path that is not optional still stops the launch.
func isAbsent(err error) bool {
	return isNotExist(err) || errors.Is(err, fs.ErrPermission)
}

type builder struct {
	mounts  []specs.Mount
	origins []string // why each mount is there, for error messages
	origin  string   // the origin of mounts added next
	links   []config.Symlink
}

func (b *builder) add(m specs.Mount) {
	b.mounts = append(b.mounts, m)
	b.origins = append(b.origins, b.origin)
}

func (b *builder) bind(src, dst string, ro bool) {
	opts := []string{"rbind", "nosuid", "nodev"}
	if ro {
		opts = append(opts, "ro")
	}
	b.add(specs.Mount{Destination: dst, Type: "bind", Source: src, Options: opts})
}

func (b *builder) tmpfs(dst, mode string) {
	b.add(specs.Mount{Destination: dst, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=" + mode}})
}

// sys is a read-only /sys holding only what programs read to size themselves: the
// CPU topology and online CPUs (/sys/devices/system/cpu, which lscpu and sysconf's
// _SC_NPROCESSORS_CONF read), bound read-only from the host's. No device, firmware,
// kernel, module or debug tree is there. Not a sysfs of the sandbox's own: the kernel
// refuses one with the host's network, and inside a container whose /sys has masked
// parts, as it refuses procfs (docs/decisions.md, "A /sys of CPU topology only").
func (b *builder) sys() {
	const cpu = "/sys/devices/system/cpu"
	b.add(specs.Mount{Destination: "/sys", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "noexec", "mode=0755", "ro"}})
	b.add(specs.Mount{Destination: cpu, Type: "bind", Source: cpu, Options: []string{"bind", "nosuid", "nodev", "noexec", "ro"}})
}

// MaxPtys is the most pseudo-terminals a sandbox's devpts instance holds at once (its
// "max=" mount option, Documentation/filesystems/devpts.rst): the terminals of every
// devpts instance but the host's first come from one pool, kernel.pty.max less
// kernel.pty.reserve (3072 by default), and one sandbox without it could take them all
// (ENOSPC for every other sandbox and container on the host). A quarter of LXC's
// default lxc.pty.max (1024, for a whole system): room for a tmux of many panes or a
// test suite's pexpect children; twelve sandboxes at the cap before the pool is empty.
const MaxPtys = 256

// dev is a minimal /dev: a read-only tmpfs with binds of the host's harmless character
// devices (a device node cannot be created in a user namespace), a new devpts instance
// of at most MaxPtys terminals, a private /dev/shm and the usual links.
func (b *builder) dev() {
	b.add(specs.Mount{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "noexec", "mode=0755", "ro"}})
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		// read-only: the device still reads and writes, but its inode (mode, times) cannot change
		b.add(specs.Mount{Destination: "/dev/" + d, Type: "bind", Source: "/dev/" + d, Options: []string{"bind", "nosuid", "noexec", "ro"}})
	}
	b.add(specs.Mount{Destination: "/dev/pts", Type: "devpts", Source: "devpts",
		Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "max=" + strconv.Itoa(MaxPtys)}})
	b.add(specs.Mount{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "nodev", "mode=1777"}})
	b.links = append(b.links,
		config.Symlink{Path: "/dev/fd", Target: "/proc/self/fd"},
		config.Symlink{Path: "/dev/stdin", Target: "/proc/self/fd/0"},
		config.Symlink{Path: "/dev/stdout", Target: "/proc/self/fd/1"},
		config.Symlink{Path: "/dev/stderr", Target: "/proc/self/fd/2"},
		config.Symlink{Path: "/dev/ptmx", Target: "pts/ptmx"})
}

// check refuses two mounts on one destination: which one wins would be an accident.
func (b *builder) check() error {
	seen := map[string]int{}
	for i, m := range b.mounts {
		if prev, ok := seen[m.Destination]; ok {
			return errorf("mount", m.Destination, nil, "wanted as %s, but it is already %s", b.origins[i], b.origins[prev])
		}
		seen[m.Destination] = i
	}
	return nil
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// under reports whether p is one of dirs or lies beneath one of them.
func under(p string, dirs ...string) bool {
	for _, d := range dirs {
		if p == d || d == "/" || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// pathEntries is the number of entries of env's PATH (KEY=VALUE, the last one wins;
// 2 when unset: glibc's default), for sizing.
func pathEntries(env []string) int {
	p, ok := envLookup(env, "PATH")
	if !ok {
		return 2
	}
	return strings.Count(p, ":") + 1
}

// underAny reports whether p lies strictly beneath one of dirs.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if p != d && (d == "/" || strings.HasPrefix(p, d+"/")) {
			return true
		}
	}
	return false
}

// validHostname accepts RFC 1123 host names (letters, digits, hyphens, dot-separated
// labels), at most 64 bytes as sethostname(2) allows.
func validHostname(h string) bool {
	if len(h) > 64 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
