package netguard

import (
	"encoding/json"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
)

// DefaultDaemonPort is the port `overseer serve` listens on unless it is
// given another address.
const DefaultDaemonPort = 7777

// daemonFile is the address file the daemon writes into Overseer's home
// (kernel.AddrFile; the guards cannot import the kernel).
const daemonFile = "daemon.json"

// selfRefresh is how long a read of the daemon's address file is trusted.
const selfRefresh = time.Second

// SelfAPI recognises requests that reach Overseer's own daemon, so that an
// agent cannot answer its own approvals, change the policy or stop a task
// through the API. A request reaches the daemon when:
//
//   - its host is this machine — loopback in any spelling (127.0.0.1,
//     127.1, 2130706433, 0x7f000001, 017700000001, ::1, [0:0:0:0:0:0:0:1],
//     ::ffff:127.0.0.1, localhost, localhost., *.localhost), the unspecified
//     address (0.0.0.0, 0, ::), the machine's host name or one of its
//     interface addresses, or the address the daemon listens on — and its
//     port is the daemon's (DefaultDaemonPort, or the one in
//     $OVERSEER_HOME/daemon.json); or
//   - its host is this machine and its path is one only Overseer serves for
//     answering, policy, audit, task aborts and snapshots
//     (/api/v1/approvals…, /api/v1/policy…, /api/v1/audit…,
//     /api/v1/tasks/ID/abort, /api/v1/actions/ID/keep), whatever the port:
//     a hook process may not know the port of every daemon.
//
// Other requests to this machine (a dev server on :3000) are not its
// business. The zero value and a nil *SelfAPI know only the default port.
// SelfAPI is safe for concurrent use.
type SelfAPI struct {
	home string

	mu      sync.Mutex
	checked time.Time
	mod     time.Time
	size    int64
	port    uint16     // from the address file, 0 when none
	addr    netip.Addr // the daemon's listen address, when numeric
	name    string     // … or name
	local   map[netip.Addr]bool
	names   map[string]bool
	loaded  bool
	nowFunc func() time.Time
}

// NewSelfAPI returns a SelfAPI that reads the daemon's address from
// home/daemon.json (re-read when the file changes, at most once a second).
// An empty home knows only the default port.
func NewSelfAPI(home string) *SelfAPI {
	return &SelfAPI{home: home}
}

// state refreshes what is known about this machine and the daemon.
func (s *SelfAPI) state() (ports [2]uint16, addr netip.Addr, name string, local map[netip.Addr]bool, names map[string]bool) {
	ports[0] = DefaultDaemonPort
	if s == nil {
		return ports, netip.Addr{}, "", nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.nowFunc != nil {
		now = s.nowFunc()
	}
	if !s.loaded {
		s.loaded = true
		s.local, s.names = machineAddrs()
	}
	if s.home != "" && (s.checked.IsZero() || now.Sub(s.checked) >= selfRefresh || now.Before(s.checked)) {
		s.checked = now
		s.readAddrFile()
	}
	ports[1] = s.port
	return ports, s.addr, s.name, s.local, s.names
}

// readAddrFile reads the daemon's address file when it changed.
func (s *SelfAPI) readAddrFile() {
	p := filepath.Join(s.home, daemonFile)
	fi, err := os.Stat(p)
	if err != nil {
		s.port, s.addr, s.name, s.mod, s.size = 0, netip.Addr{}, "", time.Time{}, 0
		return
	}
	if fi.ModTime().Equal(s.mod) && fi.Size() == s.size {
		return
	}
	s.mod, s.size = fi.ModTime(), fi.Size()
	s.port, s.addr, s.name = 0, netip.Addr{}, ""
	b, err := os.ReadFile(p)
	if err != nil || len(b) > 1<<16 {
		return
	}
	var info struct {
		Addr string `json:"addr"`
	}
	if json.Unmarshal(b, &info) != nil {
		return
	}
	host, port, err := net.SplitHostPort(info.Addr)
	if err != nil {
		return
	}
	if n, err := strconv.ParseUint(port, 10, 16); err == nil && n > 0 {
		s.port = uint16(n)
	}
	if a, ok := ParseHost(host); ok {
		s.addr = a.WithZone("").Unmap()
	} else if h, err := normalizeHost(host); err == nil {
		s.name = strings.TrimSuffix(h, ".")
	}
}

// machineAddrs returns this machine's interface addresses and names.
func machineAddrs() (map[netip.Addr]bool, map[string]bool) {
	local := map[netip.Addr]bool{}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if pfx, err := netip.ParsePrefix(a.String()); err == nil {
				local[pfx.Addr().WithZone("").Unmap()] = true
			}
		}
	}
	names := map[string]bool{}
	if h, err := os.Hostname(); err == nil && h != "" {
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		names[h] = true
		if short, _, ok := strings.Cut(h, "."); ok && short != "" {
			names[short] = true
		}
	}
	return local, names
}

