package nsinit

import (
	"errors"
	"os"
	"syscall"

	"github.com/gosbx/gosbx/mounts"
)

// Kinds of typed error that cross from the init to the launcher (message.Kind).
const (
	errMount = "mount" // *mounts.Error
	errPath  = "path"  // *os.PathError
)

// errorMessage is the msgError frame for a failure of the init at step: the error's
// text, its errno, and the fields of the first *mounts.Error or *os.PathError in its
// chain, so that the launcher can rebuild the same types (message.err).
func errorMessage(step string, err error) message {
	m := message{Type: msgError, Step: step, Error: err.Error()}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		m.Errno = int(errno)
	}
	var me *mounts.Error
	var pe *os.PathError
	switch {
	case errors.As(err, &me):
		m.Kind, m.Op, m.Source, m.Target, m.Flags = errMount, me.Op, me.Source, me.Target, me.Flags
		if me.Err != nil {
			m.Cause = me.Err.Error()
		}
	case errors.As(err, &pe):
		m.Kind, m.Op, m.Target = errPath, pe.Op, pe.Path
		if pe.Err != nil {
			m.Cause = pe.Err.Error()
		}
	}
	return m
}

// err rebuilds the init's error from a msgError frame: the same text, unwrapping to a
// *mounts.Error or *os.PathError with the same fields when the init's had one, and to
// the errno (errors.Is(err, unix.EPERM) holds on this side as on the init's).
func (m message) err() error {
	var errno error
	if m.Errno != 0 {
		errno = syscall.Errno(m.Errno)
	}
	cause := func(text string) error {
		if errno != nil && text == errno.Error() {
			return errno
		}
		return &remoteError{text: text, err: errno}
	}
	var typed error
	switch m.Kind {
	case errMount:
		typed = &mounts.Error{Op: m.Op, Source: m.Source, Target: m.Target, Flags: m.Flags, Err: cause(m.Cause)}
	case errPath:
		typed = &os.PathError{Op: m.Op, Path: m.Target, Err: cause(m.Cause)}
	default:
		return cause(m.Error)
	}
	if typed.Error() == m.Error {
		return typed
	}
	return &remoteError{text: m.Error, err: typed} // wrapped in the init with more words
}

// remoteError is an error of the init stage as it crossed the process boundary: its
// text, unwrapping to what could be rebuilt of its chain (a typed error, an errno).
type remoteError struct {
	text string
	err  error
}

func (e *remoteError) Error() string { return e.text }
func (e *remoteError) Unwrap() error { return e.err }
