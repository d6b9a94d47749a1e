package session

import (
	"time"

	"github.com/gosbx/gosbx/internal/wire"
)

// ExecRequest is a ReqExec's body: what a client may ask of a session, all of it
// narrowing what the session's policy allows (its env added to, its working directory
// moved inside the sandbox, a timeout for this command alone).
type ExecRequest struct {
	Args    []string
	Env     []string // KEY=VALUE, set over the session's
	Chdir   string   // "" keeps the session's; a relative one is taken from it
	Timeout time.Duration
	Status  bool // the client wants the status events (RepEvent)
	// StatusFd is the client's number of its status descriptor, sent as a fourth
	// descriptor, so that the supervisor refuses one the command could write.
	StatusFd int
	// Detach starts the command as a job: its output goes to the job's log, the
	// answer is its id (RepJob) at once.
	Detach bool
	// TTY gives the command a terminal of the sandbox's own; the answer carries its
	// master (RepPTY), the window size starts as Rows x Cols.
	TTY        bool
	Rows, Cols uint16
	// Cwd is the client's current directory (getcwd(3)): the command's working
	// directory when no Chdir is given and it lies inside the session's workspace, as
	// gosbx exec's default --chdir.
	Cwd string
	// Umask, when HasUmask, is the client's umask (umask(2)), the command's unless the
	// session's policy sets one, as gosbx exec's command inherits its caller's.
	HasUmask bool
	Umask    uint32
	// Drains is how many read ends of the client's output relay (stdiorelay.go) follow
	// the other descriptors (0 to 2): the supervisor reads and discards them once the
	// client has gone, so that a process the command leaves writes on (no SIGPIPE).
	Drains int
}

// Encode is the request's wire encoding.
func (r *ExecRequest) Encode() []byte {
	e := &wire.Encoder{}
	e.Strs(r.Args)
	e.Strs(r.Env)
	e.Str(r.Chdir)
	e.Uint(uint64(r.Timeout.Milliseconds()))
	e.Bool(r.Status)
	e.Uint(uint64(r.StatusFd))
	e.Bool(r.Detach)
	e.Bool(r.TTY)
	e.Uint(uint64(r.Rows))
	e.Uint(uint64(r.Cols))
	e.Str(r.Cwd)
	e.Bool(r.HasUmask)
	e.Uint(uint64(r.Umask))
	e.Uint(uint64(r.Drains))
	return e.B
}

// DecodeExec decodes a ReqExec's body.
func DecodeExec(b []byte) (*ExecRequest, error) {
	d := &wire.Decoder{B: b}
	r := &ExecRequest{Args: d.Strs(), Env: d.Strs(), Chdir: d.Str()}
	r.Timeout = time.Duration(d.Uint()) * time.Millisecond
	r.Status = d.Bool()
	r.StatusFd = int(d.Uint32())
	r.Detach = d.Bool()
	r.TTY = d.Bool()
	r.Rows, r.Cols = uint16(d.Uint()), uint16(d.Uint())
	r.Cwd = d.Str()
	r.HasUmask = d.Bool()
	r.Umask = d.Uint32() & 0o777
	r.Drains = int(d.Uint32())
	return r, d.End("exec request")
}

// EncodeUint is a body of one number (ReqSignal, RepExit).
func EncodeUint(v uint64) []byte {
	e := &wire.Encoder{}
	e.Uint(v)
	return e.B
}

// EncodeUints is a body of numbers (ReqJobKill, ReqJobLogs).
func EncodeUints(v ...uint64) []byte {
	e := &wire.Encoder{}
	for _, x := range v {
		e.Uint(x)
	}
	return e.B
}

// DecodeUints decodes EncodeUints's body of n numbers.
func DecodeUints(b []byte, n int) ([]uint64, error) {
	d := &wire.Decoder{B: b}
	v := make([]uint64, n)
	for i := range v {
		v[i] = d.Uint()
	}
	return v, d.End("numbers")
}

// DecodeUint decodes EncodeUint's body.
func DecodeUint(b []byte) (uint64, error) {
	d := &wire.Decoder{B: b}
	v := d.Uint()
	return v, d.End("number")
}

// Info is what `gosbx session ls` shows of a session (RepInfo, JSON).
type Info struct {
	Name       string `json:"name"`
	State      string `json:"state"` // "running"
	Pid        int    `json:"pid"`   // the supervisor's
	InitPid    int    `json:"init-pid"`
	SandboxID  string `json:"sandbox-id"`
	HostUID    int64  `json:"host-uid,omitempty"`
	Started    string `json:"started"` // RFC 3339
	AgeSeconds int64  `json:"age-seconds"`
	Processes  int    `json:"processes"`    // besides the two pid 1s
	Memory     int64  `json:"memory-bytes"` // resident, of every process of the sandbox
	Requests   int    `json:"requests"`     // commands started
	Policy     string `json:"policy"`       // a summary: profile, workspace, network
}

// Job is one detached command of a session (`gosbx job ls`, JSON).
type Job struct {
	ID       int      `json:"id"`
	Args     []string `json:"args"`
	State    string   `json:"state"` // "running" or "exited"
	Pid      int      `json:"pid,omitempty"`
	Started  string   `json:"started"`         // RFC 3339
	Ended    string   `json:"ended,omitempty"` // RFC 3339
	ExitCode *int     `json:"exit-code,omitempty"`
	Signal   int      `json:"signal,omitempty"`
	TimedOut bool     `json:"timed-out,omitempty"`
	Log      string   `json:"log"` // its log file (and .1, the rotated part)
}
