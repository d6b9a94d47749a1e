package mounts

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// Symlink is one entry of config.Config.Symlinks.
type Symlink = config.Symlink

// stagingDirs are candidate attach points for the new root before pivot_root. Every bind
// source is cloned before the root is attached, so hiding one of them is harmless.
var stagingDirs = []string{"/tmp", "/mnt", "/run", "/dev", "/proc"}

// StagingDir is the first of the staging candidates (/tmp, /mnt, /run, /dev, /proc)
// that is a directory, not a symbolic link, in the current mount namespace: where
// Setup attaches the new root before pivot_root, and where doctor's mount probe
// attaches its own (a container image without /tmp has /dev). "" when none is.
func StagingDir() string {
	for _, d := range stagingDirs {
		var st unix.Stat_t
		if unix.Lstat(d, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return d
		}
	}
	return ""
}

// Setup builds the new root described by spec in the current mount namespace, in order:
// every mount of spec.Mounts (binds from host paths, then new file systems), the
// spec.Symlinks, the spec.Files (mounts.WriteFile), the protected paths of
// spec.Linux.ReadonlyPaths (re-bound read-only;
// each must exist, reached without a symlink, unless it is one of
// spec.ReadonlyOptional), and the spec.Linux.MaskedPaths. It returns the root, ready for PivotRoot.
//
// Mount types: "bind" (options: rbind or bind, ro, nosuid, nodev, noexec), and any file
// system fsopen(2) knows ("tmpfs", "proc", "devpts", …; options: ro, nosuid, nodev,
// noexec, the rest passed to fsconfig(2) as key=value or flags). A read-only new file
// system is populated first and made read-only in PivotRoot.
// sourceFds, when not nil, holds one O_PATH descriptor per bind mount of spec.Mounts, in
// order, from OpenSourcePath in the launcher: each source is opened again here, without
// following symlinks, and must be the very file the launcher checked
// (OpenSourceChecked). With nil, bind sources are opened here by path only.
// Errors are *Error, naming the operation and paths.
func Setup(spec *config.Config, sourceFds []int, opts ...Option) (*Root, error) {
	return setup(spec, sourceFds, false, opts)
}

// Option changes how Setup and SetupTrees build the root.
type Option func(*setupOptions)

type setupOptions struct {
	procFS int // an fsopen(2) "proc" context for the procfs, or 0
}

// ProcFS has the procfs of the root (one "proc" mount of spec.Mounts) made from fsfd,
// an fsopen(2) "proc" descriptor, instead of a new fsopen: a procfs belongs to the pid
// namespace of the process that called fsopen, so a descriptor made in another pid
// namespace (nsinit's, for its commands) mounts that namespace's /proc, on any kernel
// with the new mount API (procfs's pidns option needs 6.15). fsfd is consumed; a second
// proc mount is an error.
func ProcFS(fsfd int) Option { return func(o *setupOptions) { o.procFS = fsfd } }

// SetupTrees is Setup with trees, one detached mount tree per bind mount of spec.Mounts,
// in order, cloned by the launcher (CloneSources) and possibly idmapped there: they are
// attached as they are, not opened again here. For a launcher that is root, whose init
// runs as an unprivileged host uid that may not reach a source (under /root, mode 0700).
// The trees are consumed.
func SetupTrees(spec *config.Config, trees []int, opts ...Option) (*Root, error) {
	return setup(spec, trees, true, opts)
}

// phaseHook, when not nil, is called at the end of each step of setup and PivotRoot
// with the step's name and its path, if any; the timing tests set it.
var phaseHook func(step, path string)

func mark(step, path string) {
	if phaseHook != nil {
		phaseHook(step, path)
	}
}

