package nsinit

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/wire"
)

// The launcher and the init stage talk over a socket and two pipes, passed to the init
// as fds 3-5:
//
//	fd 3 (launcher → init): a unix stream socket carrying frames (a 4-byte
//	     little-endian length, then a config.Encode encoding). First the config (the
//	     seccomp filter compiled), then the bind sources: one descriptor per bind mount of the
//	     config, in order, as SCM_RIGHTS (unix(7)) on one-byte messages of at most
//	     fdsPerMessage each. For a caller other than root they are O_PATH descriptors
//	     opened by the launcher without following symlinks (mounts.OpenSourcePath), so
//	     each source is resolved once, by the process that checked it; for root (argv
//	     word "trees") detached mount trees the launcher cloned and maybe idmapped.
//	     Both are sent after the clone, while the init's runtime starts. An init built
//	     ahead by a Pool (argv word "pool") then reports "ready" on fd 4 and waits for
//	     one more frame, the command's specs.Process, which comes with its stdin,
//	     stdout and stderr as SCM_RIGHTS descriptors. A session's init (argv word
//	     "session") reports "ready" too, then serves its owner's requests there, one
//	     frame each, until the owner is gone (sessioninit.go).
//	fd 4 (init → launcher): frames, one message per setup outcome (below).
//	fd 2 (init → launcher): a pipe until the init restores the command's stderr from
//	     fd 6 (before forking the command, or reading a pooled process): what the init's
//	     runtime writes when it crashes during setup.
//	fd 5 (launcher → init): a "go" byte once the init is in the sandbox's cgroup (the
//	     init forks the command only then), then an "ack" byte once the launcher has
//	     seen the exec message (the reaper waits for it before reaping, so the command's
//	     host pid can still be read); then nothing. A launcher that reads no host
//	     pid (no Events callback) sends "go, no ack" instead, and no ack: the reaper
//	     reaps as soon as the command ends. EOF means the launching process is
//	     gone, and the init exits at once, which makes the kernel kill every process of
//	     the sandbox's pid namespace.
//	     A pipe end is held by the process, not by one thread, unlike PR_SET_PDEATHSIG,
//	     which fires when the cloning thread exits.
//	fd 6 (launcher → init): the command's stderr, moved onto fd 2 (above).
//	fd 7 (both ways), only with egress or port forwards: a unix seqpacket socket on
//	     which the init sends its egress listening sockets (egress.go) and answers
//	     the owner's requests for connections inside (publish.go).
//
// Bytes on the life pipe, in this order.
const (
	lifeGo      byte = 'g'
	lifeGoNoAck byte = 'G'
	lifeAck     byte = 'a'
)

const (
	specFd = 3
	syncFd = 4
	lifeFd = 5
	// stderrFd is the command's stderr while the init builds the sandbox: the init's
	// own fd 2 is then a pipe the launcher reads (a Go runtime crash during setup, such
	// as a thread the pids limit refused, becomes the launch's error, not a stack dump
	// on the caller's terminal); the init moves this onto fd 2 before the command.
	stderrFd = 6
)

// InitArg is the argv[0] under which the binary is re-executed as the init stage.
const InitArg = "gosbx-init"

// Words after argv[0] of the init: poolArg makes it a pooled one (built ahead, waiting
// for its process); treesArg says fds 6… are detached mount trees cloned (and maybe
// idmapped) by the launcher, to attach as they are (mounts.SetupTrees), not O_PATH
// descriptors of the sources to open again.
const (
	poolArg    = "pool"
	treesArg   = "trees"
	sessionArg = "session" // a session's init: serves its owner's requests (sessioninit.go)
)

// maxFrame bounds a frame on a pooled init's socket: the spec or the process (its
// arguments and environment, which execve(2) bounds far lower).
const maxFrame = 64 << 20

// message is one frame on the sync pipe.
type message struct {
	Type   string // msgError, msgExecError, msgForking, msgExec, msgExit, msgReady
	Step   string // msgError: the setup step that failed
	Error  string // msgError, msgExecError
	Errno  int    // msgExecError: execve(2) errno
	Path   string // msgExec, msgExecError: the resolved command
	Pid    int    // msgExec: the command's pid inside the sandbox
	Status int    // msgExit: the command's wait status (wait(2))
	// msgExit of a one-shot sandbox: how many other processes were still running when
	// the command exited, killed with the sandbox, and up to leftNames of their names,
	// each ended by NUL (leftRunning; a name may be empty)
	Left  int
	Names string
	// msgError: the failure's type and fields, so the launcher rebuilds the same error
	// (remoteerror.go); Errno is then the first errno in its chain.
	Kind                      string // errMount (*mounts.Error), errPath (*os.PathError), or ""
	Op, Source, Target, Flags string // its fields (Target: an *os.PathError's Path)
	Cause                     string // the text of its Err
}

