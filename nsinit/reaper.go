package nsinit

import (
	"os"

	"golang.org/x/sys/unix"
)

// reap is pid 1 of the sandbox once the command runs: it forwards signals to the
// command, reaps every zombie, and when the command ends reports its wait status and
// exits, which makes the kernel kill whatever else is left in the pid namespace
// (background jobs, daemons). It never returns.
func reap(w syncWriter, pid int) {
	for sig := range sigc {
		if sig != unix.SIGCHLD {
			unix.Kill(pid, sig.(unix.Signal))
			continue
		}
		for {
			var ws unix.WaitStatus
			got, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if got <= 0 || err != nil {
				break
			}
			if got == pid {
				w.send(message{Type: msgExit, Status: int(ws)})
				os.Exit(exitCode(ws))
			}
		}
	}
}

// exitCode maps a wait status as a shell does: the exit status, or 128+S for a signal.
func exitCode(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
