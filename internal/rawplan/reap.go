package rawplan

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Reap op: the raw init as pid 1 of the sandbox once the command runs, the Go
// init's reap (nsinit/reaper.go) in nosplit code. It waits in poll(2) on the signalfd
// of the forwarded signals, the life pipe and a pidfd of the command; forwards each
// signal of ReapArgs.forward to the command (the others dropped); reaps on every wake
// (and once a second) what the command made a child of pid 1 (CLONE_PARENT); once the
// command has exited, kills the holder (so that a tracer in the commands' namespace
// dies and the command's zombie is pid 1's to reap), reaps the command, reaps every
// other child until none is left (endRest), reports the command's wait status
// (RecExit, with what it left running: leftRunning) and exits with its shell-style code. At the life pipe's end (the launcher
// gone) it kills every process it can and exits once all are reaped.

// Record kinds the raw init emits on the launcher's sync pipe.
const (
	RecForking = 1 // the command is about to be forked
	RecExec    = 2 // executed: B its pid
	RecExit    = 3 // the command's wait status in B, in A how many processes it left running (RecLeftName); every other process of the sandbox is gone
)

// ReapArgs are a Reap op's inputs, in the arena (ReapOp).
type ReapArgs struct {
	sigfd, life, pidfd, cmd, holder, sync, goByte Reg
	helper                                        Reg // the set-ID handler's pid (nsinit/rawsetid.go); negative: none
	lifeFd, syncFd                                uintptr
	forward                                       uint64 // the signals sent on to the command (bit n-1 for signal n)
	ackByte                                       byte   // the acknowledgement's byte; the go-ahead byte that asks for none
	noAckByte                                     byte
}

// ReapOp adds the Reap op: sigfd, pidfd, cmd (its pid), holder (its pid), helper (the
// set-ID handler's pid, killed with the holder; negative: none) and goByte (the go-ahead's
// byte, ReadOne) are registers; life and sync descriptors.
func (p *Plan) ReapOp(s uint16, sigfd, pidfd, cmd, holder, helper, goByte Reg, life, sync int, forward uint64, ack, noAck byte) {
	ra := Alloc[ReapArgs](p)
	*ra = ReapArgs{sigfd: sigfd, pidfd: pidfd, cmd: cmd, holder: holder, helper: helper, goByte: goByte,
		lifeFd: uintptr(life), syncFd: uintptr(sync), forward: forward, ackByte: ack, noAckByte: noAck}
	p.Op(s, nil, Reap, 0, Lit(p.Offset(ptr(ra))))
}

// killedStatus is the exit status of a raw init that ends the sandbox without a report
// (nsinit.ExitKilled).
const killedStatus = 137

//go:nosplit
//go:norace
func reap(st *State, k Caller) {
	ra := (*ReapArgs)(unsafe.Add(unsafe.Pointer(st), st.args[0]))
	sigfd, pidfd := st.regs[ra.sigfd%Regs], st.regs[ra.pidfd%Regs]
	cmd, holder := st.regs[ra.cmd%Regs], st.regs[ra.holder%Regs]
	helper := st.regs[ra.helper%Regs]
	acked := byte(st.regs[ra.goByte%Regs]) == ra.noAckByte
	gone := false
	a := &st.args
	for exited := false; !exited; {
		n := 0
		st.pfds[n] = unix.PollFd{Fd: int32(sigfd), Events: unix.POLLIN}
		n++
		if !gone {
			st.pfds[n] = unix.PollFd{Fd: int32(ra.lifeFd), Events: unix.POLLIN}
			n++
		}
		if acked || gone {
			st.pfds[n] = unix.PollFd{Fd: int32(pidfd), Events: unix.POLLIN}
			n++
		}
		a[0], a[1], a[2] = uintptr(unsafe.Pointer(&st.pfds[0])), uintptr(n), 1000
		r, e := k.raw(unix.SYS_POLL, a)
		if e == 0 {
			reapOthers(st, k, cmd, holder)
		}
		if e == unix.EINTR || e == unix.ENOMEM || e == 0 && r == 0 {
			continue
		}
		if e != 0 {
			endRest(st, k, holder, helper)
			exit(st, k, killedStatus)
		}
		for j := 0; j < n; j++ {
			f := &st.pfds[j]
			if f.Revents == 0 {
				continue
			}
			switch {
			case int64(f.Fd) == sigfd:
				forward(st, k, uintptr(sigfd), uintptr(cmd), ra.forward)
			case uintptr(f.Fd) == ra.lifeFd && !gone:
				a[0], a[1], a[2] = ra.lifeFd, uintptr(unsafe.Pointer(&st.iobuf[0])), 1
				r, e := k.raw(unix.SYS_READ, a)
				if e != 0 || r != 1 || !acked && st.iobuf[0] != ra.ackByte {
					// the launcher is gone (or broke the protocol): every process killed
					a[0], a[1] = ^uintptr(0), uintptr(unix.SIGKILL)
					k.raw(unix.SYS_KILL, a)
					gone = true
				} else {
					acked = true
				}
			case int64(f.Fd) == pidfd:
				exited = true
			}
		}
	}
	if gone {
		for {
			a[0], a[1], a[2], a[3] = ^uintptr(0), 0, unix.WALL, 0
			_, e := k.raw(unix.SYS_WAIT4, a)
			if e == unix.EINTR {
				continue
			}
			if e != 0 {
				exit(st, k, killedStatus)
			}
			a[0], a[1] = ^uintptr(0), uintptr(unix.SIGKILL) // whatever the command started since
			k.raw(unix.SYS_KILL, a)
		}
	}
	left := leftRunning(st, k, ra.syncFd) // what the command left running, before the kill
	if holder > 0 {
		a[0], a[1] = uintptr(holder), uintptr(unix.SIGKILL)
		k.raw(unix.SYS_KILL, a)
	}
	var ws uint32
	for {
		a[0], a[1], a[2], a[3] = uintptr(cmd), uintptr(unsafe.Pointer(&ws)), 0, 0
		_, e := k.raw(unix.SYS_WAIT4, a)
		if e == 0 {
			break
		}
		if e != unix.EINTR {
			endRest(st, k, holder, helper)
			exit(st, k, killedStatus)
		}
	}
	endRest(st, k, holder, helper)
	st.rec = Record{Kind: RecExit, A: left, B: uint64(ws)}
	a[0], a[1], a[2] = ra.syncFd, uintptr(unsafe.Pointer(&st.rec)), recSize
	k.raw(unix.SYS_WRITE, a)
	code := uintptr(ws>>8) & 0xff // exited: its status
	if ws&0x7f != 0 {
		code = 128 + uintptr(ws&0x7f) // killed by a signal
	}
	exit(st, k, code)
}

