package mounts

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/rawplan"
	"github.com/gosbx/gosbx/nsinit/config"
)

// The root compiled into a raw plan (internal/rawplan) for the raw init (issue 20): the
// calls Setup and PivotRoot make, in their order and with their resolution rules, as
// ops a CLONE_VM child of the launcher runs. Departures, all without effect on what the
// sandbox can reach: no directory cache (each mount point is walked from the root, one
// component at a time: mkdirat(2) with EEXIST tolerated, then openat2(2)
// RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH), and every mask is a new read-only tmpfs or a
// new clone of null instead of a clone of the first mask.

// RawRoot is a root compiled by PlanSetup, for PlanPivotRoot and the working directory.
type RawRoot struct {
	Root    rawplan.Reg // the root tmpfs's mount descriptor
	roLater []rawSealed
	procSys rawplan.Reg // the procfs's sys directory (ProcSys), when hasProc
	hasProc bool
	p       *rawplan.Plan
	how     *openHows
}

// ProcSys returns the register of the O_PATH descriptor of the root procfs's sys
// directory, as Root.ProcSys, and whether spec mounts a procfs; valid until
// PlanPivotRoot closes it.
func (rr *RawRoot) ProcSys() (rawplan.Reg, bool) { return rr.procSys, rr.hasProc }

type rawSealed struct {
	reg  rawplan.Reg
	dest string
}

// openHows are the struct open_how and struct mount_attr values the ops point to, in
// the plan's arena.
type openHows struct {
	source, dir, file, inRoot, null unix.OpenHow
	attrs                           [64]unix.MountAttr
	nattr                           int
}

// attr returns the address of a struct mount_attr with set and propagation, shared by
// every op that sets the same.
func (h *openHows) attr(set uint64, prop uint64) (uintptr, error) {
	for i := 0; i < h.nattr; i++ {
		if h.attrs[i].Attr_set == set && h.attrs[i].Propagation == prop {
			return rawplan.Ptr(&h.attrs[i]), nil
		}
	}
	if h.nattr == len(h.attrs) {
		return 0, errors.New("more than 64 distinct mount attributes")
	}
	h.attrs[h.nattr] = unix.MountAttr{Attr_set: set, Propagation: prop}
	h.nattr++
	return rawplan.Ptr(&h.attrs[h.nattr-1]), nil
}

// RawSupported reports why spec's root cannot be compiled into a raw plan, or nil: the
// mount kinds PlanSetup and PlanSetupTrees do not implement.
func RawSupported(spec *config.Config) error {
	for _, m := range spec.Mounts {
		switch m.Type {
		case "bind", "tmpfs", "proc", "devpts", "mqueue":
		default:
			return fmt.Errorf("mount type %q", m.Type)
		}
		if _, err := parseOptionsData(m, false); err != nil {
			return err
		}
	}
	return nil
}

// PlanSetup compiles Setup(spec, sourceFds, ProcFS(procFS)) into step s of p: every
// mount of spec.Mounts, then the symlinks, the files, the read-only paths and the
// masks. sourceFds are the launcher's O_PATH descriptors of the bind sources
// (OpenSourcePath), the same numbers in the child's descriptor table; each source is
// opened again in the child by its path, without a symlink, and must be the same file
// (ESTALE otherwise), as OpenSourceChecked. null is the launcher's verified /dev/null
// (OpenNull's descriptor) when spec masks paths, else -1; the child's own open of
// /dev/null must be that file. procFS holds the procfs context (the holder's) for the
// one proc mount. Errors: a mount kind not implemented (RawSupported), a wrong number of
// sources, a plan that outgrows its arena.
func PlanSetup(p *rawplan.Plan, s uint16, spec *config.Config, sourceFds []int, null *Null, procFS rawplan.Reg) (*RawRoot, error) {
	return planSetup(p, s, spec, sourceFds, false, null, procFS)
}

