package nsinit

import (
	"fmt"
	"os"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/netns"
	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/config"
)

// initSys is the sandbox init's system-call seam: each call of the init's steps that
// acts on the kernel or on the launcher, at the grain the steps make it. kernelInit is
// the real one; the unit tests put a recording double in its place and assert the
// exact order of the calls, without privileges (youki's Syscall trait).
type initSys interface {
	readConfig(pooled bool) (*config.Config, []int, error)
	sethostname(name string) error
	// setUserCounts sets the limits of the init's user namespace through root's
	// procfs (setUserCounts in userlimits.go).
	setUserCounts(root *mounts.Root, counts []config.UserCount) error
	loopbackUp() error
	// listenEgress makes the egress's listening sockets (and capture ones on the
	// ports capture) and sends them to the owner (egress.go); resolvConf covers the
	// root's /etc/resolv.conf with the DNS stub's.
	listenEgress(capture []uint16, keep bool) error
	resolvConf(root *mounts.Root) error
	// serveDials connects, for the owner's port forwards, to the sandbox's loopback
	// ports (publish.go), from a goroutine of its own, for the sandbox's life.
	serveDials(ports []uint16)
	// listenHostPorts makes listening sockets for the host ports the sandbox may
	// reach and sends them to the owner (egress.go).
	listenHostPorts(ports []uint16, keep bool) error
	// unsharePID makes the calling thread's next child the first process (pid 1) of
	// a new pid namespace: the holder, started by startHolder, which sends a procfs
	// context of it on a socket of holderFiles and executes the holder program from
	// its memfd exe. awaitHolder waits for its report and receives the context (and
	// closes the three).
	unsharePID() error
	// setIDProc makes the set-ID handler's procfs (openSetIDProc).
	setIDProc() error
	// startSetID starts the set-ID handler's threads (startSetIDHandler).
	startSetID(threads int) error
	holderFiles() (send, recv, exe int, err error)
	startHolder(p *procPlan) (int, error)
	awaitHolder(p *procPlan, pid, send, recv, exe int) (int, error)
	buildRoot(spec *config.Config, sources []int, trees bool, procFS int) (*mounts.Root, error)
	closeFds(fds []int)
	pivotRoot(root *mounts.Root) error
	setNotDumpable() error
	joinSessionKeyring() error
	// unshareCgroup gives the calling thread, and so the commands it forks, a new
	// cgroup namespace rooted at its cgroups (sysfs.go).
	unshareCgroup() error
	limitCaps() error
	send(m message)
	readProcess() (*specs.Process, error)
	openDir(root *mounts.Root, dir string) (*os.File, error)
	lookPath(dir *os.File, name string, env []string) (string, error)
	awaitGoAhead()
	defaultSignals() error
	restoreStderr()
	claimTerminal()
	fork(p *procPlan) (int, error)
	// startCommand clones a session's command's child (forkAsync) and returns its pid
	// and its report pipe, at once; awaitCommand then waits for its execve or failure
	// (awaitCommand in commandstart.go; kill is called, and the error is errNoExec's,
	// when it does not come within execDeadline) and serves its set-ID listener.
	startCommand(p *procPlan) (pid, report int, err error)
	awaitCommand(p *procPlan, report int, kill func()) error
	dropAllCaps()
}

// kernelInit is initSys on the kernel, for the init process.
type kernelInit struct {
	w            syncWriter
	holderReport int
	stderrMoved  bool // restoreStderr ran: stderrFd's number may be another file's now
	goAhead      bool // awaitGoAhead read the go-ahead
	lifeSync     bool // not a session's init: the reaper reads the life pipe itself
	noAck        bool // the go-ahead said no acknowledgement of the exec report comes
	oom          oomScore
	// oomShared counts the commands' children sharing pid 1's memory (startCommand):
	// pid 1's oom_score_adj stays raised while there is one
	oomMu     sync.Mutex
	oomShared int
}

func (k *kernelInit) readConfig(pooled bool) (*config.Config, []int, error) {
	return readSpec(pooled)
}

