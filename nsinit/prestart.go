package nsinit

import (
	"errors"
	"io"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// Prestarted is an init stage cloned before its config is known (Prestart): its Go
// runtime starts (~1.5-2 ms) while the caller builds the config. Give it to a Cmd as
// Cmd.Prestarted; Start takes it when its clone parameters are the ones the Cmd's
// config needs, and otherwise kills it and clones the init anew. Close kills it when
// no Cmd is to take it (the config could not be built).
//
// Until a Cmd takes it, it holds an init blocked on reading its config, in its new
// namespaces, and for a root caller one host id of the guess's range (a lock file in
// /run/gosbx/ids); no cgroup. Should the process that made it die, the init reads the
// end of its config socket and exits, and the kernel drops the host id's lock.
type Prestarted struct {
	mu     sync.Mutex
	l      *initLaunch // nil once taken or closed
	id     string      // the sandbox id, which a Cmd that takes it keeps
	taker  *Cmd        // the one Cmd it was handed to (claim), nil before
	hid    *hostID     // a root caller's host id (mapped), or the user namespace's owner
	rng    idRange
	owner  bool // hid owns the user namespace of a uid 0 that keeps its mapping (ownerRange)
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// Prestart clones an init stage for a sandbox whose config is not built yet, from
// guess: its clone parameters are taken from guess.Linux (Namespaces, UIDMappings,
// GIDMappings) and guess.RootID (a root caller's host id range), as Start would take
// them; nothing else of guess is read, and it need not pass config.Validate. stdin,
// stdout and stderr are the command's stdio, as Cmd's fields of the same names (the
// Cmd that takes the init must have the same ones). The init gets no CPU affinity, no
// cgroup and no fd 7: a config with --cpus, a cgroup v2 group, egress, port forwards or
// host ports never takes it.
//
// It returns once the init's execve(2) has succeeded. Errors: a guess without
// Linux or mappings, a host id not to be had (takeHostID: "all N host ids … are in
// use", the lock directory), a stdio descriptor Start would refuse (*HandedFileError,
// step "stdio"), or the pipes' and the clone's (wrapped, naming the step);
// nothing is left running then. A caller may always go on without it: Start clones
// its own init and reports the same errors as a *SetupError.
func Prestart(guess *config.Config, stdin io.Reader, stdout, stderr io.Writer) (*Prestarted, error) {
	if guess == nil || guess.Linux == nil || len(guess.Linux.UIDMappings) == 0 || len(guess.Linux.GIDMappings) == 0 {
		return nil, errors.New("nsinit: prestart: the guess has no id mappings")
	}
	if rawInitDefault && rawAllowed.Load() && !rawTaken.Load() {
		// the launch takes the raw init (rawWanted), which is not cloned ahead: an init
		// cloned now would be killed unused (a root caller's launch with a v2 group,
		// which takes the Go init, is cloned by Start then)
		return nil, nil
	}
	if err := checkStdio(stdin, stdout, stderr); err != nil {
		// as Start refuses them (which checks them no more when it has this init)
		return nil, &SetupError{Step: "stdio", Err: err}
	}
	p := &Prestarted{id: newSandboxID(), stdin: stdin, stdout: stdout, stderr: stderr}
	spec := guess
	rng, mapped := rootMapping(guess)
	var err error
	if mapped {
		if p.hid, err = takeHostID(rng, p.id); err != nil {
			return nil, &SetupError{Step: "host id", Err: err}
		}
		spec = withHostID(guess, p.hid.id)
	} else if r, ok := ownerRange(guess); ok {
		if p.hid, err = takeHostID(r, p.id); err != nil {
			return nil, &SetupError{Step: "host id", Err: err}
		}
		rng, p.owner = r, true
	}
	p.rng = rng
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		p.hid.release()
		return nil, &SetupError{Step: "close fds", Err: err}
	}
	params := cloneParams{args: initArgs(false, false, mapped), sys: initSysAttr(spec, mapped, p.owner, -1), as: p.hid}
	stdio, err := newStdioCopy(stdin, stdout, stderr)
	step := "pipe"
	if err == nil {
		p.l, step, err = launchInit(params, stdio)
	}
	if err != nil {
		p.hid.release()
		return nil, &SetupError{Step: step, Err: err}
	}
	return p, nil
}

// Pid is the prestarted init's pid on the host, 0 once taken by a Cmd or closed.
func (p *Prestarted) Pid() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l == nil {
		return 0
	}
	return p.l.init.pid
}

// Close kills the init unless a Cmd took it, reaps it (it is gone when Close returns),
// and lets go of its host id and descriptors. It may be called more than once, and on
// a nil *Prestarted; it returns nil.
func (p *Prestarted) Close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.abort()
		p.l = nil
	}
	p.hid.release()
	p.hid = nil
	return nil
}

// takeHostID hands a Cmd the prestarted init's host id when the config's range is
// the one it was taken from, for the same use (owner: the user namespace's owner, or
// else the command's host id); nil otherwise.
func (p *Prestarted) takeHostID(r idRange, owner bool) *hostID {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hid == nil || p.owner != owner || p.rng != r {
		return nil
	}
	h := p.hid
	p.hid = nil
	return h
}

// take hands a Cmd the prestarted init when it was cloned with q (cloneParams.same)
// and the same stdio; nil otherwise, when it is to be closed.
func (p *Prestarted) take(q *cloneParams, stdin io.Reader, stdout, stderr io.Writer) *initLaunch {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l == nil || !p.l.params.same(q) || !sameReader(stdin, p.stdin) || !sameWriter(stdout, p.stdout) || !sameWriter(stderr, p.stderr) {
		return nil
	}
	l := p.l
	p.l = nil
	return l
}

// claim hands p to c, once: to the first Cmd that starts with it while it still holds
// its init. It returns p's sandbox id, which is the init's host id's holder and so
// c's; "" (and p is not c's) for any other Cmd (one given the same p as another, or p
// after Close), which then draws an id of its own and clones its own init.
func (p *Prestarted) claim(c *Cmd) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l == nil || p.taker != nil {
		return ""
	}
	p.taker = c
	return p.id
}

// takePrestarted takes c.Prestarted for a launch: its sandbox id becomes c's. A
// pooled or a session's init never takes one: it is closed. A Prestarted already
// handed to another Cmd, or closed, is left alone (claim).
func (c *Cmd) takePrestarted(pooled bool) *Prestarted {
	p := c.Prestarted
	c.Prestarted = nil
	if p == nil {
		return nil
	}
	id := p.claim(c)
	if id == "" {
		return nil
	}
	if pooled || c.session {
		p.Close()
		return nil
	}
	if c.own.id == "" {
		c.own.id = id
	}
	return p
}

// hasStdio reports whether p was made with exactly these stdin, stdout and stderr
// (Prestart refused any it would not hand in, checkStdio); false for a nil p.
func (p *Prestarted) hasStdio(stdin io.Reader, stdout, stderr io.Writer) bool {
	return p != nil && sameReader(stdin, p.stdin) && sameWriter(stdout, p.stdout) && sameWriter(stderr, p.stderr)
}

// sameReader is sameWriter for readers.
func sameReader(a, b io.Reader) (same bool) {
	defer func() { recover() }()
	return a == b
}
