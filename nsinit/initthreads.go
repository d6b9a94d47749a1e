package nsinit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Signals sent to one thread of a one-shot or pooled init (tgkill(2) by a host process;
// docs/decisions.md, "Signals sent to one thread of the init"). The launcher executes
// the init with initSignals blocked, and the Go runtime gives every thread it makes that
// start mask, except the five it unblocks (initsig.go). The others (SIGUSR1, SIGUSR2,
// SIGWINCH, SIGCONT, SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU) so stay blocked on every thread: sent to the process, they wait for the main
// thread's signalfd; sent to another thread, they would wait on that thread for good
// (only a thread can take its own pending signals). So every thread but the main one
// gets them unblocked, behind the runtime's back: the main thread sends it
// sigUnblockSignal, whose handler (sigUnblock, initsig_amd64.s; it obeys only the init's
// own tgkill to a thread other than the main one) clears them from the mask
// the thread returns to. There, like the five, they reach sigRedirect, which sends them
// on to the main thread; one already pending is delivered as soon as they are unblocked.
// Threads the runtime makes later start with those blocked again: the reaper repeats
// this for new threads on each wake (at least once a second).

// sigUnblockSignal is the signal fixThreads sends: the highest real-time signal, which
// neither the runtime (it takes SIGRTMIN+1 for its all-threads system calls) nor the init
// use.
const sigUnblockSignal = 64

// unblockMask is the set sigUnblock clears: initSignals without the five the runtime
// unblocks itself (read by the assembly).
var unblockMask uint64

// unblockAddr returns the address of sigUnblock (initsig_amd64.s).
func unblockAddr() uintptr

// The init's threads as the host's procfs lists them (its /proc/PID/task, opened by
// installUnblock while the init still sees the host's /proc: after pivot_root its /proc
// is the commands' pid namespace's, which does not show the init), and, by host tid, the
// tid in the init's own pid namespace (tgkill's numbering) of each sent sigUnblockSignal.
var (
	taskDir      *os.File
	fixedThreads map[string]int // made with taskDir
)

// installUnblock installs sigUnblock on sigUnblockSignal and opens the init's task
// directory. Errors name the system call or the path.
func installUnblock() error {
	unblockMask = initSigMask()
	for _, s := range runtimeUnblocked {
		unblockMask &^= 1 << (uint(s) - 1)
	}
	_, r := redirectAddrs()
	act := kernelSigaction{handler: unblockAddr(), flags: saOnStack | saRestart | saRestorer | saSiginfo, restorer: r, mask: ^uint64(0)}
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, sigUnblockSignal, uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
		return fmt.Errorf("rt_sigaction %d: %w", sigUnblockSignal, e)
	}
	f, err := os.Open("/proc/self/task")
	if err != nil {
		return err
	}
	taskDir = f
	fixedThreads = map[string]int{}
	return nil
}

// saSiginfo: the handler takes (signal, siginfo, ucontext) (asm-generic/signal.h).
const saSiginfo = 0x4

// fixThreads sends sigUnblockSignal to every thread of the init but the calling (main)
// one that has not had it yet. Called on the main thread; a thread whose tid in the
// init's pid namespace cannot be read (it has just ended) is left for the next call.
func fixThreads() {
	if taskDir == nil {
		return
	}
	if _, err := taskDir.Seek(0, 0); err != nil {
		return
	}
	names, _ := taskDir.Readdirnames(-1)
	me := unix.Gettid()
	for _, host := range names {
		if _, done := fixedThreads[host]; done {
			continue
		}
		tid := nsTid(host)
		if tid <= 0 {
			continue
		}
		if tid == me {
			fixedThreads[host] = tid
			continue
		}
		if unix.Tgkill(int(redirectPid), tid, sigUnblockSignal) == nil {
			fixedThreads[host] = tid
		}
	}
	if len(fixedThreads) > 2*len(names)+16 {
		// forget the threads that ended (their host tids may come back)
		live := map[string]bool{}
		for _, n := range names {
			live[n] = true
		}
		for n := range fixedThreads {
			if !live[n] {
				delete(fixedThreads, n)
			}
		}
	}
}

// nsTid is the tid, in the init's own pid namespace, of its thread host (a name of
// taskDir): the last field of its status's NSpid line (proc(5)); 0 if unknown.
func nsTid(host string) int {
	fd, err := unix.Openat(int(taskDir.Fd()), host+"/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	var buf [4096]byte
	n, _ := unix.Read(fd, buf[:])
	unix.Close(fd)
	for _, line := range strings.Split(string(buf[:max(n, 0)]), "\n") {
		if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				return 0
			}
			tid, _ := strconv.Atoi(f[len(f)-1])
			return tid
		}
	}
	return 0
}