func (k *kernelInit) sethostname(name string) error { return unix.Sethostname([]byte(name)) }
func (k *kernelInit) loopbackUp() error             { return netns.LoopbackUp() }
func (k *kernelInit) listenEgress(capture []uint16, keep bool) error {
	return listenEgress(capture, keep)
}
func (k *kernelInit) serveDials(ports []uint16) { serveDials(ports) }
func (k *kernelInit) listenHostPorts(ports []uint16, keep bool) error {
	return listenHostPorts(ports, keep)
}
func (k *kernelInit) resolvConf(root *mounts.Root) error {
	return resolvConf(root)
}

func (k *kernelInit) unsharePID() error {
	// unshare(2) CLONE_NEWPID changes only this (locked) thread's namespace for
	// children; the kernel then refuses it new threads (the Go runtime has the template
	// thread create them for a locked thread) and makes its first child pid 1.
	if err := unix.Unshare(unix.CLONE_NEWPID); err != nil {
		return fmt.Errorf("unshare(CLONE_NEWPID): %w", err)
	}
	return nil
}

func (k *kernelInit) holderFiles() (int, int, int, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, -1, -1, fmt.Errorf("socketpair: %w", err)
	}
	exe, err := holderFile()
	if err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return -1, -1, -1, err
	}
	return fds[0], fds[1], exe, nil
}

func (k *kernelInit) startHolder(p *procPlan) (int, error) {
	pid, report, err := startPlan(p, forkHolder)
	k.holderReport = report
	return pid, err
}

func (k *kernelInit) awaitHolder(p *procPlan, pid, send, recv, exe int) (int, error) {
	unix.Close(send) // so that recv ends should the holder end before it sends
	defer unix.Close(recv)
	err := awaitPlan(p, pid, k.holderReport)
	unix.Close(exe)
	if err != nil {
		return -1, err
	}
	fds, err := recvFds(recv, 1)
	if err != nil {
		return -1, fmt.Errorf("receive the procfs context: %w", err)
	}
	return fds[0], nil
}

func (k *kernelInit) buildRoot(spec *config.Config, sources []int, trees bool, procFS int) (*mounts.Root, error) {
	if trees {
		return mounts.SetupTrees(spec, sources, mounts.ProcFS(procFS))
	}
	return mounts.Setup(spec, sources, mounts.ProcFS(procFS))
}

func (k *kernelInit) setUserCounts(root *mounts.Root, counts []config.UserCount) error {
	return setUserCounts(root.ProcSys(), counts)
}
func (k *kernelInit) setIDProc() error             { return openSetIDProc() }
func (k *kernelInit) startSetID(threads int) error { return startSetIDHandler(threads) }
func (k *kernelInit) closeFds(fds []int)           { closeFds(fds) }
func (k *kernelInit) pivotRoot(root *mounts.Root) error {
	// pid 1's own oom_score_adj (oomscore.go), opened while the host's /proc is in view
	// (the root's shows the commands' pid namespace, not pid 1) and pid 1 is dumpable
	if err := k.oom.open(); err != nil {
		return err
	}
	return root.PivotRoot()
}

func (k *kernelInit) setNotDumpable() error     { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
func (k *kernelInit) joinSessionKeyring() error { return newSessionKeyring() }

// limitCaps leaves the forking thread, whose credentials the commands' children start
// from, only stageCaps, which the process stage needs before it drops them all (the
// bounding set too: pid 1 never executes anything, and its empty inheritable and
// ambient sets cannot grow). The init's other threads drop theirs with this one's
// right after the command is forked (dropAllCaps): one stop-the-world of every thread
// (syscall.AllThreadsSyscall) costs ~0.2 ms of a launch here, and until the fork no
// process of the sandbox runs. An init that serves more than one command (sessions)
// limits every thread here instead.
func (k *kernelInit) limitCaps() error {
	if err := threadCapsRefused(); err != nil {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	for _, c := range stageCaps {
		data[c/32].Effective |= 1 << (c % 32)
		data[c/32].Permitted |= 1 << (c % 32)
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

func (k *kernelInit) send(m message)                       { k.w.send(m) }
func (k *kernelInit) readProcess() (*specs.Process, error) { return readProcess() }

func (k *kernelInit) openDir(root *mounts.Root, dir string) (*os.File, error) {
	return root.OpenDir(dir)
}

func (k *kernelInit) lookPath(dir *os.File, name string, env []string) (string, error) {
	return lookPathAt(int(dir.Fd()), name, env)
}

// awaitGoAhead waits for a session's signal handlers (notified), then, the first time,
// reads the launcher's go-ahead on this thread (readLife): the init is in the sandbox's
// cgroup, and so is what the commands start. At the life pipe's end the init exits
// (nothing of a command ran). A session's init watches the pipe from a goroutine from
// then on; a one-shot or pooled init's reaper reads it again for the acknowledgement
// and the launcher's end (reap).
func (k *kernelInit) awaitGoAhead() {
	<-notified
	if k.goAhead {
		return
	}
	k.goAhead = true
	b, ok := readLife()
	if !ok || (b != lifeGo && b != lifeGoNoAck) {
		lifeEnded()
	}
	k.noAck = b == lifeGoNoAck
	if !k.lifeSync {
		go watchLauncher()
	}
}

func (k *kernelInit) defaultSignals() error { return defaultFaultSignals() }
func (k *kernelInit) claimTerminal()        { claimTerminal() }

// restoreStderr makes the command's stderr (stderrFd) the init's fd 2, in place of the
// launcher's setup pipe; once only (stderrFd is closed then, and its number reused).
func (k *kernelInit) restoreStderr() {
	if k.stderrMoved {
		return
	}
	k.stderrMoved = true
	if unix.Dup3(stderrFd, 2, 0) == nil {
		unix.Close(stderrFd)
	}
}

func (k *kernelInit) fork(p *procPlan) (int, error) {
	if err := k.oom.raise(); err != nil {
		return 0, err
	}
	defer k.oom.restore()
	return forkPlan(p)
}
func (k *kernelInit) dropAllCaps() { dropThreadCaps() }

// startCommand raises pid 1's oom_score_adj for the clone, as fork does, but puts it
// back only once no command's child shares pid 1's memory any more (commandLeft): a
// write to it while a process without CLONE_VFORK shares the memory is copied to that
// process too (__set_oom_adj, fs/proc/base.c, MMF_MULTIPROCESS), and the command would
// start with pid 1's own value (oomscore.go).
func (k *kernelInit) startCommand(p *procPlan) (int, int, error) {
	k.oomMu.Lock()
	defer k.oomMu.Unlock()
	if k.oomShared == 0 {
		if err := k.oom.raise(); err != nil {
			return 0, -1, err
		}
	}
	pid, report, err := startPlan(p, forkAsync)
	if err == nil {
		k.oomShared++
	} else if k.oomShared == 0 {
		k.oom.restore()
	}
	if p.listen[1] > 0 {
		unix.Close(p.listen[1]) // the child's end: the child has its own copy
		p.listen[1] = -1
	}
	if err != nil {
		p.closeListen()
	}
	return pid, report, err
}

// commandLeft is called once a command's child has left pid 1's memory (executed or
// exited): pid 1's oom_score_adj is put back when it was the last.
func (k *kernelInit) commandLeft() {
	k.oomMu.Lock()
	defer k.oomMu.Unlock()
	if k.oomShared--; k.oomShared == 0 {
		k.oom.restore()
	}
}

func (k *kernelInit) awaitCommand(p *procPlan, report int, kill func()) error {
	err := awaitCommand(p, report, execDeadline, kill, k.commandLeft)
	if p.listen[0] > 0 {
		p.serveListener(err) // setid.go
	}
	return err
}

// stageCaps are the capabilities pid 1 keeps once the root is built, for the process
// stage in the child: raising rlimits (CAP_SYS_RESOURCE), opening the working directory
// (the DAC ones), and dropping the bounding set and setting securebits (CAP_SETPCAP).
// All are dropped in the child before execve.
var stageCaps = []uint{unix.CAP_SETPCAP, unix.CAP_SYS_RESOURCE, unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH}
