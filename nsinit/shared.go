package nsinit

import "golang.org/x/sys/unix"

// sharedFile is the state of one of the caller's descriptors that the command gets as
// itself (Stdin, Stdout or Stderr an *os.File): the command holds the same open file
// description, so what it changes there outlives the sandbox unless the launcher puts
// it back. Put back: the file status flags (fcntl(2) F_SETFL: O_APPEND, O_NONBLOCK,
// O_ASYNC, O_DIRECT, O_NOATIME; a caller's pipe left O_NONBLOCK gave its next write
// EAGAIN), a pipe's capacity (F_SETPIPE_SZ), and a terminal's modes (termios, as a
// shell does after a job), line discipline (TIOCSETD) and exclusive mode (TIOCNXCL:
// from an attack review, r39 F4). Not put back: the file offset (what the command read or
// wrote moved it, as with any shared description), locks it took on the description
// (flock(2), OFD locks: held until the caller closes it), a terminal's window size and
// what it wrote to the terminal.
type sharedFile struct {
	fd       int
	flags    int
	pipeSize int           // F_GETPIPE_SZ; 0: not a pipe
	termios  *unix.Termios // nil: not a terminal
	ldisc    int           // a terminal's line discipline (TIOCGETD); -1 unread
	excl     bool          // a terminal was not in exclusive mode (TIOCGEXCL 0): TIOCNXCL if set since
}

// saveShared records the state of each distinct descriptor of fds.
func saveShared(fds ...int) []sharedFile {
	var saved []sharedFile
next:
	for _, fd := range fds {
		for _, s := range saved {
			if s.fd == fd {
				continue next
			}
		}
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil {
			continue
		}
		s := sharedFile{fd: fd, flags: fl}
		if n, err := unix.FcntlInt(uintptr(fd), unix.F_GETPIPE_SZ, 0); err == nil {
			s.pipeSize = n
		}
		s.ldisc = -1
		if t, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
			s.termios = t
			if d, err := unix.IoctlGetInt(fd, unix.TIOCGETD); err == nil {
				s.ldisc = d
			}
			if x, err := unix.IoctlGetInt(fd, unix.TIOCGEXCL); err == nil && x == 0 {
				s.excl = true
			}
		}
		saved = append(saved, s)
	}
	return saved
}

// restoreShared puts back what saveShared recorded, where the command changed it;
// errors are ignored (a pipe holding more than its old capacity stays larger). A
// terminal's modes are set only where that cannot stop the launcher: when the terminal
// is not its controlling terminal, or the launcher's process group is the terminal's
// foreground one (tcsetattr(3) from a background group raises SIGTTOU).
func restoreShared(saved []sharedFile) {
	for _, s := range saved {
		if fl, err := unix.FcntlInt(uintptr(s.fd), unix.F_GETFL, 0); err == nil && fl != s.flags {
			unix.FcntlInt(uintptr(s.fd), unix.F_SETFL, s.flags)
		}
		if s.pipeSize > 0 {
			if n, err := unix.FcntlInt(uintptr(s.fd), unix.F_GETPIPE_SZ, 0); err == nil && n != s.pipeSize {
				unix.FcntlInt(uintptr(s.fd), unix.F_SETPIPE_SZ, s.pipeSize)
			}
		}
		if s.termios != nil {
			restoreTerminal(s)
		}
	}
}

// restoreTerminal puts back a terminal's exclusive mode, line discipline and modes.
// Exclusive mode (TIOCEXCL: every later open of the terminal fails EBUSY, the caller's
// own /dev/tty prompts too) is cleared whatever the foreground; the line discipline
// (TIOCSETD 27, N_NULL, discards all the terminal carries) and the termios are set only
// where that cannot stop the launcher (TIOCSETD checks the job as tcsetattr does).
func restoreTerminal(s sharedFile) {
	if s.excl {
		if x, err := unix.IoctlGetInt(s.fd, unix.TIOCGEXCL); err == nil && x != 0 {
			unix.IoctlSetInt(s.fd, unix.TIOCNXCL, 0)
		}
	}
	if fg, err := unix.IoctlGetInt(s.fd, unix.TIOCGPGRP); err == nil && fg != unix.Getpgrp() {
		return
	}
	if s.ldisc >= 0 {
		if d, err := unix.IoctlGetInt(s.fd, unix.TIOCGETD); err == nil && d != s.ldisc {
			unix.IoctlSetPointerInt(s.fd, unix.TIOCSETD, s.ldisc)
		}
	}
	if t, err := unix.IoctlGetTermios(s.fd, unix.TCGETS); err == nil && *t != *s.termios {
		unix.IoctlSetTermios(s.fd, unix.TCSETS, s.termios)
	}
}
