package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gosbx/gosbx/policy"
)

// boundaryFlags are the flags that shape the sandbox, shared by `exec`, `policy show`
// and `policy export`. They may only add to the policy, or narrow it, where it allows.
type boundaryFlags struct {
	o        policy.Options
	policy   string
	timeout  string
	uid, gid string
	idRange  string
	// hostPorts are --host-port's, checked to be ports by options
	hostPorts []uint
	// cache and noCache are --cache and --no-cache (policy.Options.Cache)
	cache, noCache bool
}

func (b *boundaryFlags) registerLimits(f *pflag.FlagSet) {
	r := &b.o.Resources
	f.StringVar(&r.Memory, "memory", "", "cap memory (tmpfs included) at `SIZE` (512M, 2G); required: exit 125 if it cannot be applied")
	f.StringVar(&r.MemorySwap, "memory-swap", "", "allow `SIZE` of swap beyond --memory (default 0; -1: any)")
	f.Int64Var(&r.Pids, "pids", 0, "cap processes and threads at `N`")
	f.Float64Var(&r.CPUs, "cpus", 0, "cap CPU time at `N` cores (0.5: half a core), on ceil(N) of your CPUs")
	f.Uint64Var(&r.NoFile, "nofile", 0, "cap open files at `N` (RLIMIT_NOFILE)")
	f.StringVar(&r.FSize, "fsize", "", "cap the size of a written file at `SIZE` (RLIMIT_FSIZE)")
	f.StringVar(&r.Limits, "limits", "", "required (default): exit 125 if a limit asked for cannot be applied; best-effort: run without it and say so")
	f.StringVar(&r.CgroupParent, "cgroup-parent", "", "make the sandbox's cgroup v2 group under `GROUP` (a subtree delegated to you, relative to /sys/fs/cgroup)")
}

func (b *boundaryFlags) register(f *pflag.FlagSet) {
	f.StringVar(&b.policy, "policy", "", "the policy: a built-in profile (agent, strict, build) or a YAML/JSON `FILE` (default agent)")
	f.StringVar(&b.o.Workspace, "workspace", "", "the read-write `DIR`, bound at its own path (default: the policy's, else the current directory)")
	f.StringVar(&b.o.Chdir, "chdir", "", "working `DIR` inside (a relative DIR is taken from the workspace); default: the current directory if inside the workspace, else the workspace")
	repeatableVar(f, &b.o.ReadOnly, "ro", nil, "bind `PATH` read-only at the same path, or SRC:DST at DST (repeatable; relative to the current directory)")
	repeatableVar(f, &b.o.ReadWrite, "rw", nil, "bind `PATH` read-write at the same path, or SRC:DST at DST (repeatable; relative to the current directory)")
	repeatableVar(f, &b.o.Toolchains, "toolchain", nil, "auto: bind read-only the roots of your PATH's toolchains (pyenv's version, nvm's node, ~/.local/bin, /opt/*) and of the workspace venv's python; none: no toolchains; or a toolchain root `PATH` (repeatable; default: the policy's, auto under build)")
	repeatableVar(f, &b.o.Symlinks, "symlink", nil, "make a symbolic link `TARGET:PATH` inside, at PATH outside every bind (repeatable)")
	repeatableVar(f, &b.o.Tmpfs, "tmpfs", nil, "a private tmpfs at `PATH[:size=SIZE]`, or the size of the policy's scratch tmpfs there (/tmp, /dev/shm, ...; repeatable)")
	repeatableVar(f, &b.o.Env, "env", nil, "set `KEY=VALUE` inside (repeatable)")
	repeatableVar(f, &b.o.PassEnv, "pass-env", nil, "pass the caller's variable `KEY` through (repeatable)")
	f.StringVar(&b.o.Net, "net", "", "network `MODE`: none (a new namespace with only lo), proxy (only lo, and connections to --allow-host hosts through gosbx's proxy) or host (default: the policy's, none)")
	repeatableVar(f, &b.o.Publish, "publish", nil, "forward `[HOSTIP:]HOSTPORT:PORT` from the host (127.0.0.1 unless HOSTIP is given) to PORT on the sandbox's loopback (repeatable; not with --net host)")
	f.UintSliceVar(&b.hostPorts, "host-port", nil, "let the sandbox reach the host's 127.0.0.1:`PORT` at its own 127.0.0.1:PORT (repeatable; not with --net host)")
	repeatableVar(f, &b.o.AllowHosts, "allow-host", nil, "with --net proxy (implied): let the sandbox reach `PATTERN` (pypi.org, *.githubusercontent.com, HOST:PORT; default ports 443 and 80; repeatable)")
	f.StringVar(&b.timeout, "timeout", "", "kill the whole sandbox after `DURATION` (e.g. 30s, 5m; a bare number is seconds; 0 = none); exit 124; may only shorten the policy's")
	f.StringVar(&b.o.Hostname, "hostname", "", "hostname `NAME` inside (default: the policy's, \"gosbx\")")
	f.StringVar(&b.uid, "uid", "", "the command's uid `N` inside (default: 0 for a root caller, else your own)")
	f.StringVar(&b.gid, "gid", "", "the command's gid `N` inside (default: 0 for a root caller, else your own)")
	f.StringVar(&b.idRange, "id-range", "", "for a root caller: the host ids `BASE:COUNT` its commands run as, one per sandbox (default: $GOSBX_ID_RANGE, else 2100000000:65536)")
	f.BoolVar(&b.cache, "cache", false, "bind the workspace's own cache directory (~/.cache/gosbx/ID on the host) as ~/.cache, with GOCACHE, PIP_CACHE_DIR, npm_config_cache pointed into it (default: the policy's; on in build)")
	f.IntVar(&b.o.ScanLimit, "scan-limit", 0, "search at most `N` directories of each writable tree (3 levels deep) for protected paths such as nested .git, refusing a tree that needs more (default: the policy's filesystem.scan_limit, 4096)")
	f.BoolVar(&b.noCache, "no-cache", false, "no cache directory: build caches in the private HOME, lost at exit")
	b.registerLimits(f)
}

