package metrics

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// userHZ is the kernel's clock tick for /proc times (100 on every Linux
// the official client supports; it assumes the same).
const userHZ = 100

// processFamilies are the process's series, as the official client's
// process collector names them, read from /proc. A file that cannot be
// read leaves its series out.
func processFamilies() []*family {
	var fams []*family
	if st, err := os.ReadFile("/proc/self/stat"); err == nil {
		// The fields after the command name, which is in parentheses and
		// may hold anything: field 3 of proc(5) is f[0].
		s := string(st)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			f := strings.Fields(s[i+1:])
			num := func(n int) float64 {
				if n-3 >= len(f) {
					return 0
				}
				v, _ := strconv.ParseFloat(f[n-3], 64)
				return v
			}
			fams = append(fams,
				counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", (num(14)+num(15))/userHZ),
				gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", num(23)),
				gauge("process_resident_memory_bytes", "Resident memory size in bytes.", num(24)*float64(os.Getpagesize())))
			if bt, ok := bootTime(); ok {
				fams = append(fams, gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", bt+num(22)/userHZ))
			}
		}
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		fams = append(fams, gauge("process_open_fds", "Number of open file descriptors.", float64(len(ents))))
	}
	if lim, err := os.ReadFile("/proc/self/limits"); err == nil {
		if v, ok := softLimit(string(lim), "Max open files"); ok {
			fams = append(fams, gauge("process_max_fds", "Maximum number of open file descriptors.", v))
		}
		if v, ok := softLimit(string(lim), "Max address space"); ok {
			fams = append(fams, gauge("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", v))
		}
	}
	if ns, err := os.ReadFile("/proc/self/net/netstat"); err == nil {
		in, out := ipExt(string(ns))
		fams = append(fams,
			counter("process_network_receive_bytes_total", "Number of bytes received by the process over the network.", in),
			counter("process_network_transmit_bytes_total", "Number of bytes sent by the process over the network.", out))
	}
	return fams
}

// bootTime reads the system's boot time (btime in /proc/stat).
func bootTime() (float64, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return n, err == nil
		}
	}
	return 0, false
}

// softLimit reads a soft limit from /proc/self/limits; "unlimited" is the
// largest uint64, as the official client reports it.
func softLimit(limits, name string) (float64, bool) {
	for _, line := range strings.Split(limits, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		if f[0] == "unlimited" {
			return 18446744073709551615, true
		}
		v, err := strconv.ParseFloat(f[0], 64)
		return v, err == nil
	}
	return 0, false
}

// ipExt reads InOctets and OutOctets of the IpExt lines of
// /proc/self/net/netstat (a line of names, then a line of values).
func ipExt(netstat string) (in, out float64) {
	lines := strings.Split(netstat, "\n")
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "IpExt:") || !strings.HasPrefix(lines[i+1], "IpExt:") {
			continue
		}
		names, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		for j := 1; j < len(names) && j < len(vals); j++ {
			v, _ := strconv.ParseFloat(vals[j], 64)
			switch names[j] {
			case "InOctets":
				in = v
			case "OutOctets":
				out = v
			}
		}
		return in, out
	}
	return 0, 0
}