// DaemonPort reports whether port is one the daemon listens on.
func (s *SelfAPI) DaemonPort(port uint16) bool {
	ports, _, _, _, _ := s.state()
	return port != 0 && (port == ports[0] || port == ports[1])
}

// Ports returns the daemon's ports as text ("7777" or "7777, 8080").
func (s *SelfAPI) Ports() string {
	ports, _, _, _, _ := s.state()
	out := strconv.Itoa(int(ports[0]))
	if ports[1] != 0 && ports[1] != ports[0] {
		out += ", " + strconv.Itoa(int(ports[1]))
	}
	return out
}

// LocalHost reports whether host (as written: a name, an address in any
// spelling ParseHost reads, bracketed or not, with a trailing dot) names
// this machine or the daemon's listen address. The empty host is this
// machine (HTTPie's ":7777/path").
func (s *SelfAPI) LocalHost(host string) bool {
	_, daddr, dname, local, names := s.state()
	h := strings.TrimSpace(host)
	if h == "" {
		return true
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if a, ok := ParseHost(h); ok {
		a = a.WithZone("").Unmap()
		return a.IsLoopback() || a.IsUnspecified() || local[a] || daddr.IsValid() && a == daddr
	}
	n, err := normalizeHost(h)
	if err != nil {
		return false
	}
	n = strings.TrimSuffix(n, ".")
	if refusedName(n) == "loopback" || names[n] || dname != "" && n == dname {
		return true
	}
	return false
}

// selfPaths are the API paths only Overseer serves that answer, change or
// read what a person controls. They are refused on any port of this
// machine.
var selfPaths = []string{"/api/v1/approvals", "/api/v1/policy", "/api/v1/audit", "/api/v1/grants", "/api/v1/rate-limits", "/api/v1/budget/caps", "/api/v1/budget/prices",
	// The controls of unattended hours: auto-rules (an auto_approve rule
	// is a self-approval) and anomaly rules.
	"/api/v1/auto-rules", "/api/v1/anomaly"}

// SelfPath reports whether an HTTP path (as written, percent-encoded or
// not) is one of the API paths only Overseer serves for answering, policy,
// audit, aborting tasks or keeping snapshots.
func SelfPath(p string) bool {
	if p == "" {
		return false
	}
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	p = path.Clean("/" + p)
	for _, sp := range selfPaths {
		if p == sp || strings.HasPrefix(p, sp+"/") {
			return true
		}
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(parts) == 5 && parts[0] == "api" && parts[1] == "v1" {
		switch {
		case parts[2] == "tasks" && parts[4] == "abort", parts[2] == "actions" && parts[4] == "keep",
			parts[2] == "agents" && (parts[4] == "resume" || parts[4] == "pause"):
			return true
		}
	}
	return false
}

// apiPath reports whether an HTTP path is under Overseer's /api/v1/.
func apiPath(p string) bool {
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	p = path.Clean("/" + p)
	return p == "/api/v1" || strings.HasPrefix(p, "/api/v1/")
}

// schemePorts are the default ports of the URL schemes a client may use to
// send bytes to a TCP port (gopher and telnet included: they send what the
// URL says, which can be an HTTP request).
var schemePorts = map[string]uint16{
	"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21, "gopher": 70,
	"telnet": 23, "dict": 2628, "tftp": 69, "ldap": 389, "smtp": 25, "imap": 143, "pop3": 110, "rtsp": 554,
}

// MatchURL reports why the URL raw reaches Overseer's daemon, or "" when it
// does not. With bare set, a URL without a scheme is read the way curl,
// wget and HTTPie read one: "localhost:7777/x" and ":7777/x" are http.
func (s *SelfAPI) MatchURL(raw string, bare bool) string {
	r := strings.TrimSpace(raw)
	if r == "" || len(r) > 8192 {
		return ""
	}
	scheme := "http"
	if i := strings.Index(r, "://"); i > 0 && validScheme(r[:i]) {
		scheme = strings.ToLower(r[:i])
	} else if strings.HasPrefix(r, "//") {
		r = "http:" + r
	} else if bare && !strings.HasPrefix(r, "-") && !strings.HasPrefix(r, "@") {
		r = "http://" + r
	} else {
		return ""
	}
	u, err := url.Parse(r)
	if err != nil || u.Host == "" && !strings.HasPrefix(r, "http://:") {
		return ""
	}
	host := u.Hostname()
	port := schemePorts[scheme]
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return ""
		}
		port = uint16(n)
	}
	if !s.LocalHost(host) {
		// A name is not resolved (a guard does not look names up), and
		// public names resolve to 127.0.0.1 (localtest.me, lvh.me,
		// 127.0.0.1.nip.io): a name at the daemon's port asking for
		// Overseer's API is taken as the daemon.
		if _, literal := ParseHost(strings.Trim(host, "[]")); !literal && host != "" && s.DaemonPort(port) && apiPath(u.EscapedPath()) {
			return u.Host + " is a name that may resolve to this machine, at the daemon's port (" + s.Ports() + "), and " + u.Path + " is Overseer's API"
		}
		return ""
	}
	where := u.Host
	if where == "" || where[0] == ':' {
		where = "localhost" + where
	}
	if s.DaemonPort(port) {
		return where + " is this machine at the daemon's port (" + s.Ports() + ")"
	}
	if p := u.EscapedPath(); SelfPath(p) {
		return where + " is this machine and " + u.Path + " is Overseer's API"
	}
	return ""
}

