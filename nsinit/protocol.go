package nsinit

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
)

// The launcher and the init stage talk over three pipes, passed to the init as fds 3-5:
//
//	fd 3 (launcher → init): the runtime-spec config.json, then EOF.
//	fd 4 (init → launcher): JSON lines, one message per setup outcome (below).
//	fd 5 (launcher → init): a "go" byte once the init is in the sandbox's cgroup (the
//	     init forks the command only then), then an "ack" byte once the launcher has
//	     seen the exec message (the reaper waits for it before reaping, so the command's
//	     host pid can still be read); then nothing. EOF means the launching process is
//	     gone, and the init exits at once, which makes the kernel kill every process of
//	     the sandbox's pid namespace.
//	     A pipe end is held by the process, not by one thread, unlike PR_SET_PDEATHSIG,
//	     which fires when the cloning thread exits.
//	fd 6…: one O_PATH descriptor per bind mount of the spec, in order, opened by the
//	     launcher without following symlinks (mounts.OpenSourcePath): each source is
//	     resolved once, by the process that checked it.
//
// Bytes on the life pipe, in this order.
const (
	lifeGo  byte = 'g'
	lifeAck byte = 'a'
)

const (
	specFd        = 3
	syncFd        = 4
	lifeFd        = 5
	firstSourceFd = 6
)

// InitArg is the argv[0] under which the binary is re-executed as the init stage.
const InitArg = "gosbx-init"

// message is one line on the sync pipe.
type message struct {
	Type   string `json:"type"`             // msgError, msgExecError, msgExec, msgExit
	Step   string `json:"step,omitempty"`   // msgError: the setup step that failed
	Error  string `json:"error,omitempty"`  // msgError, msgExecError
	Errno  int    `json:"errno,omitempty"`  // msgExecError: execve(2) errno
	Path   string `json:"path,omitempty"`   // msgExec, msgExecError: the resolved command
	Pid    int    `json:"pid,omitempty"`    // msgExec: the command's pid inside the sandbox
	Status int    `json:"status,omitempty"` // msgExit: the command's wait status (wait(2))
}

const (
	msgError     = "error"
	msgExecError = "exec-error"
	msgExec      = "exec"
	msgExit      = "exit"
)

type syncWriter struct{ f *os.File }

func (w syncWriter) send(m message) {
	b, _ := json.Marshal(m)
	w.f.Write(append(b, '\n'))
}

type syncReader struct{ sc *bufio.Scanner }

func newSyncReader(r io.Reader) *syncReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	return &syncReader{sc: sc}
}

// next returns the next message, or ok=false at EOF (the init has exited).
func (r *syncReader) next() (m message, ok bool) {
	for r.sc.Scan() {
		if err := json.Unmarshal(r.sc.Bytes(), &m); err == nil {
			return m, true
		}
	}
	return message{}, false
}