const (
	msgError     = "error"
	msgExecError = "exec-error"
	msgExec      = "exec"
	msgExit      = "exit"
	msgReady     = "ready"   // a pooled init: the sandbox is built, the process may come
	msgForking   = "forking" // the command is about to be forked: it may run from here
)

// syncWriter sends messages as frames: a 4-byte little-endian length, then the fields
// in internal/wire's encoding (not JSON: the init then never runs encoding/json).
type syncWriter struct{ f *os.File }

func (w syncWriter) send(m message) {
	e := &wire.Encoder{B: make([]byte, 4, 64+len(m.Error)+len(m.Path)+len(m.Source)+len(m.Target)+len(m.Cause))}
	e.Str(m.Type)
	e.Str(m.Step)
	e.Str(m.Error)
	e.Uint(uint64(m.Errno))
	e.Str(m.Path)
	e.Uint(uint64(m.Pid))
	e.Uint(uint64(uint32(m.Status)))
	for _, f := range []string{m.Kind, m.Op, m.Source, m.Target, m.Flags, m.Cause} {
		e.Str(f)
	}
	e.Uint(uint64(m.Left))
	e.Str(m.Names)
	binary.LittleEndian.PutUint32(e.B, uint32(len(e.B)-4))
	w.f.Write(e.B)
}

type syncReader struct {
	r   *bufio.Reader
	raw func() (message, bool) // a raw init's reports (rawlaunch.go), read in r's place
}

func newSyncReader(r io.Reader) *syncReader { return &syncReader{r: bufio.NewReader(r)} }

// maxMessage bounds a message frame (an error text, a path).
const maxMessage = 1 << 20

// next returns the next message, or ok=false at EOF (the init has exited). A frame
// that does not decode ends the stream too: only the init writes there.
func (r *syncReader) next() (m message, ok bool) {
	if r.raw != nil {
		return r.raw()
	}
	if r.r == nil {
		return message{}, false
	}
	var hdr [4]byte
	body, err := []byte(nil), error(nil)
	if _, err = io.ReadFull(r.r, hdr[:]); err == nil {
		n := binary.LittleEndian.Uint32(hdr[:])
		if n > maxMessage {
			err = wire.ErrMalformed
		} else {
			body = make([]byte, n)
			_, err = io.ReadFull(r.r, body)
		}
	}
	if err == nil {
		d := &wire.Decoder{B: body}
		m = message{Type: d.Str(), Step: d.Str(), Error: d.Str(), Errno: int(d.Uint32()), Path: d.Str(),
			Pid: int(d.Uint32()), Status: int(d.Uint32())}
		m.Kind, m.Op, m.Source, m.Target, m.Flags, m.Cause = d.Str(), d.Str(), d.Str(), d.Str(), d.Str(), d.Str()
		m.Left, m.Names = int(d.Uint32()), d.Str()
		err = d.End("message")
	}
	if err != nil {
		r.r = nil
		return message{}, false
	}
	return m, true
}

// socketPair returns the two ends of a unix stream socket pair, close-on-exec: the
// first for the init (fd 3), the second for the launcher.
func socketPair() (*os.File, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "spec-init"), os.NewFile(uintptr(fds[1]), "spec"), nil
}

// writeFrame sends payload as one frame on the socket f, with fds attached to its first
// byte (SCM_RIGHTS).
func writeFrame(f *os.File, payload []byte, fds []int) error {
	if len(payload) > maxFrame {
		return fmt.Errorf("frame of %d bytes exceeds %d", len(payload), maxFrame)
	}
	buf := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(payload)), uint32(len(payload)))
	buf = append(buf, payload...)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var n int
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		n, serr = unix.SendmsgN(int(fd), buf, oob, nil, 0)
		return serr != unix.EAGAIN
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("sendmsg: %w", serr)
	}
	if n < len(buf) {
		_, err = f.Write(buf[n:])
	}
	return err
}

// readFrame reads one frame from the socket fd (blocking), and up to wantFds descriptors
// sent with it, close-on-exec. Descriptors beyond wantFds are closed.
func readFrame(fd int, wantFds int) ([]byte, []int, error) {
	return readFrameOn(fd, nil, wantFds)
}

