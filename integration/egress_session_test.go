package integration

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// In a session with --net proxy, each exec request gets its own connections' lines:
// a denial's message on its stderr and its status lines on its --status-fd, as gosbx
// exec gives them, and another request running meanwhile gets none of them; a detached
// job's denial is in its log.
func TestEgressSessionDenialsReachCaller(t *testing.T) {
	requireBinary(t)
	bin, err := testnetBinary()
	if err != nil {
		t.Fatal(err)
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok-plain") })}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		hp := l.Addr().(*net.TCPAddr).Port
		run := func(extra []*os.File, args ...string) *exec.Cmd {
			ctx := e.limitCtx(runLimit)
			cmd := e.rawCommand(ctx, args...)
			cmd.Path, cmd.Args = replaceBinary(cmd, bin)
			cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt, "GOSBX_TEST_HOSTS=pkg.test=127.0.0.1")
			cmd.ExtraFiles = extra
			return cmd
		}
		start := run(nil, "session", "start", "s", "--workspace", e.ws, "--net", "proxy",
			"--allow-host", fmt.Sprintf("pkg.test:%d", hp), "--allow-host", fmt.Sprintf("127.0.0.1:%d", hp))
		if out, err := start.CombinedOutput(); err != nil {
			t.Fatalf("session start: %v\n%s", err, out)
		}
		statusFile := func(name string) *os.File {
			f, err := os.Create(filepath.Join(e.base, name))
			must(t, err)
			e.chown(f.Name())
			t.Cleanup(func() { f.Close() })
			return f
		}
		// a request that runs meanwhile and must get nothing of the others'
		quietStatus := statusFile("quiet.json")
		quiet := run([]*os.File{quietStatus}, "exec", "--session", "s", "--status-fd", "3", "--",
			shellPath, "-c", "echo up; while [ ! -e "+filepath.Join(e.ws, "done")+" ]; do sleep 0.05; done")
		var quietOut, quietErr bytes.Buffer
		quiet.Stdout, quiet.Stderr = &quietOut, &quietErr
		must(t, quiet.Start())
		for i := 0; !strings.Contains(quietOut.String(), "up") && i < 200; i++ {
			e.gosbx("session", "ls") // a round trip while waiting for the request to run
		}

		denyStatus := statusFile("deny.json")
		deny := run([]*os.File{denyStatus}, "exec", "--session", "s", "--status-fd", "3", "--",
			"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "http://evil.test/")
		r := e.runCmd(e.limitCtx(runLimit), deny)
		if r.stdout != "403" || !strings.Contains(r.stderr, "gosbx: blocked by gosbx policy: host evil.test:80 not in network.allow") ||
			!strings.Contains(r.stderr, "(for a session, at its start: gosbx session stop NAME, then gosbx session start NAME with the flag)") {
			t.Errorf("denied request: want 403 and the denial on its stderr\n%v", r)
		}
		allowStatus := statusFile("allow.json")
		allow := run([]*os.File{allowStatus}, "exec", "--session", "s", "--status-fd", "3", "--",
			"curl", "-sS", fmt.Sprintf("http://pkg.test:%d/", hp))
		r = e.runCmd(e.limitCtx(runLimit), allow)
		if r.stdout != "ok-plain" || strings.Contains(r.stderr, "evil.test") {
			t.Errorf("allowed request\n%v", r)
		}
		job := run(nil, "exec", "--session", "s", "--detach", "--", "curl", "-sS", "http://evil2.test/")
		if out, err := job.CombinedOutput(); err != nil {
			t.Fatalf("detach: %v\n%s", err, out)
		}
		e.gosbx("job", "wait", "s/1")
		if r := e.gosbx("job", "logs", "s/1"); !strings.Contains(r.stdout, "blocked by gosbx policy: host evil2.test:80 not in network.allow") {
			t.Errorf("the job's log lacks its denial\n%v", r)
		}

		must(t, os.WriteFile(filepath.Join(e.ws, "done"), nil, 0o644))
		if err := quiet.Wait(); err != nil {
			t.Fatalf("quiet request: %v\n%s", err, quietErr.String())
		}
		if strings.Contains(quietErr.String(), "evil") {
			t.Errorf("another request's denial reached the quiet one's stderr:\n%s", quietErr.String())
		}
		checkEgressStatus(t, denyStatus.Name(), map[string]string{"deny evil.test": "network.allow"})
		checkEgressStatus(t, allowStatus.Name(), map[string]string{"allow pkg.test": "network.allow pkg.test:"})
		for name, f := range map[string]*os.File{"quiet": quietStatus, "deny": denyStatus, "allow": allowStatus} {
			b, _ := os.ReadFile(f.Name())
			lines := strings.Count(string(b), `"net"`)
			want := map[string]int{"quiet": 0, "deny": 1, "allow": 1}[name]
			if lines != want || name == "allow" && strings.Contains(string(b), "evil") {
				t.Errorf("%s request's status fd has %d net lines, want %d:\n%s", name, lines, want, b)
			}
		}
	})
}
