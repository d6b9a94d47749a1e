package nsinit

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/gosbx/gosbx/internal/filerelay"
)

// stdioCopy holds a pooled command's stdio as os/exec would set it up: an *os.File is
// passed as itself, nil is /dev/null, any other reader or writer is copied through a
// pipe. A pooled init was cloned long before its command's stdio was known, so the
// descriptors travel with the process (SCM_RIGHTS) and the copying is done here.
type stdioCopy struct {
	fds      [3]int     // what the command gets as 0, 1 and 2
	child    []*os.File // ends sent to the init, closed by the launcher once sent
	stdinW   *os.File   // the pipe the Stdin reader is copied into, if any
	readers  []*os.File // the launcher's ends of the Stdout and Stderr pipes
	start    []func()   // the copies, started by run
	started  bool
	copiers  sync.WaitGroup
	stdinEnd chan struct{}
	shared   []sharedFile     // the caller's own descriptors the command shares, put back at the end
	relay    *filerelay.Relay // a read-only file of the caller's copied to the command's stdin
}

// newStdioCopy opens /dev/null or pipes as needed for stdin, stdout and stderr. Its
// callers checked the *os.Files among them first (checkStdio: Start for every path of
// a Cmd, Prestart for its own).
func newStdioCopy(stdin io.Reader, stdout, stderr io.Writer) (*stdioCopy, error) {
	s := &stdioCopy{stdinEnd: make(chan struct{})}
	fail := func(err error) (*stdioCopy, error) {
		for _, f := range s.child {
			f.Close()
		}
		if s.relay != nil {
			s.relay.Stop()
		}
		if s.stdinW != nil {
			s.stdinW.Close()
		}
		return nil, err
	}
	switch r := stdin.(type) {
	case nil:
		f, err := os.Open(os.DevNull)
		if err != nil {
			return fail(err)
		}
		s.child = append(s.child, f)
		s.fds[0] = int(f.Fd())
		close(s.stdinEnd)
	case *os.File:
		// a file opened for reading only goes through a pipe: as itself, the command
		// could open it again writable through /proc/self/fd/0 (internal/filerelay)
		relay, err := filerelay.Needed(int(r.Fd()))
		if err != nil {
			return fail(err)
		}
		if relay {
			pr, rl, err := filerelay.New(int(r.Fd()))
			if err != nil {
				return fail(err)
			}
			s.child, s.relay = append(s.child, pr), rl
			s.fds[0] = int(pr.Fd())
			s.start = append(s.start, rl.Start)
		} else {
			s.fds[0] = int(r.Fd())
			s.shared = append(s.shared, saveShared(s.fds[0])...)
		}
		close(s.stdinEnd)
	default:
		pr, pw, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		s.child, s.stdinW = append(s.child, pr), pw
		s.fds[0] = int(pr.Fd())
		s.start = append(s.start, func() {
			go func() {
				defer close(s.stdinEnd)
				io.Copy(pw, r)
				pw.Close()
			}()
		})
	}
	outs := []io.Writer{stdout, stderr}
	var pipes [2]*os.File
	for i, w := range outs {
		switch w := w.(type) {
		case nil:
			f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				return fail(err)
			}
			s.child = append(s.child, f)
			s.fds[i+1] = int(f.Fd())
		case *os.File:
			s.fds[i+1] = int(w.Fd())
			s.shared = append(s.shared, saveShared(s.fds[i+1])...)
		default:
			if i == 1 && pipes[0] != nil && sameWriter(stdout, stderr) {
				s.fds[2] = s.fds[1] // one pipe for both, as os/exec does
				continue
			}
			pr, pw, err := os.Pipe()
			if err != nil {
				return fail(err)
			}
			s.child = append(s.child, pw)
			s.fds[i+1] = int(pw.Fd())
			pipes[i] = pr
		}
	}
	for i, pr := range pipes {
		if pr == nil {
			continue
		}
		w := outs[i]
		s.readers = append(s.readers, pr)
		s.start = append(s.start, func() {
			s.copiers.Add(1)
			go func() {
				defer s.copiers.Done()
				io.Copy(w, pr)
				pr.Close()
			}()
		})
	}
	return s, nil
}

// run starts copying, once the descriptors have reached the init: a Stdin reader is
// read only then, so nothing it gives can go to a sandbox that never ran.
func (s *stdioCopy) run() {
	for _, f := range s.start {
		f()
	}
	s.start = nil
	s.started = true
}

// abort closes everything of a stdio that never reached a command; the caller's
// readers and writers are left untouched.
func (s *stdioCopy) abort() {
	s.sent()
	for _, f := range s.readers {
		f.Close()
	}
	if s.stdinW != nil {
		s.stdinW.Close()
	}
	s.restore()
}

// restore puts back the state of the caller's descriptors that the command shared.
func (s *stdioCopy) restore() {
	if s.relay != nil {
		s.relay.Stop() // the offset put back past what the command read
	}
	restoreShared(s.shared)
	s.shared = nil
}

// sent closes the launcher's copies of the ends the init now holds.
func (s *stdioCopy) sent() {
	for _, f := range s.child {
		f.Close()
	}
	s.child = nil
}

// wait returns once the output has been copied (the sandbox is gone, so every writer
// is), and gives the stdin copy as long as os/exec's Cmd.WaitDelay would.
func (s *stdioCopy) wait() {
	if !s.started {
		s.abort()
		return
	}
	s.sent()
	// The sandbox is gone, so the pipes' write ends close, unless a process outside it
	// holds one (the command could pass it over a unix socket): as os/exec's WaitDelay,
	// the copy is given 2 s more, then its read end is closed.
	copied := make(chan struct{})
	go func() {
		s.copiers.Wait()
		close(copied)
	}()
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
		for _, f := range s.readers {
			f.Close()
		}
		<-copied
	}
	if s.stdinW != nil {
		s.stdinW.Close() // a reader still copying now fails on its next write
	}
	select {
	case <-s.stdinEnd:
	case <-time.After(2 * time.Second):
	}
	s.restore()
}

// sameWriter reports whether a and b are the same writer, without panicking on values
// that cannot be compared.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() { recover() }()
	return a == b
}

// newStdinCopy is a stdioCopy of stdin alone, for a launch that may be tried twice (a
// root caller's, when a bind cannot be idmapped and the policy allows uid 0 instead):
// the reader is read only once run is called, so a first init that is killed takes
// nothing of it. in is the end for the init's stdin.
func newStdinCopy(stdin io.Reader) (s *stdioCopy, in *os.File, err error) {
	s = &stdioCopy{stdinEnd: make(chan struct{})}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	s.child, s.stdinW = []*os.File{pr}, pw
	s.start = append(s.start, func() {
		go func() {
			defer close(s.stdinEnd)
			io.Copy(pw, stdin)
			pw.Close()
		}()
	})
	return s, pr, nil
}