// options loads the policy and returns the caller's options for a command args.
func (b *boundaryFlags) options(args []string) (policy.Options, error) {
	o := b.o
	o.Args = args
	d, err := parseTimeout(b.timeout)
	if err != nil {
		return o, usageError{err}
	}
	o.Timeout = d
	if b.cache && b.noCache {
		return o, usageError{fmt.Errorf("--cache and --no-cache: choose one")}
	} else if b.cache || b.noCache {
		o.Cache = &b.cache
	}
	for _, p := range b.hostPorts {
		if p == 0 || p > 65535 {
			return o, usageError{fmt.Errorf("--host-port %d: want a port 1-65535", p)}
		}
		o.HostPorts = append(o.HostPorts, uint16(p))
	}
	for _, id := range []struct {
		flag, v string
		dst     **uint32
	}{{"--uid", b.uid, &o.UID}, {"--gid", b.gid, &o.GID}} {
		if id.v == "" {
			continue
		}
		n, err := strconv.ParseUint(id.v, 10, 32)
		if err != nil || n > 4294967294 {
			return o, usageError{fmt.Errorf("%s %s: want a number from 0 to 4294967294", id.flag, id.v)}
		}
		v := uint32(n)
		*id.dst = &v
	}
	if r := b.idRange; r != "" || os.Getenv("GOSBX_ID_RANGE") != "" {
		name := "--id-range"
		if r == "" {
			r, name = os.Getenv("GOSBX_ID_RANGE"), "GOSBX_ID_RANGE"
		}
		ir, err := policy.ParseIDRange(r)
		if err != nil {
			return o, usageError{fmt.Errorf("%s: %w", name, err)}
		}
		o.IDRange = &ir
	}
	p, err := policy.Load(b.policy)
	if err != nil {
		return o, &setupFailure{step: "policy", err: err}
	}
	o.Policy = p
	return o, nil
}

// parseTimeout reads --timeout (policy.ParseTimeout: a duration or seconds, 0 = none).
func parseTimeout(s string) (time.Duration, error) {
	d, err := policy.ParseTimeout(s)
	if err != nil {
		return 0, fmt.Errorf("--timeout %w", err)
	}
	return d, nil
}

// effective is the policy a launch with these flags and args builds, on this host.
func (b *boundaryFlags) effective(args []string) (*policy.Policy, policy.Options, policy.Host, error) {
	o, err := b.options(args)
	if err != nil {
		return nil, o, policy.Host{}, err
	}
	host, err := policy.CurrentHost()
	if err != nil {
		return nil, o, host, err
	}
	eff, err := policy.Effective(o, host)
	if err != nil {
		return nil, o, host, &setupFailure{step: "policy", err: err}
	}
	return eff, o, host, nil
}

// repeatableVar registers a repeatable string flag: pflag's StringArrayVar (each use
// adds one value, no comma splitting; the first use replaces the default) without its
// rendering of the default at registration, which writes it through a CSV writer with
// a 4 KiB buffer, for every such flag on every start of gosbx (9 flags, 36 KiB of the
// launcher's heap that no collection ever frees: docs/decisions.md, "The launcher's
// memory"). The default is always empty here.
func repeatableVar(f *pflag.FlagSet, p *[]string, name string, _ []string, usage string) {
	*p = nil
	f.Var(&repeatable{p: p}, name, usage)
}

// repeatable is the pflag.Value of repeatableVar.
type repeatable struct {
	p       *[]string
	changed bool
}

func (r *repeatable) Set(v string) error {
	if !r.changed {
		*r.p, r.changed = nil, true
	}
	*r.p = append(*r.p, v)
	return nil
}

// Type is pflag's name for the kind, shown where a usage names no value.
func (r *repeatable) Type() string { return "stringArray" }

// String is "" while empty, so that help shows no default, as for pflag's stringArray.
func (r *repeatable) String() string {
	if len(*r.p) == 0 {
		return ""
	}
	return "[" + strings.Join(*r.p, ",") + "]"
}
