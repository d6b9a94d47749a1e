package policy

import (
	"testing"
)

// build's offline switches are set only in network mode none without host ports: a
// network the caller opened (--net proxy --allow-host, --net host, --host-port: attack
// review 26) is the package managers' to use; --publish alone is inbound only. A
// policy's own set value, or a variable the caller passes, is kept in every mode.
func TestOfflineVariablesFollowTheNetwork(t *testing.T) {
	ws := canonTempDir(t)
	h := fakeHost(ws)
	h.Environ = append(h.Environ, "GOPROXY=http://127.0.0.1:9/goproxy", "PIP_INDEX_URL=http://127.0.0.1:9/simple")
	offline := []string{"GOPROXY", "CARGO_NET_OFFLINE", "PIP_NO_INDEX", "npm_config_offline"}
	build, _ := Builtin("build")
	for _, tc := range []struct {
		name    string
		o       Options
		present bool
	}{
		{"none", Options{}, true},
		{"net none", Options{Net: NetNone}, true},
		{"proxy", Options{AllowHosts: []string{"127.0.0.1:9"}}, false},
		{"host", Options{Net: NetHost}, false},
		// a host port reaches a host's loopback service (a local package index)
		{"net none, host port", Options{Net: NetNone, HostPorts: []uint16{18080}}, false},
		// a published port is inbound only
		{"net none, publish", Options{Net: NetNone, Publish: []string{"18081:8080"}}, true},
	} {
		o := tc.o
		o.Policy, o.Workspace = build, ws
		env := envMap(t, mustCompile(t, o, h).Process.Env)
		for _, k := range offline {
			if _, ok := env[k]; ok != tc.present {
				t.Errorf("%s: %s set %v (%q); want %v", tc.name, k, ok, env[k], tc.present)
			}
		}
		if env["GOFLAGS"] != "-mod=mod" {
			t.Errorf("%s: GOFLAGS=%q; want build's set value in every mode", tc.name, env["GOFLAGS"])
		}
	}

	// the caller's own value, passed: wins over the offline one, and is there with a network
	for _, net := range []string{NetNone, NetHost} {
		env := envMap(t, mustCompile(t, Options{Policy: build, Workspace: ws, Net: net, PassEnv: []string{"GOPROXY"}}, h).Process.Env)
		if env["GOPROXY"] != "http://127.0.0.1:9/goproxy" {
			t.Errorf("--net %s --pass-env GOPROXY: GOPROXY=%q; want the caller's", net, env["GOPROXY"])
		}
	}

	// a policy file that sets them itself keeps them with a network
	own := mustParse(t, "extends: build\nenvironment:\n  set:\n    PIP_NO_INDEX: \"1\"\n")
	env := envMap(t, mustCompile(t, Options{Policy: own, Workspace: ws, Net: NetHost}, h).Process.Env)
	if env["PIP_NO_INDEX"] != "1" {
		t.Errorf("a policy's own PIP_NO_INDEX under --net host: %q; want 1", env["PIP_NO_INDEX"])
	}
	if _, ok := env["GOPROXY"]; ok {
		t.Errorf("GOPROXY=%q under --net host; only the policy's own PIP_NO_INDEX should be kept", env["GOPROXY"])
	}
	// and a file's offline: section is as build's, merged
	file := mustParse(t, "extends: build\nenvironment:\n  offline:\n    MY_OFFLINE: \"${uid}\"\n")
	env = envMap(t, mustCompile(t, Options{Policy: file, Workspace: ws}, h).Process.Env)
	if env["MY_OFFLINE"] != "1234" || env["GOPROXY"] != "off" {
		t.Errorf("offline merged: MY_OFFLINE=%q GOPROXY=%q; want 1234 and off", env["MY_OFFLINE"], env["GOPROXY"])
	}
	if _, err := Parse([]byte("environment:\n  offline:\n    \"A=B\": x\n"), "bad.yaml"); err == nil {
		t.Error("a bad variable name in environment.offline was accepted")
	}
}
