package pgtest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A test binary killed at its time limit (go test -timeout panics it)
// never runs Main's Stop: its cluster's server went on running, and its
// directory stayed, one per killed run. Each cluster's directory names the
// process that started it (ownerFile); Start first stops the servers and
// removes the directories of clusters whose process is gone.

// ownerFile, in a cluster's directory, names the process that started it:
// its PID and, where /proc tells it, its start time (a PID is reused).
const ownerFile = "owner"

// processID names process pid: "PID START", START its start time in clock
// ticks since boot (/proc/PID/stat), or "PID" where that cannot be read.
func processID(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		// The fields after the command's name, which may hold spaces and
		// parentheses, follow its last ')'.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 19 {
				return strconv.Itoa(pid) + " " + f[19] // starttime, field 22
			}
		}
	}
	return strconv.Itoa(pid)
}

// running reports whether the process an ownerFile names still runs. What
// cannot be read counts as running: a cluster is left alone unless its
// process is known to be gone.
func running(id string) bool {
	pidText, _, _ := strings.Cut(strings.TrimSpace(id), " ")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return true
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return true // no /proc: the PID alone, which runs
	}
	return processID(pid) == strings.TrimSpace(id)
}

// sweep stops the server and removes the directory of every cluster in
// tmp whose starting process is gone. It reports how many it removed.
func sweep(tmp string) int {
	dirs, _ := filepath.Glob(filepath.Join(tmp, "pgtest-*"))
	n := 0
	for _, dir := range dirs {
		id, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil || running(string(id)) {
			continue // not ours to judge (another user's, an older run's), or alive
		}
		stopOrphan(dir)
		if os.RemoveAll(dir) == nil {
			n++
		}
	}
	return n
}

// stopOrphan stops the server of the cluster in dir as a crash would
// (SIGQUIT: an immediate shutdown), when the process its postmaster.pid
// names is that cluster's server, and waits up to ten seconds for it.
func stopOrphan(dir string) {
	data := filepath.Join(dir, "data")
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 1 {
		return
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || !bytes.Contains(cmdline, []byte(data)) {
		return // not that server (gone, or a reused PID)
	}
	if syscall.Kill(pid, syscall.SIGQUIT) != nil {
		return
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			return
		}
	}
}
