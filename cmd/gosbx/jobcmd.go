package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/session"
	"github.com/gosbx/gosbx/nsinit"
)

func newJobCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "job",
		Short: "Detached commands of a session (exec --session NAME --detach): ls, wait, kill, logs",
	}
	var asJSON, follow bool
	var sig string
	ls := &cobra.Command{
		Use:   "ls SESSION",
		Short: "List a session's jobs: id, state, exit status, command",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			fd, err := dialSession(args[0])
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			if err := session.WriteFrame(fd, session.ReqJobs, nil, nil); err != nil {
				return &opFailure{err}
			}
			kind, b, _, err := session.ReadFrame(fd, 0)
			if err != nil || kind != session.RepInfo {
				return &opFailure{fmt.Errorf("session %q did not answer: %v", args[0], err)}
			}
			if asJSON {
				fmt.Fprintln(c.OutOrStdout(), string(b))
				return nil
			}
			var jobs []session.Job
			if err := json.Unmarshal(b, &jobs); err != nil {
				return err
			}
			w := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tSTATE\tEXIT\tPID\tCOMMAND")
			for _, j := range jobs {
				exit := "-"
				if j.ExitCode != nil {
					exit = strconv.Itoa(*j.ExitCode)
				}
				fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%s\n", j.ID, j.State, exit, j.Pid, strings.Join(j.Args, " "))
			}
			return w.Flush()
		},
	}
	ls.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	var statusFd string
	wait := &cobra.Command{
		Use:   "wait [--status-fd N] SESSION/ID",
		Short: "Wait for a job to end; exit with its status (gosbx exec's rules); --status-fd N: its exit status line",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if statusFd == "" {
				return jobCall(args[0], session.ReqJobWait, []uint64{0}, nil)
			}
			status, err := openStatusFd(statusFd)
			if err != nil {
				return usageError{err}
			}
			return jobCall(args[0], session.ReqJobWait, []uint64{uint64(status.Fd()) + 1}, status)
		},
	}
	wait.Flags().StringVar(&statusFd, "status-fd", "", "write the job's exit status line to file descriptor `N` (as exec --status-fd writes it; exec --session --detach --status-fd gets its start lines)")
	kill := &cobra.Command{
		Use:   "kill [--signal S] SESSION/ID",
		Short: "Signal a job's whole process group (default SIGTERM)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			n, err := parseSignal(sig)
			if err != nil {
				return usageError{err}
			}
			return jobCall(args[0], session.ReqJobKill, []uint64{n}, nil)
		},
	}
	kill.Flags().StringVarP(&sig, "signal", "s", "TERM", "the signal `S`: a name (TERM, SIGKILL) or a number")
	logs := &cobra.Command{
		Use:   "logs [-f] SESSION/ID",
		Short: "Print a job's output (its log: the last 1-2 MiB); -f follows it until the job ends",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			f := uint64(0)
			if follow {
				f = 1
			}
			return jobCall(args[0], session.ReqJobLogs, []uint64{f}, nil)
		},
	}
	logs.Flags().BoolVarP(&follow, "follow", "f", false, "follow the log until the job ends")
	c.AddCommand(ls, wait, kill, logs)
	return c
}

// parseSignal reads a signal name (TERM, SIGTERM) or number.
func parseSignal(s string) (uint64, error) {
	if n, err := strconv.ParseUint(s, 10, 8); err == nil && n > 0 && n < 65 {
		return n, nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if n := unix.SignalNum(name); n != 0 {
		return uint64(n), nil
	}
	return 0, fmt.Errorf("--signal %q: not a signal name or number", s)
}

func dialSession(name string) (int, error) {
	if err := session.CheckName(name); err != nil {
		return -1, usageError{err}
	}
	dir, err := session.Dir()
	if err != nil {
		return -1, &opFailure{err}
	}
	fd, err := session.Dial(session.FilesOf(dir, name).Sock)
	if err != nil {
		return -1, &opFailure{noSession(dir, name, err)}
	}
	return fd, nil
}

// jobCall sends a job request for ref (SESSION/ID) with the job id and args (and
// status, job wait's --status-fd, for the supervisor's check), prints the log data and
// messages it gets, writes the status lines it gets to status, and exits with the
// status it gets.
func jobCall(ref string, kind byte, args []uint64, status *os.File) error {
	name, idText, ok := strings.Cut(ref, "/")
	id, err := strconv.ParseUint(idText, 10, 32)
	if !ok || err != nil {
		return usageError{fmt.Errorf("%q: want SESSION/ID (the id exec --detach printed)", ref)}
	}
	fd, err := dialSession(name)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var fds []int
	if status != nil {
		fds = []int{int(status.Fd())}
	}
	if err := session.WriteFrame(fd, kind, session.EncodeUints(append([]uint64{id}, args...)...), fds); err != nil {
		return &opFailure{err}
	}
	for {
		k, b, _, err := session.ReadFrame(fd, 0)
		if err != nil {
			return &opFailure{fmt.Errorf("session %q ended before it answered: %w", name, err)}
		}
		switch k {
		case session.RepData:
			os.Stdout.Write(b)
		case session.RepMessage:
			os.Stderr.Write(b)
		case session.RepEvent:
			if status != nil {
				status.Write(append(b, '\n'))
			}
		case session.RepExit:
			code, err := session.DecodeUint(b)
			if err != nil || code > 255 {
				code = nsinit.ExitSetup
			}
			if code != 0 {
				return statusError(int(code))
			}
			return nil
		}
	}
}
