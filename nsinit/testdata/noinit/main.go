// Command noinit links nsinit but does not call nsinit.Init first in main, as a
// forgetful program would: re-executed as the init, it runs its own main again (here it
// only exits). TestInitNotCalled builds and runs it.
package main

import (
	"fmt"
	"os"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/nsinit/config"
)

func main() {
	if len(os.Args) > 0 && os.Args[0] == nsinit.InitArg {
		os.Exit(0) // the program's own work, whatever it is, instead of the init's
	}
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	spec := &config.Config{
		Process: &specs.Process{Args: []string{"/bin/true"}, User: specs.User{UID: uid, GID: gid}, Cwd: "/"},
		Linux: &config.Linux{
			Namespaces:  []specs.LinuxNamespace{{Type: specs.UserNamespace}, {Type: specs.MountNamespace}, {Type: specs.PIDNamespace}},
			UIDMappings: []specs.LinuxIDMapping{{ContainerID: uid, HostID: uid, Size: 1}},
			GIDMappings: []specs.LinuxIDMapping{{ContainerID: gid, HostID: gid, Size: 1}},
		},
	}
	fmt.Println(nsinit.Command(spec).Run())
}