// PlanSetupTrees is PlanSetup with trees, as SetupTrees is Setup's: one detached mount
// tree per bind mount of spec.Mounts, in order, cloned by the launcher (CloneSources)
// and possibly idmapped there after the clone of the raw child (the child holds the
// same open mount at the same number): each is attached as it is, not opened again,
// and closed once attached. For a launcher that is root, whose raw init runs as an
// unprivileged host uid that may not reach a source.
func PlanSetupTrees(p *rawplan.Plan, s uint16, spec *config.Config, trees []int, null *Null, procFS rawplan.Reg) (*RawRoot, error) {
	return planSetup(p, s, spec, trees, true, null, procFS)
}

func planSetup(p *rawplan.Plan, s uint16, spec *config.Config, sourceFds []int, detached bool, null *Null, procFS rawplan.Reg) (*RawRoot, error) {
	if err := RawSupported(spec); err != nil {
		return nil, err
	}
	rr := &RawRoot{p: p, how: rawplan.Alloc[openHows](p)}
	h := rr.how
	h.source = unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	h.dir = unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: strictResolve}
	h.file = unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: strictResolve}
	h.inRoot = unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: inRootResolve}
	h.null = unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}

	p.Call(s, func(e unix.Errno) error { return &Error{Op: "make-rprivate", Target: "/", Err: e} },
		unix.SYS_MOUNT, rawplan.Lit(p.Str("")), rawplan.Lit(p.Str("/")), rawplan.Lit(p.Str("")), rawplan.Lit(unix.MS_REC|unix.MS_PRIVATE), rawplan.Lit(0))

	// the sources, all before the root is attached (a tmpfs on /tmp hides those below it)
	type planned struct {
		o    options
		tree rawplan.Arg // a register (opened here), or the launcher's tree (detached)
		reg  rawplan.Reg
		dir  bool
	}
	plan := make([]planned, len(spec.Mounts))
	for i, m := range spec.Mounts {
		o, _ := parseOptions(m)
		plan[i].o = o
		if m.Type != "bind" {
			continue
		}
		if len(sourceFds) == 0 {
			return nil, &Error{Op: "bind", Source: m.Source, Target: m.Destination, Err: errors.New("no descriptor for the source")}
		}
		var st unix.Stat_t
		if err := unix.Fstat(sourceFds[0], &st); err != nil {
			return nil, &Error{Op: "stat", Source: m.Source, Err: err}
		}
		plan[i].dir = st.Mode&unix.S_IFMT == unix.S_IFDIR
		if detached {
			plan[i].tree = rawplan.Lit(uintptr(sourceFds[0]))
		} else {
			plan[i].reg = rr.planSource(s, sourceFds[0], m.Source, o.recursive)
			plan[i].tree = plan[i].reg.Arg()
		}
		sourceFds = sourceFds[1:]
	}
	if len(sourceFds) > 0 {
		return nil, &Error{Op: "bind", Err: fmt.Errorf("%d source descriptors left over", len(sourceFds))}
	}
	nullReg := rawplan.Reg(0)
	if spec.Linux != nil && len(spec.Linux.MaskedPaths) > 0 {
		if null == nil {
			return nil, &Error{Op: "open", Source: "/dev/null", Err: errors.New("no null device given")}
		}
		nullReg = p.Reg()
		p.Call(s, func(e unix.Errno) error { return &Error{Op: "open", Source: "/dev/null", Err: e} },
			unix.SYS_OPENAT2, rawplan.Lit(rawplan.AtFdcwd), rawplan.Lit(p.Str("/dev/null")), rawplan.Lit(rawplan.Ptr(&h.null)), rawplan.Lit(unix.SizeofOpenHow)).Into(nullReg)
		p.Op(s, func(e unix.Errno) error {
			return &Error{Op: "open", Source: "/dev/null", Err: errors.New("not the null device 1:3")}
		}, rawplan.SameFile, 0, nullReg.Arg(), rawplan.Lit(uintptr(null.fd)))
	}
	staging := StagingDir()
	if staging == "" {
		return nil, &Error{Op: "tmpfs", Target: "/", Err: errors.New("no directory to attach the new root to")}
	}
	// New: the root tmpfs at the staging directory
	const rootAttr = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	rr.Root = p.Reg()
	rr.newFS(s, rr.Root, rawplan.Reg(0), false, "tmpfs", map[string]string{"mode": "0755"}, rootAttr,
		func(err error) error { return errorf("mount", "tmpfs", "/", rootAttr, err) })
	p.Call(s, func(e unix.Errno) error { return &Error{Op: "move_mount", Source: "tmpfs", Target: staging, Err: e} },
		unix.SYS_MOVE_MOUNT, rr.Root.Arg(), rawplan.Lit(p.Str("")), rawplan.Lit(rawplan.AtFdcwd), rawplan.Lit(p.Str(staging)), rawplan.Lit(unix.MOVE_MOUNT_F_EMPTY_PATH))

	procUsed := false
	for i, m := range spec.Mounts {
		pl := plan[i]
		dest, attr := m.Destination, pl.o.attr
		if m.Type == "bind" {
			src := m.Source
			ea, err := h.attr(attr, unix.MS_PRIVATE)
			if err != nil {
				return nil, err
			}
			p.Call(s, func(e unix.Errno) error { return errorf("bind", src, dest, attr, fmt.Errorf("mount_setattr: %w", e)) },
				unix.SYS_MOUNT_SETATTR, pl.tree, rawplan.Lit(p.Str("")), rawplan.Lit(unix.AT_EMPTY_PATH|unix.AT_RECURSIVE), rawplan.Lit(ea), rawplan.Lit(unix.MOUNT_ATTR_SIZE_VER0))
			rr.attach(s, pl.tree, dest, pl.dir, func(err error) error { return errorf("bind", src, dest, attr, err) })
			if detached {
				p.Call(s, nil, unix.SYS_CLOSE, pl.tree) // consumed, as Bind's src
			} else {
				p.CloseReg(s, pl.reg)
			}
			continue
		}
		fsType := m.Type
		wrap := func(err error) error { return errorf("mount", fsType, dest, attr, err) }
		mnt := p.Reg()
		given := m.Type == "proc"
		if given {
			if procUsed {
				return nil, &Error{Op: "mount", Source: "proc", Target: dest, Err: errors.New("a second procfs: one proc context was given")}
			}
			procUsed = true
		}
		rr.newFS(s, mnt, procFS, given, m.Type, pl.o.data, attr, wrap)
		rr.attach(s, mnt.Arg(), dest, true, wrap)
		if given {
			rr.procSys, rr.hasProc = p.Reg(), true
			p.Call(s, func(e unix.Errno) error { return wrap(fmt.Errorf("open sys: %w", e)) }, unix.SYS_OPENAT, mnt.Arg(), rawplan.Lit(p.Str("sys")),
				rawplan.Lit(unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)).Into(rr.procSys)
		}
		if pl.o.ro {
			rr.roLater = append(rr.roLater, rawSealed{mnt, dest})
		} else {
			p.CloseReg(s, mnt)
		}
	}
	for _, l := range spec.Symlinks {
		rr.symlink(s, l.Target, l.Path)
	}
	for _, f := range spec.Files {
		rr.writeFile(s, f.Path, []byte(f.Content), f.Mode)
	}
	if spec.Linux != nil {
		for _, path := range spec.Linux.ReadonlyPaths {
			rr.readOnly(s, path, slices.Contains(spec.ReadonlyOptional, path))
		}
		for _, path := range spec.Linux.MaskedPaths {
			rr.mask(s, path, nullReg)
		}
		if len(spec.Linux.MaskedPaths) > 0 {
			p.CloseReg(s, nullReg)
		}
	}
	if err := p.Finish(); err != nil {
		return nil, err
	}
	return rr, nil
}

