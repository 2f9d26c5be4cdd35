//go:build unix && !linux

package metrics

import "syscall"

// processFamilies are the process's series that need no /proc: its CPU
// time and its limit of open files.
func processFamilies() []*family {
	var fams []*family
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
		fams = append(fams, counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", cpu))
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		fams = append(fams, gauge("process_max_fds", "Maximum number of open file descriptors.", float64(lim.Cur)))
	}
	return fams
}