// forward reads every signal pending on sigfd and sends those in mask on, as nsinit's
// sendOn does.
//
//go:nosplit
//go:norace
func forward(st *State, k Caller, sigfd, cmd uintptr, mask uint64) {
	a := &st.args
	const size = unsafe.Sizeof(unix.SignalfdSiginfo{})
	for {
		a[0], a[1], a[2] = sigfd, uintptr(unsafe.Pointer(&st.sigbuf[0])), uintptr(len(st.sigbuf))
		r, e := k.raw(unix.SYS_READ, a)
		if e == unix.EINTR {
			continue
		}
		if e != 0 || r == 0 {
			return // EAGAIN: none left
		}
		for off := uintptr(0); off+size <= r; off += size {
			sig := (*unix.SignalfdSiginfo)(unsafe.Pointer(&st.sigbuf[off])).Signo
			if sig < 1 || sig > 64 || mask&(1<<(sig-1)) == 0 {
				continue
			}
			// as nsinit's sendOn: the job-control stops stop every process (SIGSTOP,
			// kill -1), SIGCONT continues them all, any other but SIGWINCH is followed
			// by SIGCONT to the command
			switch sig {
			case uint32(unix.SIGTSTP), uint32(unix.SIGTTIN), uint32(unix.SIGTTOU):
				a[0], a[1] = ^uintptr(0), uintptr(unix.SIGSTOP)
				k.raw(unix.SYS_KILL, a)
			case uint32(unix.SIGCONT):
				a[0], a[1] = ^uintptr(0), uintptr(unix.SIGCONT)
				k.raw(unix.SYS_KILL, a)
			default:
				a[0], a[1] = cmd, uintptr(sig)
				k.raw(unix.SYS_KILL, a)
				if sig != uint32(unix.SIGWINCH) {
					a[0], a[1] = cmd, uintptr(unix.SIGCONT)
					k.raw(unix.SYS_KILL, a)
				}
			}
		}
	}
}

// reapOthers reaps every exited child but the command and the holder, without waiting
// (nsinit's reapOthers).
//
//go:nosplit
//go:norace
func reapOthers(st *State, k Caller, cmd, holder int64) {
	a := &st.args
	for {
		var info unix.Siginfo
		a[0], a[1], a[2], a[3], a[4] = unix.P_ALL, 0, uintptr(unsafe.Pointer(&info)), unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, 0
		if _, e := k.raw(unix.SYS_WAITID, a); e != 0 {
			return
		}
		child := int64(*(*int32)(unsafe.Add(unsafe.Pointer(&info), 16)))
		if child <= 0 || child == cmd || child == holder {
			return
		}
		a[0], a[1], a[2], a[3] = uintptr(child), 0, unix.WNOHANG|unix.WALL, 0
		k.raw(unix.SYS_WAIT4, a)
	}
}

// endRest kills the holder and the set-ID handler (helper: its answer can wait in the
// kernel for good, on a file system whose server stalls) and reaps every child until
// none is left (nsinit's endRest; the Go init's handler threads end with its exit).
// The helper's pid is its own even if it exited and was reaped already: no other
// process of the init's pid namespace but the commands (just killed with the holder)
// could have taken it.
//
//go:nosplit
//go:norace
func endRest(st *State, k Caller, holder, helper int64) {
	a := &st.args
	if holder > 0 {
		a[0], a[1] = uintptr(holder), uintptr(unix.SIGKILL)
		k.raw(unix.SYS_KILL, a)
	}
	if helper > 0 {
		a[0], a[1] = uintptr(helper), uintptr(unix.SIGKILL)
		k.raw(unix.SYS_KILL, a)
	}
	for {
		a[0], a[1], a[2], a[3] = ^uintptr(0), 0, unix.WALL, 0
		_, e := k.raw(unix.SYS_WAIT4, a)
		if e == unix.ECHILD {
			return
		}
		if e != 0 && e != unix.EINTR {
			exit(st, k, killedStatus)
		}
	}
}

//go:nosplit
//go:norace
func exit(st *State, k Caller, code uintptr) {
	a := &st.args
	for {
		a[0] = code
		k.raw(unix.SYS_EXIT_GROUP, a)
	}
}
