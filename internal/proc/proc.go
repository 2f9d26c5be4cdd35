// Package proc identifies processes of this host, so that a daemon can tell
// whether a process that asked it something still runs.
//
// A process is named by its pid and its start time (the kernel's count of
// clock ticks since boot when it started): a pid reused by a later process
// has another start time. Pids mean something only on the host and in the
// pid namespace where they were read; Host names those, and a check of a
// process from another host answers "cannot tell" rather than "gone".
//
// It reads Linux's /proc; elsewhere every answer is "cannot tell", and the
// callers fall back to what they can check otherwise (deadlines, polls).
package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/overseer-dev/overseer/internal/smallfile"
)

// Identity names a process: its pid, its start time and where both are
// meaningful.
type Identity struct {
	PID   int
	Start string
	Host  string
}

// Self returns this process's identity; ok is false where it cannot be read.
func Self() (Identity, bool) { return Of(os.Getpid()) }

// Parent returns the identity of this process's parent.
func Parent() (Identity, bool) { return Of(os.Getppid()) }

// Of returns the identity of process pid on this host.
func Of(pid int) (Identity, bool) {
	host := Host()
	if host == "" || pid <= 0 {
		return Identity{}, false
	}
	st, err := readStat(pid)
	if err != nil || st.gone() {
		return Identity{}, false
	}
	return Identity{PID: pid, Start: st.start, Host: host}, true
}

// State is what a check found out about a process.
type State int

const (
	// Unknown: the process cannot be checked from here (another host or
	// pid namespace, no /proc, a read error). Callers must not treat it as
	// gone.
	Unknown State = iota
	// Running: the process named by the pid and start time runs.
	Running
	// Gone: it exited (or is a zombie waiting to be reaped), or its pid
	// now belongs to another process.
	Gone
)

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Gone:
		return "gone"
	}
	return "unknown"
}

// Check tells whether the process id names still runs.
func Check(id Identity) State {
	if id.PID <= 0 || id.Host == "" || id.Host != Host() {
		return Unknown
	}
	st, err := readStat(id.PID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Gone
	case err != nil:
		return Unknown
	case st.gone():
		return Gone
	case id.Start != "" && st.start != id.Start:
		return Gone // the pid was reused
	}
	return Running
}

var (
	hostOnce sync.Once
	host     string
)

// Host names where pids read here are meaningful: this boot of this
// machine's kernel and this process's pid namespace. It is "" where it
// cannot be told (not Linux).
func Host() string {
	hostOnce.Do(func() {
		boot, err := smallfile.Read("/proc/sys/kernel/random/boot_id")
		if err != nil {
			return
		}
		ns, err := os.Readlink("/proc/self/ns/pid")
		if err != nil {
			return
		}
		host = strings.TrimSpace(string(boot)) + "/" + ns
	})
	return host
}

// stat is what /proc/PID/stat says of a process.
type stat struct {
	state string // R, S, D, Z, X, …
	start string // clock ticks after boot
}

// gone reports a zombie or dead process: it has exited, and only waits to
// be reaped.
func (s stat) gone() bool { return s.state == "Z" || s.state == "X" || s.state == "x" }

func readStat(pid int) (stat, error) {
	b, err := smallfile.Read("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	return parseStat(string(b))
}

// parseStat reads the state (field 3) and start time (field 22) of a
// /proc/PID/stat line. The command name (field 2) is in parentheses and
// may hold spaces and parentheses itself, so fields are counted from the
// last ')'.
func parseStat(line string) (stat, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("proc: malformed stat %q", line)
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 {
		return stat{}, fmt.Errorf("proc: short stat %q", line)
	}
	if _, err := strconv.ParseUint(f[19], 10, 64); err != nil {
		return stat{}, fmt.Errorf("proc: bad start time in %q", line)
	}
	return stat{state: f[0], start: f[19]}, nil
}
