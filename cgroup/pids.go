package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// A sandbox's init is a Go process: its runtime may make a thread at any time, and
// when a fork or a thread is refused at the pids limit it aborts ("failed to create
// new OS thread"), which ends the sandbox (a session, with every command of it). So
// the process limit asked for is not the init's: on v1 the sandbox's pids group G
// gets pids.max = the limit + InitPidsHeadroom, and a child group G/cmd
// (CommandsDir) gets exactly the limit. The init and the commands' pid 1 (the
// holder) stay in G; each command moves itself into G/cmd in its process stage,
// before execve(2), by writing "0" to G/cmd's cgroup.procs through a descriptor
// the launcher opened (CommandsProcs): v1 checks the opener's credentials
// (of->file->f_cred, kernel/cgroup/cgroup-v1.c __cgroup1_procs_write), so the
// init, an unprivileged host id, can use it without ever being able to open it. A
// command and all it forks count in G/cmd against the limit; the init's threads
// only in G. docs/decisions.md, "The init outside its commands' pids limit".
//
// On cgroup v2 the group is not split (yet): the no-internal-processes rule would put
// the init in G/init and the commands in G/cmd; the commands and the init share the
// limit there as before.

// InitPidsHeadroom is how many pids a v1 sandbox group allows beyond the process
// limit its commands get: the init's threads (GOMAXPROCS=2 for the init, the set-ID
// handler, the runtime's sysmon and GC workers, a few blocked in system calls) and
// the commands' pid 1. Measured: 8-11 threads for a session's init under load.
const InitPidsHeadroom = 32

// commandsName is the commands' group inside a sandbox's pids group.
const commandsName = "cmd"

// makeCommandsGroup makes G/cmd in the pids hierarchy with pids.max = the limit of r,
// when r asks for one (pids.max was written to G with the headroom).
func (g *v1Group) makeCommandsGroup(r *specs.LinuxResources) error {
	if r == nil || r.Pids == nil || r.Pids.Limit == nil || *r.Pids.Limit <= 0 {
		return nil
	}
	parent := g.dir("pids")
	if parent == "" {
		return errors.New("no pids hierarchy for the commands' group")
	}
	dir := filepath.Join(parent, commandsName)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("make the commands' pids group: %w", err)
	}
	g.cmd = dir
	return writeFile(dir, "pids.max", strconv.FormatInt(*r.Pids.Limit, 10))
}

// CommandsDir is the commands' pids group on the host (G/cmd), "" when the group has
// none (no process limit, or cgroup v2).
func (g *v1Group) CommandsDir() string { return g.cmd }

// CommandsFiles opens, close-on-exec, the commands' group's cgroup.procs for writing
// (a process that writes "0" to it joins the group, cgroup-v1.rst "Attaching
// processes"; the kernel checks the credentials of this open, not the writer's), then
// its pids.current and pids.max for reading: a migration is not refused at pids.max
// (pids.rst), so whoever moves a process in checks the count first. nil and no error
// when the group has no commands' group; on error none is left open.
func (g *v1Group) CommandsFiles() ([]int, error) {
	if g.cmd == "" {
		return nil, nil
	}
	var fds []int
	for _, f := range [...]struct {
		name string
		mode int
	}{{"cgroup.procs", unix.O_WRONLY}, {"pids.current", unix.O_RDONLY}, {"pids.max", unix.O_RDONLY}} {
		p := filepath.Join(g.cmd, f.name)
		fd, err := unix.Open(p, f.mode|unix.O_CLOEXEC, 0)
		if err != nil {
			for _, o := range fds {
				unix.Close(o)
			}
			return nil, fmt.Errorf("open %s: %w", p, err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}