// MatchHostPort reports why a connection to host and port reaches the
// daemon, or "". port must be numeric.
func (s *SelfAPI) MatchHostPort(host, port string) string {
	n, err := strconv.ParseUint(strings.TrimSpace(port), 10, 16)
	if err != nil || !s.LocalHost(host) || !s.DaemonPort(uint16(n)) {
		return ""
	}
	if host == "" {
		host = "localhost"
	}
	return host + ":" + port + " is this machine at the daemon's port (" + s.Ports() + ")"
}

// validScheme reports whether s is a URL scheme (RFC 3986).
func validScheme(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// selfAPIFinding judges one URL an action sends a request to.
func (g *Guard) selfAPIFinding(raw string) (guard.Finding, bool) {
	why := g.self.MatchURL(raw, false)
	if why == "" {
		return guard.Finding{}, false
	}
	return guard.Finding{Check: "net.self-api", Level: action.Block, Hard: true,
		Message: "the request goes to Overseer's own API (" + why + "): an agent may not answer approvals, " +
			"change the policy or stop tasks; a person answers from the console, the TUI or a terminal " +
			"that is not the agent's"}, true
}

// Bounds of the walk over the arguments of actions that are not fetches.
const (
	selfArgsMaxStrings = 512
	selfArgsMaxDepth   = 8
)

// selfAPIArgs looks, in the arguments of an action of another kind (an
// MCP tool call, a file tool, …), for string values that are a single URL
// reaching Overseer's daemon. Shell commands are the shell guard's: it
// reads URLs in their context (an echo of a URL sends nothing).
func (g *Guard) selfAPIArgs(a *action.Action, kind action.Kind) []guard.Finding {
	if kind == action.KindShell || len(a.Args) == 0 {
		return nil
	}
	budget := selfArgsMaxStrings
	var found []guard.Finding
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if found != nil || budget <= 0 || depth > selfArgsMaxDepth {
			return
		}
		switch v := v.(type) {
		case string:
			budget--
			if !strings.Contains(v, "://") || strings.ContainsAny(strings.TrimSpace(v), " \t\r\n") {
				return
			}
			if f, ok := g.selfAPIFinding(v); ok {
				found = []guard.Finding{f}
			}
		case []any:
			for _, e := range v {
				walk(e, depth+1)
			}
		case []string:
			for _, e := range v {
				walk(e, depth+1)
			}
		case map[string]any:
			for _, e := range v {
				walk(e, depth+1)
			}
		}
	}
	walk(map[string]any(a.Args), 0)
	return found
}
