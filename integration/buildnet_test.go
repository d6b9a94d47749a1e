package integration

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// build with a network the caller opened: pip installs from the index it was allowed
// (--net proxy --allow-host 127.0.0.1:P), the wheel lands in the workspace on the host,
// and none of build's offline switches is set; so with --host-port P (the host's index at
// the sandbox's own 127.0.0.1:P); without a network they are, and the same
// download fails. A regression would be build's PIP_NO_INDEX=1 under --allow-host
// (pip: "No matching distribution … (from versions: none)").
func TestBuildProfileNetworkIndex(t *testing.T) {
	requireBinary(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skipf("python3: %v", err)
	}
	if out, err := exec.Command("python3", "-m", "pip", "--version").CombinedOutput(); err != nil {
		t.Skipf("python3 -m pip: %v %s", err, out)
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		root := filepath.Join(s.base, "srv")
		toolsTree(t, root)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		srv := &http.Server{Handler: http.FileServer(http.Dir(root))}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		port := l.Addr().(*net.TCPAddr).Port
		script := `d=$1; shift
echo "VARS[${GOPROXY-unset},${PIP_NO_INDEX-unset},${CARGO_NET_OFFLINE-unset},${npm_config_offline-unset}]"
python3 -m pip download --disable-pip-version-check --no-deps --index-url "$1" -d "$d" demo==1.0`
		index := fmt.Sprintf("http://127.0.0.1:%d/simple/", port)
		got := filepath.Join(s.ws, "dl-net", "demo-1.0-py3-none-any.whl")
		r := s.run("--policy", "build", "--allow-host", fmt.Sprintf("127.0.0.1:%d", port), "--", shellPath, "-c", script, "_", filepath.Dir(got), index)
		mustSucceed(t, r, "build --allow-host: pip download from the allowed index")
		if !strings.Contains(r.stdout, "VARS[unset,unset,unset,unset]") {
			t.Errorf("build --allow-host: an offline variable is set:\n%v", r)
		}
		if _, err := os.Stat(got); err != nil {
			t.Errorf("build --allow-host: no wheel on the host: %v\n%v", err, r)
		}

		// a host port (attack review 26): the host's loopback index is reached at the
		// sandbox's own 127.0.0.1:P, so the switches are not set and pip uses it
		got = filepath.Join(s.ws, "dl-hostport", "demo-1.0-py3-none-any.whl")
		r = s.run("--policy", "build", "--host-port", fmt.Sprint(port), "--", shellPath, "-c", script, "_", filepath.Dir(got), index)
		mustSucceed(t, r, "build --host-port: pip download from the host's index")
		if !strings.Contains(r.stdout, "VARS[unset,unset,unset,unset]") {
			t.Errorf("build --host-port: an offline variable is set:\n%v", r)
		}
		if _, err := os.Stat(got); err != nil {
			t.Errorf("build --host-port: no wheel on the host: %v\n%v", err, r)
		}

		// no network: the switches are set, and pip does not look at the index
		none := filepath.Join(s.ws, "dl-none")
		r = s.run("--policy", "build", "--", shellPath, "-c", script, "_", none, index)
		if r.code == 0 || !strings.Contains(r.stdout, "VARS[off,1,true,true]") {
			t.Errorf("build without a network: want the offline variables set and pip failing:\n%v", r)
		}
		if ents, _ := os.ReadDir(none); len(ents) > 0 {
			t.Errorf("build without a network downloaded %v", ents)
		}
	})
}