// planSource adds OpenSourceChecked's calls for the host path path, checked by the
// launcher as its descriptor checked, and returns the register of the cloned tree.
func (rr *RawRoot) planSource(s uint16, checked int, path string, recursive bool) rawplan.Reg {
	p := rr.p
	fd, tree := p.Reg(), p.Reg()
	p.Call(s, func(e unix.Errno) error {
		var err error = e
		if e == unix.ELOOP {
			err = fmt.Errorf("%w (a component of the path is now a symlink; it was resolved and checked without one)", e)
		}
		return &Error{Op: "open", Source: path, Err: err}
	}, unix.SYS_OPENAT2, rawplan.Lit(rawplan.AtFdcwd), rawplan.Lit(p.Str(path)), rawplan.Lit(rawplan.Ptr(&rr.how.source)), rawplan.Lit(unix.SizeofOpenHow)).Into(fd)
	p.Op(s, func(e unix.Errno) error {
		if e == unix.ESTALE {
			return &Error{Op: "open", Source: path, Err: fmt.Errorf("%w (the path leads to another file than the one checked at launch)", e)}
		}
		return &Error{Op: "stat", Source: path, Err: e}
	}, rawplan.SameFile, 0, rawplan.Lit(uintptr(checked)), fd.Arg())
	flags := uintptr(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	p.Call(s, func(e unix.Errno) error { return &Error{Op: "open_tree", Source: path, Err: e} },
		unix.SYS_OPEN_TREE, fd.Arg(), rawplan.Lit(p.Str("")), rawplan.Lit(flags)).Into(tree)
	p.CloseReg(s, fd)
	return tree
}

// newFS adds newFS's calls into the register mnt: fsopen(2) of fstype (or the context
// in the register given, when useGiven), fsconfig(2) of opts (sorted by key), create,
// fsmount(2) with attr; wrap renders a failure.
func (rr *RawRoot) newFS(s uint16, mnt, given rawplan.Reg, useGiven bool, fstype string, opts map[string]string, attr uint64, wrap func(error) error) {
	p := rr.p
	fs := given
	if !useGiven {
		fs = p.Reg()
		p.Call(s, func(e unix.Errno) error { return wrap(fmt.Errorf("fsopen: %w", e)) },
			unix.SYS_FSOPEN, rawplan.Lit(p.Str(fstype)), rawplan.Lit(unix.FSOPEN_CLOEXEC)).Into(fs)
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := opts[k]
		cmd, val := uintptr(unix.FSCONFIG_SET_STRING), p.Str(v)
		if v == "" {
			cmd, val = unix.FSCONFIG_SET_FLAG, 0
		}
		p.Call(s, func(e unix.Errno) error { return wrap(fmt.Errorf("fsconfig %s=%s: %w", k, v, e)) },
			unix.SYS_FSCONFIG, fs.Arg(), rawplan.Lit(cmd), rawplan.Lit(p.Str(k)), rawplan.Lit(val), rawplan.Lit(0))
	}
	p.Call(s, func(e unix.Errno) error { return wrap(fmt.Errorf("fsconfig create: %w", e)) },
		unix.SYS_FSCONFIG, fs.Arg(), rawplan.Lit(unix.FSCONFIG_CMD_CREATE), rawplan.Lit(0), rawplan.Lit(0), rawplan.Lit(0))
	p.Call(s, func(e unix.Errno) error { return wrap(fmt.Errorf("fsmount: %w", e)) },
		unix.SYS_FSMOUNT, fs.Arg(), rawplan.Lit(unix.FSMOUNT_CLOEXEC), rawplan.Lit(uintptr(attr))).Into(mnt)
	p.CloseReg(s, fs)
}

// mkdirAll adds the walk to the directory dest inside the root, each missing component
// made with mode dirMode (mkdirat(2), EEXIST tolerated; 0555 for a mount point's, 0755
// for a config file's as Root.fileParents) and opened without following a
// symlink, and returns the register of its O_PATH descriptor (the caller closes it).
// wrap renders a failure of the walk.
func (rr *RawRoot) mkdirAll(s uint16, dest string, dirMode uint32, wrap func(error) error) rawplan.Reg {
	p := rr.p
	r := rel(dest)
	if r == "." {
		cur := p.Reg()
		p.Call(s, func(e unix.Errno) error { return wrap(e) }, unix.SYS_DUP, rr.Root.Arg()).Into(cur)
		return cur
	}
	cur, owned := rr.Root, false
	for _, c := range strings.Split(r, "/") {
		p.Call(s, func(e unix.Errno) error { return wrap(e) },
			unix.SYS_MKDIRAT, cur.Arg(), rawplan.Lit(p.Str(c)), rawplan.Lit(uintptr(dirMode))).Tolerate(unix.EEXIST)
		next := p.Reg()
		p.Call(s, func(e unix.Errno) error { return wrap(e) },
			unix.SYS_OPENAT2, cur.Arg(), rawplan.Lit(p.Str(c)), rawplan.Lit(rawplan.Ptr(&rr.how.dir)), rawplan.Lit(unix.SizeofOpenHow)).Into(next)
		if owned {
			p.CloseReg(s, cur)
		}
		cur, owned = next, true
	}
	return cur
}

// attach adds attach's calls: the mount mnt (a register, or a descriptor number) moved
// onto dest, a directory (made if missing) or a file (created empty, 0444, if missing).
func (rr *RawRoot) attach(s uint16, mnt rawplan.Arg, dest string, dir bool, wrap func(error) error) {
	p := rr.p
	point := func(err error) error { return wrap(fmt.Errorf("mount point: %w", err)) }
	var t rawplan.Reg
	if dir {
		t = rr.mkdirAll(s, dest, 0o555, point)
	} else {
		parent := rr.mkdirAll(s, "/"+parentRel(rel(dest)), 0o555, point)
		base := baseOf(rel(dest))
		t = p.Reg()
		p.Call(s, func(e unix.Errno) error { return point(e) },
			unix.SYS_OPENAT, parent.Arg(), rawplan.Lit(p.Str(base)), rawplan.Lit(unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW), rawplan.Lit(0o444)).Tolerate(unix.EEXIST).Into(t)
		m := p.Mark()
		p.Op(s, nil, rawplan.SkipIfSet, 0, t.Arg())
		p.Call(s, func(e unix.Errno) error { return point(e) },
			unix.SYS_OPENAT2, parent.Arg(), rawplan.Lit(p.Str(base)), rawplan.Lit(rawplan.Ptr(&rr.how.file)), rawplan.Lit(unix.SizeofOpenHow)).Into(t)
		p.Guard(m)
		p.CloseReg(s, parent)
	}
	p.Call(s, func(e unix.Errno) error { return wrap(e) },
		unix.SYS_MOVE_MOUNT, mnt, rawplan.Lit(p.Str("")), t.Arg(), rawplan.Lit(p.Str("")), rawplan.Lit(unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH))
	p.CloseReg(s, t)
}

// symlink adds Symlink's calls: dest -> target, an existing link to the same target
// accepted.
func (rr *RawRoot) symlink(s uint16, target, dest string) {
	p := rr.p
	wrap := func(err error) error { return &Error{Op: "symlink", Source: target, Target: dest, Err: err} }
	parent := rr.mkdirAll(s, dirOf(dest), 0o555, wrap)
	base := baseOf(dest)
	made := p.Reg()
	p.Call(s, func(e unix.Errno) error { return wrap(e) },
		unix.SYS_SYMLINKAT, rawplan.Lit(p.Str(target)), parent.Arg(), rawplan.Lit(p.Str(base))).Tolerate(unix.EEXIST).Into(made)
	m := p.Mark()
	p.Op(s, nil, rawplan.SkipIfSet, 0, made.Arg())
	p.ReadlinkIs(s, func(e unix.Errno) error { return wrap(e) }, parent.Arg(), base, target)
	p.Guard(m)
	p.Release(made)
	p.CloseReg(s, parent)
}

// writeFile adds WriteFile's calls.
func (rr *RawRoot) writeFile(s uint16, dest string, content []byte, mode uint32) {
	p := rr.p
	wrap := func(err error) error { return &Error{Op: "write", Target: dest, Err: err} }
	parent := rr.mkdirAll(s, dirOf(dest), 0o755, wrap)
	f := p.Reg()
	p.Call(s, func(e unix.Errno) error { return wrap(fmt.Errorf("create the file: %w", e)) },
		unix.SYS_OPENAT, parent.Arg(), rawplan.Lit(p.Str(baseOf(dest))), rawplan.Lit(unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW), rawplan.Lit(uintptr(mode))).Into(f)
	p.CloseReg(s, parent)
	if len(content) > 0 {
		p.Op(s, func(e unix.Errno) error { return wrap(fmt.Errorf("write the file: %w", e)) },
			rawplan.WriteAll, unix.SYS_WRITE, f.Arg(), rawplan.Lit(p.Bytes(content)), rawplan.Lit(uintptr(len(content))))
	}
	p.Call(s, func(e unix.Errno) error { return wrap(fmt.Errorf("fchmod: %w", e)) }, unix.SYS_FCHMOD, f.Arg(), rawplan.Lit(uintptr(mode)))
	p.CloseReg(s, f)
}

// readOnly adds ReadOnly's calls for the path path (optional: absent is no error).
func (rr *RawRoot) readOnly(s uint16, path string, optional bool) {
	p := rr.p
	const attr = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	wrap := func(err error) error { return errorf("bind", path, path, attr, err) }
	fd, tree := p.Reg(), p.Reg()
	first := p.Mark()
	op := p.Call(s, func(e unix.Errno) error {
		return wrap(fmt.Errorf("%w (a protected path must exist as planned, without a symlink on the way)", e))
	}, unix.SYS_OPENAT2, rr.Root.Arg(), rawplan.Lit(p.Str(rel(path))), rawplan.Lit(rawplan.Ptr(&rr.how.file)), rawplan.Lit(unix.SizeofOpenHow)).Into(fd)
	if optional {
		op.Tolerate(unix.ENOENT)
	}
	p.Call(s, func(e unix.Errno) error { return wrap(fmt.Errorf("open_tree: %w", e)) },
		unix.SYS_OPEN_TREE, fd.Arg(), rawplan.Lit(p.Str("")), rawplan.Lit(unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)).Into(tree)
	ea, err := rr.how.attr(attr, unix.MS_PRIVATE)
	if err != nil {
		p.Refuse(err)
	}
	p.Call(s, func(e unix.Errno) error { return wrap(fmt.Errorf("mount_setattr: %w", e)) },
		unix.SYS_MOUNT_SETATTR, tree.Arg(), rawplan.Lit(p.Str("")), rawplan.Lit(unix.AT_EMPTY_PATH|unix.AT_RECURSIVE), rawplan.Lit(ea), rawplan.Lit(unix.MOUNT_ATTR_SIZE_VER0))
	p.Call(s, func(e unix.Errno) error { return wrap(fmt.Errorf("move_mount: %w", e)) },
		unix.SYS_MOVE_MOUNT, tree.Arg(), rawplan.Lit(p.Str("")), fd.Arg(), rawplan.Lit(p.Str("")), rawplan.Lit(unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH))
	p.CloseReg(s, tree)
	p.CloseReg(s, fd)
	p.SkipTo(first)
}

// mask adds Mask's calls for the path path: absent is no error; a directory is covered
// by a new empty read-only tmpfs (mode 0000), anything else by a read-only clone of
// null (the register holding the child's verified /dev/null).
func (rr *RawRoot) mask(s uint16, path string, null rawplan.Reg) {
	p := rr.p
	wrap := func(err error) error { return &Error{Op: "mask", Target: path, Err: err} }
	fd, mnt := p.Reg(), p.Reg()
	first := p.Mark()
	p.Call(s, func(e unix.Errno) error { return wrap(e) },
		unix.SYS_OPENAT2, rr.Root.Arg(), rawplan.Lit(p.Str(rel(path))), rawplan.Lit(rawplan.Ptr(&rr.how.inRoot)), rawplan.Lit(unix.SizeofOpenHow)).Tolerate(unix.ENOENT).Into(fd)
	dirBranch := p.Mark()
	p.Op(s, func(e unix.Errno) error { return wrap(e) }, rawplan.SkipUnlessDir, 0, fd.Arg())
	const dirAttr = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC
	rr.newFS(s, mnt, 0, false, "tmpfs", map[string]string{"mode": "0000"}, dirAttr, wrap)
	fileBranch := p.Mark()
	p.Op(s, nil, rawplan.Skip, 0)
	p.Guard(dirBranch)
	p.Call(s, func(e unix.Errno) error { return wrap(e) },
		unix.SYS_OPEN_TREE, null.Arg(), rawplan.Lit(p.Str("")), rawplan.Lit(unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)).Into(mnt)
	ea, err := rr.how.attr(unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, unix.MS_PRIVATE)
	if err != nil {
		p.Refuse(err)
	}
	p.Call(s, func(e unix.Errno) error { return wrap(e) },
		unix.SYS_MOUNT_SETATTR, mnt.Arg(), rawplan.Lit(p.Str("")), rawplan.Lit(unix.AT_EMPTY_PATH), rawplan.Lit(ea), rawplan.Lit(unix.MOUNT_ATTR_SIZE_VER0))
	p.Guard(fileBranch)
	p.Call(s, func(e unix.Errno) error { return wrap(fmt.Errorf("move_mount: %w", e)) },
		unix.SYS_MOVE_MOUNT, mnt.Arg(), rawplan.Lit(p.Str("")), fd.Arg(), rawplan.Lit(p.Str("")), rawplan.Lit(unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH))
	p.CloseReg(s, mnt)
	p.CloseReg(s, fd)
	p.SkipTo(first)
}

// PlanPivotRoot compiles PivotRoot into step s: pivot_root(2) into the root, the old
// root detached, the mounts sealed later and then the root tmpfs made read-only.
func (rr *RawRoot) PlanPivotRoot(s uint16) error {
	p := rr.p
	p.Call(s, func(e unix.Errno) error { return &Error{Op: "chdir", Target: "/", Err: e} }, unix.SYS_FCHDIR, rr.Root.Arg())
	p.Call(s, func(e unix.Errno) error { return &Error{Op: "pivot_root", Target: "/", Err: e} },
		unix.SYS_PIVOT_ROOT, rawplan.Lit(p.Str(".")), rawplan.Lit(p.Str(".")))
	p.Call(s, func(e unix.Errno) error { return &Error{Op: "umount", Source: "old root", Err: e} },
		unix.SYS_UMOUNT2, rawplan.Lit(p.Str(".")), rawplan.Lit(unix.MNT_DETACH))
	p.Call(s, func(e unix.Errno) error { return &Error{Op: "chdir", Target: "/", Err: e} }, unix.SYS_CHDIR, rawplan.Lit(p.Str("/")))
	ro, err := rr.how.attr(unix.MOUNT_ATTR_RDONLY, 0)
	if err != nil {
		return err
	}
	for _, m := range rr.roLater {
		dest := m.dest
		p.Call(s, func(e unix.Errno) error { return &Error{Op: "remount-ro", Target: dest, Err: e} },
			unix.SYS_MOUNT_SETATTR, m.reg.Arg(), rawplan.Lit(p.Str("")), rawplan.Lit(unix.AT_EMPTY_PATH), rawplan.Lit(ro), rawplan.Lit(unix.MOUNT_ATTR_SIZE_VER0))
		p.CloseReg(s, m.reg)
	}
	rr.roLater = nil
	if rr.hasProc {
		p.CloseReg(s, rr.procSys)
		rr.hasProc = false
	}
	p.Call(s, func(e unix.Errno) error { return &Error{Op: "remount-ro", Target: "/", Err: e} },
		unix.SYS_MOUNT_SETATTR, rr.Root.Arg(), rawplan.Lit(p.Str("")), rawplan.Lit(unix.AT_EMPTY_PATH), rawplan.Lit(ro), rawplan.Lit(unix.MOUNT_ATTR_SIZE_VER0))
	return p.Finish()
}
