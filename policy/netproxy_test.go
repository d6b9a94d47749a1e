package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gosbx/gosbx/nsinit/config"
)

func TestProxyEnvPorts(t *testing.T) {
	if httpProxy != fmt.Sprintf("http://127.0.0.1:%d", config.EgressHTTPPort) ||
		socksProxy != fmt.Sprintf("socks5h://127.0.0.1:%d", config.EgressSOCKSPort) {
		t.Errorf("proxy URLs %s, %s do not name the init's ports", httpProxy, socksProxy)
	}
}

// The capture ports are those name rules and loopback address rules give, once each,
// but 80, 443, the proxy's own, the host ports and the forwards' ports inside.
func TestCapturePorts(t *testing.T) {
	got := capturePorts(Network{Mode: NetProxy,
		Allow: []string{"a.example:8443", "b.example", "*.c.example:9000", "10.0.0.5:7000", "d.example:*", "e.example:8443", "f.example:3128", "g.example:5432", "h.example:8000", "i.example:80",
			"127.0.0.1:18080", "127.0.0.1", "127.0.0.1:*", "[::1]:18081", "127.0.0.1:8443", "127.0.0.1:5432"},
		HostPorts: []uint16{5432}, Publish: []string{"9999:8000"}})
	// loopback address rules' ports after the names', once each (18080 was the trial's)
	if want := []uint16{8443, 9000, 18080, 18081}; !slices.Equal(got, want) {
		t.Errorf("capture ports %v, want %v", got, want)
	}
}

func TestNetProxy(t *testing.T) {
	ws := canonTempDir(t)
	h := fakeHost(ws)
	for _, tc := range []struct {
		name   string
		pol    *Policy
		opts   Options
		err    string
		allow  []string
		egress bool
	}{
		{name: "none", opts: Options{}},
		{name: "flag", opts: Options{Net: NetProxy, AllowHosts: []string{"pypi.org"}}, allow: []string{"pypi.org"}, egress: true},
		{name: "allow-host implies proxy", opts: Options{AllowHosts: []string{"*.example.com:8443"}}, allow: []string{"*.example.com:8443"}, egress: true},
		{name: "policy and flag", pol: &Policy{Network: Network{Mode: NetProxy, Allow: []string{"a.example"}, Deny: []string{"b.example"}}},
			opts: Options{AllowHosts: []string{"c.example"}}, allow: []string{"a.example", "c.example"}, egress: true},
		{name: "with none", opts: Options{Net: NetNone, AllowHosts: []string{"pypi.org"}}, err: "--allow-host needs --net proxy"},
		{name: "with host", opts: Options{Net: NetHost, AllowHosts: []string{"pypi.org"}}, err: "--allow-host needs --net proxy"},
		{name: "bad pattern", opts: Options{AllowHosts: []string{"*"}}, err: "host pattern"},
		{name: "unknown mode", opts: Options{Net: "vpn"}, err: "want none, host or proxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.Policy = tc.pol
			o.Args = []string{"true"}
			o.Workspace = ws
			spec, err := Compile(o, h)
			if err == nil {
				{
					if (spec.Egress != nil) != tc.egress {
						t.Fatalf("egress %+v, want set=%v", spec.Egress, tc.egress)
					}
					if spec.Egress != nil {
						if !slices.Equal(spec.Egress.Allow, tc.allow) {
							t.Errorf("allow %v, want %v", spec.Egress.Allow, tc.allow)
						}
						if !slices.Contains(spec.Process.Env, "HTTPS_PROXY="+httpProxy) || !slices.Contains(spec.Process.Env, "NODE_USE_ENV_PROXY=1") {
							t.Errorf("env %v", spec.Process.Env)
						}
						if err := spec.Validate(); err != nil {
							t.Error(err)
						}
					} else if slices.ContainsFunc(spec.Process.Env, func(s string) bool { return strings.Contains(s, "PROXY") }) {
						t.Errorf("proxy variables without proxy mode: %v", spec.Process.Env)
					}
				}
			}
			if tc.err == "" && err != nil {
				t.Fatal(err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
}

func TestParsePublish(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want config.Publish
		err  bool
	}{
		{in: "8000:8000", want: config.Publish{HostIP: "127.0.0.1", HostPort: 8000, Port: 8000}},
		{in: "127.0.0.1:8080:3000", want: config.Publish{HostIP: "127.0.0.1", HostPort: 8080, Port: 3000}},
		{in: "0.0.0.0:80:8000", want: config.Publish{HostIP: "0.0.0.0", HostPort: 80, Port: 8000}},
		{in: "[::1]:8080:80", want: config.Publish{HostIP: "::1", HostPort: 8080, Port: 80}},
		{in: "8000", err: true},
		{in: "0:8000", err: true},
		{in: "8000:70000", err: true},
		{in: "host:8000:80", err: true},
		{in: "[fe80::1%eth0]:8000:80", err: true},
	} {
		got, err := ParsePublish([]string{tc.in})
		if tc.err {
			if err == nil {
				t.Errorf("%q: %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || len(got) != 1 || got[0] != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	ws := canonTempDir(t)
	if _, err := Compile(Options{Args: []string{"true"}, Workspace: ws, Net: NetHost, Publish: []string{"8000:8000"}}, fakeHost(ws)); err == nil ||
		!strings.Contains(err.Error(), "--publish needs a network namespace") {
		t.Errorf("--publish with --net host: %v", err)
	}
	spec, err := Compile(Options{Args: []string{"true"}, Workspace: ws, Publish: []string{"8000:8000"}}, fakeHost(ws))
	if err != nil || len(spec.Publish) != 1 || spec.Egress != nil {
		t.Errorf("--publish alone: %+v, %v", spec, err)
	}
}
