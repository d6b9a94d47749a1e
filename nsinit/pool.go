package nsinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/nsinit/config"
)

// Pool keeps sandboxes built ahead from one template config, so that a command starts in
// the time it takes the init to fork and execute it: the namespaces, mounts,
// pivot_root, cgroup and seccomp compilation are done before the command is known.
// Each sandbox runs one command and is never reused; Pool builds the next one in the
// background as soon as one is taken.
//
// Everything but the process comes from the template, as it was when the sandbox was
// built: a policy compiled into the template (for instance its protected paths, found
// by scanning the workspace) is not re-evaluated for each command. Bind mounts are live,
// so files the command sees are today's.
//
// A Pool is safe for concurrent use. Its sandboxes (each an idle init, ~8 MiB resident,
// and a cgroup when the template has resources) die with the process that made them.
type Pool struct {
	template *config.Config
	ready    chan built
	done     chan struct{}
	wake     chan struct{}
	builder  sync.WaitGroup
	removals sync.WaitGroup // cgroups of ended commands being removed

	mu     sync.Mutex
	closed bool
}

// built is one sandbox built ahead: an init waiting for its process, or the error that
// stopped its build, which the next Start returns.
type built struct {
	cmd *Cmd
	err error
}

// NewPool checks template (its process, if any, is ignored) and starts building size
// sandboxes from a copy of it. It returns an error for a size below 1 or a template
// that cannot be launched (no user, mount or pid namespace, no id mappings), and a
// *SetupError at step "limit capabilities" in a program linked with a cgo runtime (no
// sandbox of it could drop its init's threads' capabilities: README, Library); a sandbox
// whose build fails later reports its *SetupError from Start.
func NewPool(template *config.Config, size int) (*Pool, error) {
	if size < 1 {
		return nil, fmt.Errorf("nsinit: pool size %d, want at least 1", size)
	}
	if err := threadCapsRefused(); err != nil {
		// every init of the pool is this program and would stop there: said now, not
		// at each command (a server learnt it only at its first use)
		se := &SetupError{Step: "limit capabilities", Err: err}
		se.Hint = Hint(se.Step, se.Err)
		return nil, se
	}
	// A deep copy: the caller may change its config afterwards.
	b, err := json.Marshal(template)
	if err != nil {
		return nil, fmt.Errorf("nsinit: pool template: %w", err)
	}
	var t config.Config
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("nsinit: pool template: %w", err)
	}
	t.Process = nil
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("nsinit: pool template: %w", err)
	}
	p := &Pool{template: &t, ready: make(chan built, size), done: make(chan struct{}), wake: make(chan struct{}, 1)}
	p.builder.Add(1)
	go p.fill()
	p.refill()
	return p, nil
}

// fill keeps the ready channel full, one build at a time. It is woken by NewPool, by
// a failed Start, and once a started command has ended or run for refillDelay.
func (p *Pool) fill() {
	defer p.builder.Done()
	for {
		select {
		case <-p.done:
			return
		case <-p.wake:
		}
		for len(p.ready) < cap(p.ready) {
			b := p.build()
			select {
			case p.ready <- b:
			case <-p.done:
				b.discard()
				return
			}
		}
	}
}

// refill wakes fill.
func (p *Pool) refill() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// build clones an init for the template and waits until it has built the sandbox.
func (p *Pool) build() built {
	c := &Cmd{Config: p.template}
	placed, err := c.spawn(true)
	if err != nil {
		return built{err: err}
	}
	m, ok := c.sync.next()
	if err := <-placed; err != nil {
		c.reapFailed()
		return built{err: &SetupError{Step: "cgroup", Err: err}}
	}
	switch {
	case ok && m.Type == msgReady:
		return built{cmd: c}
	case ok && m.Type == msgError:
		c.reapFailed()
		return built{err: &SetupError{Step: m.Step, Err: m.err()}}
	}
	c.reapFailed()
	return built{err: &SetupError{Step: "init", Err: diedEarly(c.init.wait(), c.setupOut.summary())}}
}

func (b built) discard() {
	if b.cmd != nil {
		b.cmd.reapFailed()
	}
}

// take returns a sandbox built ahead, or builds one now when none is ready.
func (p *Pool) take() (built, error) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return built{}, errors.New("nsinit: pool closed")
	}
	select {
	case b := <-p.ready:
		return b, nil
	default:
		return p.build(), nil
	}
}

// Command returns a Cmd that runs process in the next sandbox of the pool. Set its
// Stdin, Stdout, Stderr, Timeout and Events as for Command; Start, Wait and Run behave
// the same, and Timeout and Result.Wall count from Start.
func (p *Pool) Command(process *specs.Process) *Cmd {
	spec := *p.template
	spec.Process = process
	return &Cmd{Config: &spec, pool: p}
}

// Close kills the sandboxes not taken yet and stops building. Commands already started
// are not affected.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	p.mu.Unlock()
	p.builder.Wait()
	for {
		select {
		case b := <-p.ready:
			b.discard()
		default:
			p.removals.Wait()
			return nil
		}
	}
}

// removeLater removes the cgroup of an ended command in the background.
func (p *Pool) removeLater(g cgroup.Group) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed { // Close is waiting, or has returned: no new Add
		g.Destroy()
		return
	}
	p.removals.Add(1)
	go func() {
		defer p.removals.Done()
		g.Destroy()
	}()
}

// startPooled is Start for a Cmd of a Pool: it hands the process and its stdio to a
// sandbox built ahead and waits for the exec report.
func (c *Cmd) startPooled() (err error) {
	if c.init != nil {
		return errors.New("nsinit: already started")
	}
	defer func() {
		if err != nil {
			c.pool.refill() // no Wait will
		}
	}()
	if err := c.pool.template.ValidateProcess(c.Config.Process); err != nil {
		return c.fail(&SetupError{Step: "config", Err: err})
	}
	proc := config.EncodeProcess(c.Config.Process)
	if len(proc) > maxFrame-rlimitFrame {
		return c.fail(&SetupError{Step: "config", Err: fmt.Errorf("the process is %d bytes encoded, more than %d", len(proc), maxFrame-rlimitFrame)})
	}
	for attempt := 0; ; attempt++ {
		b, err := c.pool.take()
		if err != nil {
			return c.fail(&SetupError{Step: "pool", Err: err})
		}
		if b.err != nil {
			return c.fail(b.err)
		}
		c.adopt(b.cmd)
		if c.own.nproc && c.own.nprocLimit > 0 {
			// the sandbox's process limit where no cgroup could be had: RLIMIT_NPROC in
			// its own user namespace (nprocInUserNS), as for an unpooled launch
			proc = config.EncodeProcess(withNproc(c.Config.Process, c.own.nprocLimit))
		}
		stdio, err := newStdioCopy(c.Stdin, c.Stdout, c.Stderr)
		if err != nil {
			c.reapFailed()
			return c.fail(&SetupError{Step: "stdio", Err: err})
		}
		c.stdio = stdio
		c.start = time.Now()
		err = writeFrame(c.ctl, proc, stdio.fds[:])
		if err != nil {
			// The idle init died (killed from outside): one more try with a new one.
			// Nothing was read from Stdin yet.
			c.reapFailed() // aborts the stdio
			if attempt == 0 {
				c.init, c.stdio = nil, nil
				continue
			}
			return c.fail(&SetupError{Step: "send process", Err: err})
		}
		stdio.sent()
		stdio.run()
		break
	}
	c.startTimer()
	if c.Events != nil {
		c.Events(c.namespaceEvent())
	}
	// The next sandbox is built once this command has ended (Wait), or has run for
	// refillDelay: a build beside a short command's start and end slows both.
	time.AfterFunc(refillDelay, c.pool.refill)
	return c.awaitExec(nil)
}

// rlimitFrame is room left in a process frame for the RLIMIT_NPROC startPooled may add.
const rlimitFrame = 64

// refillDelay is how long a pooled command runs before its replacement is built
// beside it.
const refillDelay = 20 * time.Millisecond

// adopt takes over the launch state of b, a pooled init built by Pool.build.
func (c *Cmd) adopt(b *Cmd) {
	c.init, c.own, c.sync, c.syncFile, c.ctl = b.init, b.own, b.sync, b.syncFile, b.ctl
	c.started, c.waited, c.identityMap = b.started, false, b.identityMap
}