// readFrameOn is readFrame; with rc (a connection to a copy of the socket, made
// non-blocking: pollableSocket) a read that would block parks the goroutine in the
// runtime's netpoller instead of blocking its thread in recvmsg(2), so that no P of the
// runtime is held in a system call meanwhile (a session's init: serveSession).
func readFrameOn(fd int, rc syscall.RawConn, wantFds int) ([]byte, []int, error) {
	do := func(op func(fd int) error) error {
		if rc == nil {
			return op(fd)
		}
		var opErr error
		if err := rc.Read(func(pfd uintptr) bool {
			opErr = op(int(pfd))
			return opErr != unix.EAGAIN
		}); err != nil {
			return err
		}
		return opErr
	}
	var hdr [4]byte
	oob := make([]byte, unix.CmsgSpace(4*8))
	var fds []int
	got := 0
	for got < len(hdr) {
		var n, oobn int
		err := do(func(fd int) (err error) {
			n, oobn, _, _, err = unix.Recvmsg(fd, hdr[got:], oob, unix.MSG_CMSG_CLOEXEC)
			return err
		})
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("recvmsg: %w", err)
		}
		if oobn > 0 {
			fds = append(fds, wire.Rights(oob[:oobn])...)
		}
		if n == 0 {
			closeFds(fds)
			return nil, nil, io.ErrUnexpectedEOF
		}
		got += n
	}
	size := binary.LittleEndian.Uint32(hdr[:])
	if size > maxFrame {
		closeFds(fds)
		return nil, nil, fmt.Errorf("frame of %d bytes exceeds %d", size, maxFrame)
	}
	body := make([]byte, size)
	for got = 0; got < int(size); {
		var n int
		err := do(func(fd int) (err error) {
			n, err = unix.Read(fd, body[got:])
			return err
		})
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			closeFds(fds)
			return nil, nil, errors.Join(io.ErrUnexpectedEOF, err)
		}
		got += n
	}
	if len(fds) > wantFds {
		closeFds(fds[wantFds:])
		fds = fds[:wantFds]
	}
	return body, fds, nil
}

// pollableSocket is a raw connection, through the runtime's netpoller, to a copy of the
// socket fd, for readFrameOn; the copy stays open while the connection is reachable, and
// fd is non-blocking from then on (one open file description). On an error fd is left
// blocking.
func pollableSocket(fd int) (syscall.RawConn, error) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket %d in the netpoller: dup: %w", fd, err)
	}
	f := os.NewFile(uintptr(dup), "socket") // not fd itself: its finalizer would close fd
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		unix.SetNonblock(fd, false)
		return nil, fmt.Errorf("socket %d in the netpoller: %w", fd, err)
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		c.Close()
		unix.SetNonblock(fd, false)
		return nil, fmt.Errorf("socket %d in the netpoller: %T has no raw connection", fd, c)
	}
	return sc.SyscallConn()
}

func closeFds(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// fdsPerMessage is how many descriptors sendFds attaches to one message: SCM_MAX_FD
// (253) is the kernel's limit.
const fdsPerMessage = 250

// sendFds sends fds on the socket f, fdsPerMessage at a time, each batch on a one-byte
// message; recvFds(…, len(fds)) receives them.
func sendFds(f *os.File, fds []int) error {
	for len(fds) > 0 {
		n := min(len(fds), fdsPerMessage)
		if err := unix.Sendmsg(int(f.Fd()), []byte{'F'}, unix.UnixRights(fds[:n]...), nil, 0); err != nil {
			return fmt.Errorf("sendmsg: %w", err)
		}
		fds = fds[n:]
	}
	return nil
}

// recvFds receives n descriptors sent by sendFds on the socket fd (blocking),
// close-on-exec. A message without descriptors, or more than n, is an error.
func recvFds(fd int, n int) ([]int, error) {
	fds := make([]int, 0, n)
	oob := make([]byte, unix.CmsgSpace(4*fdsPerMessage))
	var b [1]byte
	for len(fds) < n {
		got, oobn, flags, _, err := unix.Recvmsg(fd, b[:], oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err == nil && got == 0 {
			err = io.ErrUnexpectedEOF
		}
		var batch []int
		if err == nil {
			batch = wire.Rights(oob[:oobn])
			if len(batch) == 0 || flags&unix.MSG_CTRUNC != 0 || len(fds)+len(batch) > n {
				err = fmt.Errorf("%d descriptors received, want %d", len(fds)+len(batch), n)
			}
		}
		fds = append(fds, batch...)
		if err != nil {
			closeFds(fds)
			return nil, err
		}
	}
	return fds, nil
}
