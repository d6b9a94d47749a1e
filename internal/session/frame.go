package session

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/wire"
)

// The control socket (a unix stream socket, NAME.sock) carries frames: a 4-byte
// little-endian length, then a kind byte and a body in internal/wire's encoding; a
// frame's descriptors (SCM_RIGHTS) come with its first bytes.
//
// Client to supervisor:
//
//	ReqExec   args, env additions (K=V), working directory, timeout (ms), whether to
//	          send status events; with three descriptors: stdin, stdout, stderr
//	ReqSignal a signal number, for the running command (after ReqExec)
//	ReqInfo   nothing: the supervisor answers RepInfo
//	ReqStop   nothing: the supervisor ends the session, answers RepDone and exits
//	ReqJobs   nothing: the supervisor answers RepInfo with the jobs (JSON)
//	ReqJobWait a job id and its client's --status-fd number + 1 (0: none; the
//	           descriptor sent with it): RepEvent, its exit status line (with one),
//	           and RepExit once the job has ended
//	ReqJobKill a job id and a signal number, for the job's process group: RepExit 0
//	ReqJobLogs a job id and whether to follow: RepData frames, then RepExit 0
//
// Supervisor to client: RepEvent (a JSON status line), RepMessage (text for stderr),
// RepJob (a detached command's job id), RepData (log bytes), RepExit (the exit status,
// last), RepInfo (JSON), RepDone.
const (
	ReqExec    byte = 'E'
	ReqSignal  byte = 'G'
	ReqInfo    byte = 'L'
	ReqStop    byte = 'S'
	RepEvent   byte = 'V'
	RepMessage byte = 'M'
	RepExit    byte = 'X'
	RepInfo    byte = 'I'
	RepDone    byte = 'D'
	ReqJobs    byte = 'J'
	ReqJobWait byte = 'W'
	ReqJobKill byte = 'K'
	ReqJobLogs byte = 'O'
	RepJob     byte = 'j'
	RepData    byte = 'd'
	RepPTY     byte = 't' // with one descriptor: the command's terminal master (--tty)
)

// maxFrame bounds a frame (a command's arguments and environment, which execve(2)
// bounds lower).
const maxFrame = 16 << 20

// WriteFrame sends one frame of kind with body on the socket fd, fds attached.
func WriteFrame(fd int, kind byte, body []byte, fds []int) error {
	if len(body)+1 > maxFrame {
		return fmt.Errorf("frame of %d bytes exceeds %d", len(body)+1, maxFrame)
	}
	buf := binary.LittleEndian.AppendUint32(make([]byte, 0, 5+len(body)), uint32(len(body)+1))
	buf = append(append(buf, kind), body...)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	for len(buf) > 0 {
		n, err := unix.SendmsgN(fd, buf, oob, nil, unix.MSG_NOSIGNAL)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("sendmsg: %w", err)
		}
		buf, oob = buf[n:], nil
	}
	return nil
}

// ReadFrame reads one frame from the socket fd and up to maxFds descriptors sent with
// it (close-on-exec; more are closed). io.EOF when the peer closed before a frame.
func ReadFrame(fd int, maxFds int) (kind byte, body []byte, fds []int, err error) {
	var hdr [4]byte
	oob := make([]byte, unix.CmsgSpace(4*8))
	got := 0
	fail := func(err error) (byte, []byte, []int, error) {
		for _, f := range fds {
			unix.Close(f)
		}
		return 0, nil, nil, err
	}
	for got < len(hdr) {
		n, oobn, _, _, err := unix.Recvmsg(fd, hdr[got:], oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("recvmsg: %w", err))
		}
		if oobn > 0 {
			fds = append(fds, wire.Rights(oob[:oobn])...)
		}
		if n == 0 {
			if got == 0 {
				return fail(io.EOF)
			}
			return fail(io.ErrUnexpectedEOF)
		}
		got += n
	}
	size := binary.LittleEndian.Uint32(hdr[:])
	if size == 0 || size > maxFrame {
		return fail(fmt.Errorf("frame of %d bytes", size))
	}
	b := make([]byte, size)
	for got = 0; got < int(size); {
		n, err := unix.Read(fd, b[got:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return fail(errors.Join(io.ErrUnexpectedEOF, err))
		}
		got += n
	}
	if len(fds) > maxFds {
		for _, f := range fds[maxFds:] {
			unix.Close(f)
		}
		fds = fds[:maxFds]
	}
	return b[0], b[1:], fds, nil
}

// Dial connects to the control socket at path (blocking, close-on-exec).
func Dial(path string) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return -1, &connectError{path, err}
	}
	return fd, nil
}

type connectError struct {
	path string
	err  error
}

func (e *connectError) Error() string { return "connect " + e.path + ": " + e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }
