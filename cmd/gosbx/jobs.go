package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/internal/session"
	"github.com/gosbx/gosbx/nsinit"
)

// A job is a command started with `exec --session --detach`: its stdin /dev/null, its
// stdout and stderr copied by the supervisor into its log, NAME.jobs/ID.log in the
// runtime directory, rotated to ID.log.1 at jobLogMax (at most twice that on disk); its
// end recorded. `gosbx job` asks the supervisor about it.
const (
	jobLogMax = 1 << 20
	maxJobs   = 100 // ended jobs beyond this are forgotten, oldest first, logs removed
)

type job struct {
	id      int
	args    []string
	started time.Time
	cmd     *nsinit.Cmd
	log     *jobLog
	done    chan struct{} // closed once ended and recorded

	mu     sync.Mutex
	ended  time.Time
	result *nsinit.Result
	code   int // the exit status by gosbx exec's rules, once ended
	// exitEvent is the job's exit status line, as exec --status-fd writes it, once
	// ended (job wait --status-fd)
	exitEvent []byte
}

// jobLog is a job's log file, rotated at jobLogMax; readers follow its writes.
type jobLog struct {
	path string

	mu   sync.Mutex
	f    *os.File
	size int64
	gen  int // rotations so far
	// total is every byte written to the log so far, size those of the current file:
	// a follower finds what it missed from them (streamLog)
	total int64
	more  chan struct{} // closed at each write, then replaced
	gate  *rateGate     // the session's: bounds the rate of every job's copy together
}

// jobLogRate bounds how fast the supervisor logs its jobs' output, all together, in
// bytes a second. The
// supervisor's copy (pipe to its memory to a tmpfs file, rotated) runs outside the
// session's --cpus: unbounded, it spent 2.7 times the job's own CPU (attack review 17:
// 2.02 s for a job's 0.75 s of `yes` under --cpus 0.2, about 600 MB/s copied). At 8 MiB/s
// it spends about a twentieth of that share (docs/decisions.md), and a job's log keeps
// only the last 1-2 MiB anyway. splice(2) into the log was measured too: no cheaper,
// the cost is the tmpfs pages written and freed by the rotation, not the user copy.
const jobLogRate = 8 << 20

// rateGate makes its caller wait so that the bytes paid for stay within jobLogRate a
// second, with a burst of a quarter second's worth after an idle time.
type rateGate struct {
	mu   sync.Mutex
	paid time.Time // when the bytes so far are paid for
}

// pay waits until n more bytes are within the rate.
func (g *rateGate) pay(n int64) {
	g.mu.Lock()
	now := time.Now()
	if burst := now.Add(-time.Second / 4); g.paid.Before(burst) {
		g.paid = burst
	}
	g.paid = g.paid.Add(time.Duration(n * int64(time.Second) / jobLogRate))
	wait := g.paid.Sub(now)
	g.mu.Unlock()
	if wait > 0 {
		time.Sleep(wait)
	}
}

func newJobLog(path string, gate *rateGate) (*jobLog, error) {
	f, err := openJobLog(path)
	if err != nil {
		return nil, err
	}
	return &jobLog{path: path, f: f, more: make(chan struct{}), gate: gate}, nil
}

// Write appends p to the log, rotating it first when p would take it past jobLogMax;
// then it waits as long as jobLogRate asks (the job's pipe fills meanwhile, and the
// job waits on its writes).
func (l *jobLog) Write(p []byte) (int, error) {
	n, err := l.write(p)
	l.gate.pay(int64(n))
	return n, err
}

// write is Write without the rate gate, for the supervisor's own notes.
func (l *jobLog) write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size > 0 && l.size+int64(len(p)) > jobLogMax {
		if err := l.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := l.f.Write(p)
	l.wrote(int64(n))
	return n, err
}

// openJobLog opens a job's log for writing, emptied. Not O_APPEND: splice(2) refuses a
// file opened so (EINVAL), and the supervisor is the log's one writer (under mu).
func openJobLog(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
}

// rotate renames the log to ID.log.1 and starts an empty one; l.mu held.
func (l *jobLog) rotate() error {
	l.f.Close()
	os.Rename(l.path, l.path+".1")
	f, err := openJobLog(l.path)
	if err != nil {
		return err
	}
	l.f, l.size = f, 0
	l.gen++
	return nil
}

// wrote counts n bytes written and wakes the followers; l.mu held.
func (l *jobLog) wrote(n int64) {
	l.size += n
	l.total += n
	close(l.more)
	l.more = make(chan struct{})
}

// logFile is one of a job's log files open for reading, and where it starts in all the
// job wrote (bytes).
type logFile struct {
	f    *os.File
	base int64
}

// open opens the log's files newer than generation since (-1: all that are kept), the
// rotated one before the current one, under the lock: none is rotated meanwhile. It
// returns them with the current generation and the channel its next write closes. A
// file that cannot be opened is left out.
func (l *jobLog) open(since int) ([]logFile, int, chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	base := l.total - l.size
	var out []logFile
	if l.gen > 0 && l.gen-1 > since {
		if f, err := os.Open(l.path + ".1"); err == nil {
			if st, err := f.Stat(); err == nil {
				out = append(out, logFile{f, base - st.Size()})
			} else {
				f.Close()
			}
		}
	}
	if l.gen > since {
		if f, err := os.Open(l.path); err == nil {
			out = append(out, logFile{f, base})
		}
	}
	return out, l.gen, l.more
}

// jobs is the supervisor's table of jobs.
type jobs struct {
	gate rateGate // every job's log copy (jobLogRate)
	mu   sync.Mutex
	next int
	all  []*job
}

func (j *jobs) get(id uint64) *job {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, x := range j.all {
		if uint64(x.id) == id {
			return x
		}
	}
	return nil
}

// add records a new job, forgetting the oldest ended ones beyond maxJobs.
func (j *jobs) add(x *job) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.all = append(j.all, x)
	for i := 0; len(j.all) > maxJobs && i < len(j.all); {
		old := j.all[i]
		select {
		case <-old.done:
			os.Remove(old.log.path)
			os.Remove(old.log.path + ".1")
			j.all = append(j.all[:i], j.all[i+1:]...)
		default:
			i++
		}
	}
}

func (x *job) info() session.Job {
	x.mu.Lock()
	defer x.mu.Unlock()
	in := session.Job{ID: x.id, Args: x.args, State: "running", Started: x.started.UTC().Format(time.RFC3339Nano), Log: x.log.path}
	if x.cmd != nil {
		in.Pid = x.cmd.Pid()
	}
	if r := x.result; r != nil {
		code := r.ExitCode
		in.State, in.Ended, in.ExitCode, in.Signal, in.TimedOut = "exited", x.ended.UTC().Format(time.RFC3339Nano), &code, int(r.Signal), r.TimedOut
	}
	return in
}

// detach starts cmd as a job and answers its id; it reports whether the job started.
func (sv *supervisor) detach(cmd *nsinit.Cmd, req *session.ExecRequest, reply func(byte, []byte)) bool {
	if err := os.MkdirAll(sv.files.Jobs, 0o700); err != nil {
		reply(session.RepMessage, []byte("gosbx: "+err.Error()+"\n"))
		reply(session.RepExit, session.EncodeUint(nsinit.ExitSetup))
		return false
	}
	sv.jobs.mu.Lock()
	sv.jobs.next++
	id := sv.jobs.next
	sv.jobs.mu.Unlock()
	l, err := newJobLog(filepath.Join(sv.files.Jobs, strconv.Itoa(id)+".log"), &sv.jobs.gate)
	if err != nil {
		reply(session.RepMessage, []byte("gosbx: "+err.Error()+"\n"))
		reply(session.RepExit, session.EncodeUint(nsinit.ExitSetup))
		return false
	}
	x := &job{id: id, args: req.Args, started: time.Now(), cmd: cmd, log: l, done: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, l, l
	// The job's status lines: those of its start (the namespaces, its exec or the
	// error) go to the client's --status-fd while it waits for the job's id; the exit
	// line is kept for job wait --status-fd (the client is gone by then).
	var starting atomic.Bool
	starting.Store(true)
	cmd.Events = func(e nsinit.Event) {
		b, _ := json.Marshal(e)
		switch {
		case e.ExitCode != nil:
			x.mu.Lock()
			x.exitEvent = b
			x.mu.Unlock()
		case req.Status && starting.Load():
			reply(session.RepEvent, b)
		}
	}
	defer starting.Store(false) // no reply on this connection once detach returns
	sv.routes.begin()
	// as exec's: from here the job may run before its id is answered, so a client that
	// loses this session after this frame says "may have started", never 125
	reply(session.RepEvent, dispatchEvent)
	if req.Status {
		cmd.Events(sv.sess.Event())
	}
	err = sv.checkShadowed(cmd.Config)
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		sv.routes.abort()
		l.f.Close()
		os.Remove(l.path)
		replyStartError(sv.withNotFoundHint(err, cmd.Config), reply)
		return false
	}
	if fault.Check("session slow exec report") != nil {
		// the job's id answered late (fault injection test): it runs, its client has
		// only the dispatch frame
		time.Sleep(5 * time.Second)
	}
	pid := cmd.Pid() // read now, while the job runs, for job ls
	// the proxy's denials go to the job's log, as its stderr
	sv.routes.add(pid, &netRoute{message: func(m string) { l.write([]byte(m)) }}) // not gated: the proxy never waits
	sv.jobs.add(x)
	go func() {
		cmd.Wait()
		sv.routes.remove(pid)
		for _, m := range append(cleanupNotes(cmd.Result), sv.treeNotes()...) {
			l.write([]byte(m))
		}
		x.mu.Lock()
		x.ended, x.result, x.code = time.Now(), cmd.Result, cmd.Result.ExitCode
		x.mu.Unlock()
		l.mu.Lock()
		l.f.Close()
		close(l.more)
		l.mu.Unlock()
		close(x.done)
	}()
	reply(session.RepJob, session.EncodeUint(uint64(id)))
	reply(session.RepExit, session.EncodeUint(0))
	return true
}

// jobRequest serves ReqJobs, ReqJobWait, ReqJobKill and ReqJobLogs on fd; fds are the
// descriptors that came with it (job wait --status-fd's), closed here.
func (sv *supervisor) jobRequest(fd int, kind byte, body []byte, fds []int) {
	defer closeAll(fds)
	reply := func(k byte, b []byte) { session.WriteFrame(fd, k, b, nil) }
	fail := func(msg string) {
		reply(session.RepMessage, []byte("gosbx: "+msg+"\n"))
		reply(session.RepExit, session.EncodeUint(nsinit.ExitSetup))
	}
	if kind == session.ReqJobs {
		sv.jobs.mu.Lock()
		all := append([]*job(nil), sv.jobs.all...)
		sv.jobs.mu.Unlock()
		infos := []session.Job{}
		for _, x := range all {
			infos = append(infos, x.info())
		}
		b, _ := json.Marshal(infos)
		reply(session.RepInfo, b)
		return
	}
	// wait: the job, and its client's --status-fd number + 1 (0: none), the
	// descriptor itself sent with the request
	n := map[byte]int{session.ReqJobWait: 2, session.ReqJobKill: 2, session.ReqJobLogs: 2}[kind]
	v, err := session.DecodeUints(body, n)
	if err != nil {
		fail(err.Error())
		return
	}
	x := sv.jobs.get(v[0])
	if x == nil {
		fail(fmt.Sprintf("session %s has no job %d (gosbx job ls %s)", sv.name, v[0], sv.name))
		return
	}
	switch kind {
	case session.ReqJobWait:
		if v[1] != 0 {
			// as exec --status-fd's: not a file the session's commands can append to
			if len(fds) != 1 {
				fail(fmt.Sprintf("the request came with %d descriptors, want the --status-fd one", len(fds)))
				return
			}
			if err := checkStatusOutsideAs(fds[0], int(v[1]-1), sv.sess.Config()); err != nil {
				fail(err.Error())
				return
			}
		}
		<-x.done
		if v[1] != 0 {
			x.mu.Lock()
			ev := x.exitEvent
			x.mu.Unlock()
			if ev != nil {
				reply(session.RepEvent, ev)
			}
		}
		reply(session.RepExit, session.EncodeUint(uint64(x.code)))
	case session.ReqJobKill:
		select {
		case <-x.done:
			fail(fmt.Sprintf("job %d has ended", x.id))
			return
		default:
		}
		if v[1] == 0 || v[1] > 64 {
			fail(fmt.Sprintf("signal %d", v[1]))
			return
		}
		if err := x.cmd.SignalGroup(sysSignal(v[1])); err != nil {
			fail(err.Error())
			return
		}
		reply(session.RepExit, session.EncodeUint(0))
	case session.ReqJobLogs:
		sv.streamLog(x, v[1] != 0, reply)
		reply(session.RepExit, session.EncodeUint(0))
	}
}

// streamLog sends the job's log (its rotated part first); with follow, what is written
// after, until the job has ended. A follower holds its file open: a rotation renames
// it, a second one unlinks it, and what was written to it before stays readable to its
// end. One slower than the job's output (its client's socket full) can still miss whole
// files, rotated away between two of its reads: it then resumes at the oldest file
// kept, drops the partial lines on either side of the gap and says how many bytes it
// lost on stderr, where it read the next file from the old one's offset and spliced
// two unrelated places of the log into a line no command printed (from an attack
// review, r37 F5). Its standard output is so always the log's lines in order, some
// left out, never one made up.
func (sv *supervisor) streamLog(x *job, follow bool, reply func(byte, []byte)) {
	buf := make([]byte, 64<<10)
	var pending []byte // follow: the last line read in part, held until its end comes
	skip := false      // after a gap: the next file's first partial line is dropped
	cut := false       // a line's start was sent without its end (a prompt, a progress bar)
	send := func(b []byte) {
		reply(session.RepData, b)
		cut = b[len(b)-1] != '\n'
	}
	emit := func(b []byte) {
		if skip {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				return
			}
			b, skip = b[i+1:], false
		}
		if len(b) == 0 {
			return
		}
		if !follow {
			reply(session.RepData, b)
			return
		}
		pending = append(pending, b...)
		i := bytes.LastIndexByte(pending, '\n')
		if i < 0 && len(pending) < len(buf) {
			return
		}
		// (a line longer than buf goes in parts: a gap may cut it, as any long line)
		end := len(pending)
		if i >= 0 {
			end = i + 1
		}
		send(pending[:end])
		pending = append(pending[:0], pending[end:]...)
	}
	// read sends f's bytes from *off to its end
	read := func(f *os.File, off *int64) {
		for {
			n, err := f.ReadAt(buf, *off)
			if n > 0 {
				*off += int64(n)
				emit(buf[:n])
			}
			if n == 0 || err != nil {
				return
			}
		}
	}
	files, gen, more := x.log.open(-1)
	if len(files) == 0 {
		return
	}
	cur := files[len(files)-1]
	defer func() { cur.f.Close() }()
	var off int64
	for _, lf := range files[:len(files)-1] {
		read(lf.f, &off)
		lf.f.Close()
		off = 0
	}
	read(cur.f, &off)
	for live := follow; live; {
		var partial <-chan time.Time // only while a line is held in part
		if len(pending) > 0 {
			partial = time.After(partialWait)
		}
		select {
		case <-more:
		case <-x.done:
			live = false // (follow stays: emit holds partial lines still)
		case <-partial:
			// nothing more written meanwhile: the line held in part (a prompt, a
			// progress bar's \r) is shown as it is
			send(pending)
			pending = pending[:0]
			continue
		}
		// what was written to the file held, to its end should it have been rotated
		read(cur.f, &off)
		var next []logFile
		next, gen, more = x.log.open(gen)
		for _, lf := range next {
			read(cur.f, &off) // rotated since: final now, read to its end
			if gap := lf.base - (cur.base + off); gap > 0 {
				note := "the lines cut by the gap were left out too"
				if cut {
					// the start of a line was shown already: ended here, said so
					send([]byte{'\n'})
					note = "the line shown last before the gap was cut short there, the others cut left out"
				}
				reply(session.RepMessage, []byte(fmt.Sprintf("gosbx: %d bytes of the job's log were rotated away before this follower read them (it read slower than the job wrote); %s\n", gap, note)))
				pending, skip = pending[:0], true
			}
			cur.f.Close()
			cur, off = lf, 0
			read(cur.f, &off)
		}
	}
	if len(pending) > 0 {
		send(pending) // the log's last line, without a newline
	}
}

// partialWait is how long a follower holds the start of a line whose end has not come
// (streamLog): past it, with nothing more written, it is shown as it is.
const partialWait = 250 * time.Millisecond