func setup(spec *config.Config, sourceFds []int, detached bool, opts []Option) (*Root, error) {
	var so setupOptions
	for _, o := range opts {
		o(&so)
	}
	procGiven := so.procFS > 0
	if procGiven {
		defer func() {
			if so.procFS > 0 {
				unix.Close(so.procFS)
			}
		}()
	}
	if err := MakePrivate(); err != nil {
		return nil, err
	}
	mark("make-private", "")
	type planned struct {
		m    specs.Mount
		src  *Source
		attr uint64
		ro   bool
		data map[string]string
	}
	plan := make([]planned, 0, len(spec.Mounts))
	closeAll := func() {
		for _, p := range plan {
			if p.src != nil {
				p.src.Close()
			}
		}
	}
	for _, m := range spec.Mounts {
		o, err := parseOptions(m)
		if err != nil {
			closeAll()
			return nil, err
		}
		p := planned{m: m, attr: o.attr, ro: o.ro, data: o.data}
		if m.Type == "bind" {
			if sourceFds == nil {
				p.src, err = OpenSource(m.Source, o.recursive)
			} else if len(sourceFds) == 0 {
				err = &Error{Op: "bind", Source: m.Source, Target: m.Destination, Err: errors.New("no descriptor for the source")}
			} else if detached {
				p.src, err = treeSource(sourceFds[0], m.Source)
				sourceFds = sourceFds[1:]
			} else {
				p.src, err = OpenSourceChecked(sourceFds[0], m.Source, o.recursive)
				sourceFds = sourceFds[1:]
			}
			if err != nil {
				closeAll()
				return nil, err
			}
		}
		plan = append(plan, p)
	}
	if len(sourceFds) > 0 {
		closeAll()
		return nil, &Error{Op: "bind", Err: fmt.Errorf("%d source descriptors left over", len(sourceFds))}
	}
	mark("sources", "")
	var null *Null
	if spec.Linux != nil && len(spec.Linux.MaskedPaths) > 0 {
		var err error
		if null, err = OpenNull("/dev/null"); err != nil {
			closeAll()
			return nil, err
		}
		defer null.Close()
		mark("open null", "")
	}
	staging := StagingDir()
	if staging == "" {
		closeAll()
		return nil, &Error{Op: "tmpfs", Target: "/", Err: errors.New("no directory to attach the new root to")}
	}
	r, err := New(staging)
	if err != nil {
		closeAll()
		return nil, err
	}
	mark("new root", "")
	for i, p := range plan {
		if p.src != nil {
			plan[i].src = nil
			if err = r.Bind(p.src, p.m.Destination, p.attr); err != nil {
				break
			}
			mark("bind", p.m.Destination)
			continue
		}
		if p.m.Type == "sysfs" {
			attr := p.attr
			if p.ro {
				attr |= unix.MOUNT_ATTR_RDONLY
			}
			if err = r.SysfsSubtree(p.m.Destination, attr); err != nil {
				break
			}
			mark("sysfs", p.m.Destination)
			continue
		}
		fsfd := -1
		if p.m.Type == "proc" && procGiven {
			if fsfd = so.procFS; fsfd <= 0 {
				err = &Error{Op: "mount", Source: "proc", Target: p.m.Destination, Err: errors.New("a second procfs: one proc context was given")}
				break
			}
			so.procFS = 0
		}
		if err = r.fs(fsfd, p.m.Type, p.m.Destination, p.data, p.attr, p.ro); err != nil {
			break // a masked /proc's EPERM is explained by nsinit.Hint
		}
		mark(p.m.Type, p.m.Destination)
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	for _, l := range spec.Symlinks {
		if err := r.Symlink(l.Target, l.Path); err != nil {
			return nil, err
		}
		mark("symlink", l.Path)
	}
	for _, f := range spec.Files {
		if err := r.WriteFile(f.Path, []byte(f.Content), f.Mode); err != nil {
			return nil, err
		}
		mark("file", f.Path)
	}
	if spec.Linux != nil {
		for _, p := range spec.Linux.ReadonlyPaths {
			if err := r.ReadOnly(p, slices.Contains(spec.ReadonlyOptional, p)); err != nil {
				return nil, err
			}
			mark("readonly", p)
		}
		for _, p := range spec.Linux.MaskedPaths {
			if err := r.Mask(p, null); err != nil {
				return nil, err
			}
			mark("mask", p)
		}
	}
	return r, nil
}

type options struct {
	attr      uint64
	recursive bool
	ro        bool
	data      map[string]string
}

// parseOptions reads runtime-spec mount options into MOUNT_ATTR_* bits, the recursive
// flag of binds and the fsconfig(2) data of new file systems (nil when there is none).
func parseOptions(m specs.Mount) (options, error) { return parseOptionsData(m, true) }

// parseOptionsData is parseOptions, with the fsconfig(2) data left out unless data is
// set: a check of the options alone makes no map.
func parseOptionsData(m specs.Mount, data bool) (options, error) {
	var o options
	for _, opt := range m.Options {
		switch opt {
		case "ro":
			o.ro = true
		case "rw":
		case "nosuid":
			o.attr |= unix.MOUNT_ATTR_NOSUID
		case "nodev":
			o.attr |= unix.MOUNT_ATTR_NODEV
		case "noexec":
			o.attr |= unix.MOUNT_ATTR_NOEXEC
		case "rbind":
			o.recursive = true
		case "bind", "private", "rprivate":
		case "idmap":
			// gosbx: the launcher idmaps this bind for a root caller (nsinit); nothing here
		default:
			if m.Type == "bind" {
				return o, &Error{Op: "bind", Source: m.Source, Target: m.Destination, Err: fmt.Errorf("unknown option %q", opt)}
			}
			if !data {
				continue
			}
			k, v, _ := strings.Cut(opt, "=")
			if o.data == nil {
				o.data = map[string]string{}
			}
			o.data[k] = v
		}
	}
	if o.ro && m.Type == "bind" {
		o.attr |= unix.MOUNT_ATTR_RDONLY
	}
	return o, nil
}

// BindSources returns the host paths of the bind mounts of spec, in order: the paths
// whose descriptors Setup expects in sourceFds.
func BindSources(spec *config.Config) []string {
	var out []string
	for _, m := range spec.Mounts {
		if m.Type == "bind" {
			out = append(out, m.Source)
		}
	}
	return out
}

// CloneSources clones the source of every bind mount of spec, in the order of
// BindSources, in the calling process's mount namespace (OpenSource: open_tree(2)
// OPEN_TREE_CLONE of the canonical path, recursive for rbind). Needs CAP_SYS_ADMIN over
// that namespace. Read-only does not travel with the clone: SetupTrees sets it. Errors
// are *Error; on error no tree is left open.
func CloneSources(spec *config.Config) ([]*Source, error) {
	var out []*Source
	for _, m := range spec.Mounts {
		if m.Type != "bind" {
			continue
		}
		o, err := parseOptions(m)
		if err == nil {
			var src *Source
			if src, err = OpenSource(m.Source, o.recursive); err == nil {
				out = append(out, src)
				continue
			}
		}
		for _, s := range out {
			s.Close()
		}
		return nil, err
	}
	return out, nil
}

// Writable reports whether the bind mount m is read-write (no "ro" option).
func Writable(m specs.Mount) bool {
	for _, o := range m.Options {
		if o == "ro" {
			return false
		}
	}
	return true
}
