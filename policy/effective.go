package policy

import (
	"maps"
	"slices"

	"errors"
	"github.com/gosbx/gosbx/egress"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Effective returns the policy that a launch with o on host h builds: o.Policy (the
// agent profile when nil) with the caller's flags applied where the policy allows them,
// and ${workspace}, ${home}, ${uid} and ~/ expanded. Its Workspace.Path is canonical.
// A flag the policy does not allow, or that would widen a limit, is an *Error.
func Effective(o Options, h Host) (*Policy, error) {
	base := o.Policy
	if base == nil {
		base, _ = Builtin(DefaultProfile)
	}
	p := merge(base, &Policy{Extends: base.Extends})
	vars := map[string]string{"home": h.Home, "uid": strconv.Itoa(h.UID)}
	if !filepath.IsAbs(h.Home) || filepath.Clean(h.Home) == "/" {
		vars["home"] = fallbackHome
	}
	vars["home"] = filepath.Clean(vars["home"])
	p.home = vars["home"]
	ex := func(field, s string) (string, error) {
		v, err := expand(s, vars)
		if err != nil {
			return "", errorf(field, s, nil, "%v", err)
		}
		return v, nil
	}
	exPath := func(field, s string) (string, error) {
		v, err := ex(field, s)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(v) {
			v = filepath.Join(h.Cwd, v)
		}
		return filepath.Clean(v), nil
	}

	// The workspace first: the other paths may refer to it.
	ws := o.Workspace
	if ws == "" && p.Workspace.Path != "" {
		var err error
		if ws, err = exPath("workspace", p.Workspace.Path); err != nil {
			return nil, err
		}
	}
	// Nothing is created from here to the end: one resolver serves every path.
	r := newResolver()
	creds, err := credentials(r, p.Filesystem.Credentials, vars, h)
	if err != nil {
		return nil, err
	}
	canon, given, err := workspace(r, ws, h, creds)
	if err != nil {
		var pe *Error
		if ws == "" && errors.As(err, &pe) && pe.Field == "workspace" && !strings.Contains(pe.Reason, cwdWorkspace) {
			// once: workspace's own refusal says it already (the trial's finding: twice)
			pe.Reason += " (" + cwdWorkspace + ")"
		}
		return nil, err
	}
	p.Workspace.Path, p.workspaceGiven = canon, given
	vars["workspace"] = canon
	p.uid, p.gid, p.idRange = o.UID, o.GID, o.IDRange
	if err := cacheFor(p, o, h, canon); err != nil {
		return nil, err
	}
	if o.IDRange != nil {
		if err := o.IDRange.Check(); err != nil {
			return nil, errorf("id-range", "", nil, "%v", err)
		}
	}

	// The caller's flags, where the policy allows them.
	f := &p.Filesystem
	if len(o.ReadOnly) > 0 && !allowed(f.AllowExtraReadOnly) {
		return nil, errorf("ro", o.ReadOnly[0], nil, "the policy does not allow extra read-only binds (filesystem.allow_extra_read_only)")
	}
	if len(o.ReadWrite) > 0 && !allowed(f.AllowExtraReadWrite) {
		return nil, errorf("rw", o.ReadWrite[0], nil, "the policy does not allow extra read-write binds (filesystem.allow_extra_read_write)")
	}
	for _, r := range o.ReadOnly {
		r, dst := splitDest(r)
		if r == "" {
			return nil, errorf("ro", r, nil, "empty path")
		}
		f.ReadOnly = append(f.ReadOnly, Bind{Path: absFrom(r, h.Cwd), Dest: dst, flag: true})
	}
	for _, r := range o.ReadWrite {
		r, dst := splitDest(r)
		if r == "" {
			return nil, errorf("rw", r, nil, "empty path")
		}
		f.ReadWrite = append(f.ReadWrite, Bind{Path: absFrom(r, h.Cwd), Dest: dst, flag: true, relative: !filepath.IsAbs(r)})
	}
	for _, l := range o.Symlinks {
		target, path, ok := strings.Cut(l, ":")
		if !ok || target == "" || path == "" {
			return nil, errorf("symlink", l, nil, "want TARGET:PATH (a symbolic link at PATH inside saying TARGET)")
		}
		f.Symlinks = append(f.Symlinks, Symlink{Path: path, Target: target})
	}
	if f.Toolchains, err = toolchainFlags(f.Toolchains, o.Toolchains, allowed(f.AllowExtraReadOnly)); err != nil {
		return nil, err
	}
	e := &p.Environment
	if err := checkExtraEnv(allowed(e.AllowExtra), o.Env, o.PassEnv); err != nil {
		return nil, err
	}
	for _, kv := range o.Env {
		k, v, err := envFlag(kv)
		if err != nil {
			return nil, err
		}
		if e.Set == nil {
			e.Set = map[string]string{}
		}
		e.Set[k] = v
		e.literal = append(e.literal, k)
	}
	for _, k := range o.PassEnv {
		if !validEnvName(k) {
			return nil, errorf("pass-env", "", nil, "bad variable name %q", k)
		}
		e.Pass = append(e.Pass, k)
	}
	net := o.Net
	if net == "" && len(o.AllowHosts) > 0 {
		net = NetProxy
	}
	switch net {
	case "":
	case NetProxy:
		p.Network.Mode = NetProxy
	case NetNone:
		p.Network.Mode = NetNone
	case NetHost:
		if !allowed(p.Network.AllowHost) {
			return nil, errorf("net", "", nil, "the policy does not allow the host network (network.allow_host)")
		}
		p.Network.Mode = NetHost
	default:
		return nil, errorf("net", "", nil, "unknown network mode %q (want none, host or proxy)", o.Net)
	}
	if len(o.AllowHosts) > 0 {
		if !allowed(p.Network.AllowExtraHosts) {
			return nil, errorf("allow-host", "", nil, "the policy does not allow extra hosts (network.allow_extra_hosts)")
		}
		if p.Network.Mode != NetProxy {
			return nil, errorf("allow-host", "", nil, "--allow-host needs --net proxy (the network mode is %s)", p.Network.Mode)
		}
		if _, err := egress.ParseRules("--allow-host", o.AllowHosts); err != nil {
			return nil, errorf("allow-host", "", err, "bad host pattern")
		}
		p.Network.Allow = append(slices.Clip(p.Network.Allow), o.AllowHosts...)
	}
	if len(o.HostPorts) > 0 {
		if !allowed(p.Network.AllowExtraHosts) {
			return nil, errorf("host-port", "", nil, "the policy does not allow extra hosts (network.allow_extra_hosts)")
		}
		if p.Network.Mode == NetHost {
			return nil, errorf("host-port", "", nil, "--host-port needs a network namespace of the sandbox's own (with --net host the whole loopback is shared)")
		}
		p.Network.HostPorts = append(slices.Clip(p.Network.HostPorts), o.HostPorts...)
	}
	if len(o.Publish) > 0 {
		if p.Network.Mode == NetHost {
			return nil, errorf("publish", "", nil, "--publish needs a network namespace of the sandbox's own (not --net host)")
		}
		if _, err := ParsePublish(o.Publish); err != nil {
			return nil, errorf("publish", "", err, "bad port forward")
		}
		p.Network.Publish = append(slices.Clip(p.Network.Publish), o.Publish...)
	}
	if p.Network.Mode == "" {
		p.Network.Mode = NetNone
	}
	limit, _ := ParseTimeout(p.Process.Timeout)
	if o.Timeout < 0 {
		// as --timeout -1s is refused: a negative one is no limit, not a shorter one
		return nil, errorf("timeout", "", nil, "%v: want 0 (the policy's) or a positive duration", o.Timeout)
	}
	if o.Timeout > 0 {
		if err := checkShorter(limit, o.Timeout); err != nil {
			return nil, err
		}
		p.Process.Timeout = o.Timeout.String()
	}
	if o.Resources != (Resources{}) {
		if err := o.Resources.validate("resources"); err != nil {
			var fe *FileError
			if errors.As(err, &fe) {
				// the flag's name as every other Error's Field: "memory", not "--memory"
				return nil, errorf(strings.ReplaceAll(strings.TrimPrefix(fe.Field, "resources."), "_", "-"), "", nil, "%s", fe.Reason)
			}
			return nil, errorf("limits", "", err, "bad limit")
		}
		if err := checkLower(p.Resources, o.Resources); err != nil {
			return nil, err
		}
		p.Resources = mergeResources(p.Resources, &o.Resources)
	}
	if o.ScanLimit < 0 {
		return nil, errorf("scan-limit", "", nil, "%d: want a positive number of directories", o.ScanLimit)
	} else if o.ScanLimit > 0 {
		p.Filesystem.ScanLimit = o.ScanLimit
	}
	if o.Hostname != "" {
		p.Process.Hostname = o.Hostname
	}
	if p.Process.Hostname == "" {
		p.Process.Hostname = DefaultHostname
	}
	if !validHostname(p.Process.Hostname) {
		return nil, errorf("hostname", "", nil, "%q is not a valid hostname (letters, digits, '-' and '.', at most 64 bytes)", p.Process.Hostname)
	}
	if o.Chdir != "" {
		p.Process.Cwd = o.Chdir
	}

	// Expand every path and value.
	for _, list := range []*[]Bind{&f.ReadOnly, &f.ReadWrite} {
		for i := range *list {
			if (*list)[i].Path, err = exPath("bind", (*list)[i].Path); err != nil {
				return nil, err
			}
			if d := (*list)[i].Dest; d != "" {
				if (*list)[i].Dest, err = ex("bind", d); err != nil {
					return nil, err
				}
			}
		}
	}
	f.ReadOnly, f.ReadWrite = dedupeBinds(f.ReadOnly), dedupeBinds(f.ReadWrite)
	if f.Git == GitCommit {
		// a commit needs the caller's identity: user.name and user.email alone, read
		// here from the caller's git config and set as git's variables; the files are
		// not bound, they may hold credentials (docs/decisions.md, "git: commit
		// gives the identity, not the git config file"). Read once the writable trees
		// are known: a config file reached through one is the sandbox's to plant.
		writable := []string{p.Workspace.Path}
		for _, b := range f.ReadWrite {
			writable = append(writable, b.Path)
		}
		p.Environment.gitIdent = gitIdentEnv(h, writable)
	}
	for i := range f.Tmpfs {
		if f.Tmpfs[i].Path, err = exPath("tmpfs", f.Tmpfs[i].Path); err != nil {
			return nil, err
		}
	}
	if f.Tmpfs, err = tmpfsFlags(f.Tmpfs, o.Tmpfs, h.Cwd); err != nil {
		return nil, err
	}
	for i := range f.Masked {
		if f.Masked[i], err = exPath("masked", f.Masked[i]); err != nil {
			return nil, err
		}
	}
	f.Credentials = creds
	for i := range e.PathPrepend {
		if e.PathPrepend[i], err = exPath("path_prepend", e.PathPrepend[i]); err != nil {
			return nil, err
		}
	}
	set := map[string]string{}
	for k, v := range e.Set {
		if contains(e.literal, k) {
			set[k] = v // the caller's --env values are taken as they are
		} else if set[k], err = ex("environment.set."+k, v); err != nil {
			return nil, err
		}
	}
	if len(set) > 0 {
		e.Set = set
	}
	if len(e.Offline) > 0 {
		off := make(map[string]string, len(e.Offline))
		for k, v := range e.Offline {
			if off[k], err = ex("environment.offline."+k, v); err != nil {
				return nil, err
			}
		}
		e.Offline = off
	}
	if e.Path != "" {
		if e.Path, err = ex("environment.path", e.Path); err != nil {
			return nil, err
		}
	}
	if err := p.resolveToolchains(h, canon, exPath); err != nil {
		return nil, err
	}
	if p.Process.Cwd != "" {
		cwd, err := ex("cwd", p.Process.Cwd)
		if err != nil {
			return nil, err
		}
		if !filepath.IsAbs(cwd) {
			cwd = filepath.Join(canon, cwd)
		}
		p.Process.Cwd = filepath.Clean(cwd)
	}
	return p, nil
}

func absFrom(p, cwd string) string {
	if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "${") {
		return p
	}
	return filepath.Join(cwd, p)
}

// credentials expands and canonicalizes the credential paths (missing ones kept as
// written: they cannot be inside anything yet). A path under the home ("~/",
// "${home}") is expanded for every name of h's home (vars' home, the sandbox's, then
// Host.homeNames: the launcher's $HOME and the passwd home the account's other shells
// use; attack review 38 F1). $XDG_CONFIG_HOME is not taken for ~/.config: a
// workspace may hold it (the git guard reads its git/config, TestGitGapsEnvironmentConfig).
func credentials(r *resolver, list []string, vars map[string]string, h Host) ([]string, error) {
	homes := append([]string{vars["home"]}, h.homeNames()...)
	out := make([]string, 0, len(list))
	add := func(v string) {
		if canon, err := r.evalSymlinks(v); err == nil {
			v = canon
		}
		if v = filepath.Clean(v); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, c := range list {
		at := homes
		if !strings.HasPrefix(c, "~") && !strings.Contains(c, "${home}") {
			at = homes[:1]
		}
		for _, home := range at {
			vars := maps.Clone(vars)
			vars["home"] = home
			v, err := expand(c, vars)
			if err != nil {
				return nil, errorf("credentials", c, nil, "%v", err)
			}
			add(v)
		}
	}
	return out, nil
}

// Timeout is the policy's wall-clock limit (0: none).
func (p *Policy) Timeout() time.Duration {
	d, _ := ParseTimeout(p.Process.Timeout)
	return d
}

// dedupeBinds keeps one bind of each expanded path and destination that policies
// name (a profile's optional ~/.gitconfig and a file's own ~/.gitconfig, after extends
// appended them): at the first one's place, optional only if every one was. A flag's
// bind is left as it is: one that repeats another is refused by Compile ("already").
func dedupeBinds(list []Bind) []Bind {
	out := list[:0:0]
	at := map[[2]string]int{}
	for _, b := range list {
		k := [2]string{b.Path, b.Dest}
		if i, ok := at[k]; ok && !b.flag {
			out[i].Optional = out[i].Optional && b.Optional
			continue
		}
		if !b.flag {
			at[k] = len(out)
		}
		out = append(out, b)
	}
	return out
}

// cwdWorkspace is what a workspace refusal adds when neither --workspace nor the policy
// named the workspace.
const cwdWorkspace = "the workspace is the current directory when neither --workspace nor the policy names one"
