package shell

// The development loop of a web project: restarting the dev server the
// session started, and reading the project's own SQLite dev database. The
// general rules (kill: confirm; sqlite3: confirm for a read) stay for
// everything these narrow cases do not prove harmless.

import (
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard/tracked"
)

// devServerNames are programs that serve a project while it is developed:
// `pkill -f NAME` of one of them stops dev servers, never Overseer (whose
// processes are named overseer, which signalEffects blocks) or the agent.
var devServerNames = map[string]bool{
	"vite": true, "next dev": true, "nodemon": true, "webpack serve": true, "webpack-dev-server": true,
	"tsx watch": true, "ts-node-dev": true, "react-scripts start": true, "astro dev": true, "nuxt dev": true,
	"remix dev": true, "storybook": true, "uvicorn": true, "flask run": true, "manage.py runserver": true,
	"rails server": true, "http.server": true,
}

// servicePorts are local ports where something other than a project's dev
// server usually listens or is connected to: databases (Overseer's shared
// database among them), container and cluster APIs, browsers' debugging
// ports, notebooks.
var servicePorts = map[int]bool{
	2375: true, 2376: true, 3306: true, 5432: true, 5672: true, 6379: true, 6443: true, 8001: true,
	8888: true, 9200: true, 9222: true, 11211: true, 27017: true,
}

// signalFlag reports whether v only chooses a signal (-9, -TERM, -s KILL
// given as two words is handled by the caller).
func signalFlag(v string) bool {
	if !strings.HasPrefix(v, "-") || len(v) < 2 {
		return false
	}
	s := strings.TrimPrefix(strings.ToUpper(v[1:]), "SIG")
	switch s {
	case "9", "15", "2", "1", "TERM", "KILL", "INT", "HUP", "QUIT":
		return true
	}
	return false
}

// devKill judges kill and pkill forms that only stop a development server
// the session started: `kill %1` (a job of the agent's own shell),
// `lsof -ti:PORT | xargs kill` of a dev port (not Overseer's, not a
// service's, not an ephemeral one) and `pkill -f vite` of a dev server's
// name. It reports whether it judged the segment.
func (a *analyzer) devKill(s *segCtx) bool {
	for _, x := range s.args {
		if x.dyn || x.glob {
			return false
		}
	}
	switch s.name {
	case "kill":
		if s.c.origin == OriginXargs {
			return a.killPortListeners(s)
		}
		jobs := 0
		for j := 0; j < len(s.args); j++ {
			v := s.args[j].val
			switch {
			case v == "-s" && j+1 < len(s.args) && signalFlag("-"+s.args[j+1].val):
				j++
			case signalFlag(v):
			case jobSpec(v):
				jobs++
			default:
				return false
			}
		}
		if jobs == 0 {
			return false
		}
		a.class("dev-stop", action.Notify, "kill "+clip(joinVals(s.args), 40))
		return true
	case "pkill":
		pattern := ""
		for _, x := range s.args {
			switch {
			case x.val == "-f" || signalFlag(x.val):
			case pattern == "" && !strings.HasPrefix(x.val, "-"):
				pattern = x.val
			default:
				return false
			}
		}
		if !devServerNames[pattern] || selfMatches(pattern) {
			return false
		}
		a.class("dev-stop", action.Notify, "pkill "+pattern)
		return true
	}
	return false
}

// selfMatches reports whether a pkill -f pattern (a plain name) is in the
// command line or the executable's path of the process judging it:
// Overseer's daemon, whose path the person chose (~/vite-tools/overseer).
func selfMatches(pattern string) bool {
	exe, err := os.Executable()
	if err != nil {
		return true
	}
	return strings.Contains(exe, pattern) || strings.Contains(strings.Join(os.Args, " "), pattern)
}

// jobSpec reports whether v names a job of the shell: %1, %+, %-, %%.
func jobSpec(v string) bool {
	r, ok := strings.CutPrefix(v, "%")
	return ok && (r == "+" || r == "-" || r == "%" || (r != "" && isDigits(r)))
}

// killPortListeners judges `lsof -ti:PORT | xargs kill`, the whole command:
// the processes with a socket on one literal dev port get a signal.
func (a *analyzer) killPortListeners(s *segCtx) bool {
	if s.idx != 2 || len(a.out.Segments) < 3 {
		return false
	}
	x, l := a.out.Segments[1], a.out.Segments[0]
	// xargs gets no options of its own: its arguments are the kill.
	if x.Name != "xargs" || l.Name != "lsof" || l.Dynamic || x.Dynamic || len(x.Args) != len(s.args)+1 || x.Args[0] != "kill" {
		return false
	}
	for _, v := range s.args {
		if !signalFlag(v.val) {
			return false
		}
	}
	port, terse := 0, false
	for _, v := range l.Args {
		switch {
		case v == "-t":
			terse = true
		case v == "-sTCP:LISTEN" || v == "-n" || v == "-P":
		case strings.HasPrefix(v, "-ti:") || strings.HasPrefix(v, "-i:") || strings.HasPrefix(v, "-ti") || strings.HasPrefix(v, "-i"):
			if port != 0 {
				return false
			}
			terse = terse || strings.HasPrefix(v, "-t")
			spec := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(v, "-t"), "-"), "i")
			spec = strings.TrimPrefix(strings.TrimPrefix(spec, "tcp"), ":")
			n, err := strconv.Atoi(spec)
			if err != nil || spec == "" || !isDigits(spec) {
				return false
			}
			port = n
		default:
			return false
		}
	}
	// Ephemeral ports are the local ends of every client connection,
	// Overseer's hooks' among them.
	if !terse || port < 1024 || port >= 32768 || servicePorts[port] || a.self().DaemonPort(uint16(port)) || overseerOnPort(port) {
		return false
	}
	a.class("dev-stop", action.Notify, "kill of the processes on port "+strconv.Itoa(port))
	return true
}

// projectSQLite returns the SQLite database file a sqlite3 command opens
// when it is an existing SQLite file inside the agent's working tree
// (links followed), and "" otherwise.
func (a *analyzer) projectSQLite(s *segCtx) string {
	ops := operandsOf(s.args, "-cmd", "-init", "-separator", "-newline", "-nullvalue", "-A")
	if len(ops) == 0 || a.env.Cwd == "" || !a.cwdKnown {
		return ""
	}
	for _, x := range s.args {
		switch x.val {
		case "-cmd", "-init", "-A", "-archive", "-zip", "-deserialize", "-unsafe-testing", "-safe":
			return "" // more than a plain database file
		}
	}
	db := ops[0]
	if db.dyn || db.glob || db.val == "" || strings.HasPrefix(db.val, "file:") || strings.HasPrefix(db.val, "-") ||
		strings.Contains(db.val, "?") || db.val == ":memory:" {
		return ""
	}
	p, ok := a.abs(db.val)
	if !ok || strings.HasPrefix(p, "~") || !path.IsAbs(p) {
		return ""
	}
	rfs, ok := a.fileSystem().(fs.ReadLinkFS)
	if !ok {
		return ""
	}
	real, ok := resolveDots(rfs, p, 0)
	root, ok2 := resolveDots(rfs, path.Clean(a.env.Cwd), 0)
	if !ok || !ok2 || !action.Within(root, real) || a.r.secret(real) {
		return ""
	}
	f, _, ok := a.openRegular(fsName(real))
	if !ok {
		return ""
	}
	defer f.Close()
	head := make([]byte, 16)
	if _, err := io.ReadFull(f, head); err != nil || string(head) != "SQLite format 3\x00" {
		return ""
	}
	// The shell reads ~/.sqliterc before anything else: with one, the
	// session runs commands the guard has not seen.
	if a.env.Home == "" || a.fileExists(path.Join(a.env.Home, ".sqliterc")) ||
		a.fileExists(path.Join(a.env.Home, ".config", "sqlite3", "sqliterc")) {
		return ""
	}
	return real
}

// sqliteFileFuncs are the functions of the sqlite3 shell (and its usual
// extensions) that reach outside the database: files, extensions, an
// editor, other archives.
var sqliteFileFuncs = []string{"readfile", "writefile", "edit", "fsdir", "load_extension", "zipfile", "sqlar_",
	"lsmode", "shell_", "sha3_query", "attach", "vacuum", "dbstat"}

// sqliteStaysInside reports whether read-only SQL text (as sqlWrites
// judged it) also stays inside the database: no function that reads files,
// loads code or attaches another database.
func sqliteStaysInside(sql string) bool {
	l := strings.ToLower(sql)
	for _, f := range sqliteFileFuncs {
		if strings.Contains(l, f) {
			return false
		}
	}
	return true
}

// registerDevLoop adds the handlers of this file.
func registerDevLoop() {
	handlers["kill"] = (*analyzer).devKill
	handlers["pkill"] = (*analyzer).devKill
}

// templateCopy marks the write of `cp .env.example .env` as a copy of a
// template: cp without options, one literal source in the working tree
// that git tracks, and the write fact made by this cp (facts is the number
// of facts before it). A file written by anything else in the command is
// not marked (pathFact clears the mark).
func (a *analyzer) templateCopy(s *segCtx, sources []arg, dest arg, facts int) {
	if s.name != "cp" || len(s.args) != 2 || len(sources) != 1 || sources[0].dyn || sources[0].glob || dest.dyn || dest.glob {
		return
	}
	src, ok1 := a.abs(sources[0].val)
	dst, ok2 := a.abs(dest.val)
	if !ok1 || !ok2 || !path.IsAbs(src) || !path.IsAbs(dst) || a.where(dst, true) != whereTree || !action.EnvTemplate(src, dst) {
		return
	}
	if r := tracked.Find(a.fileSystem(), src, 2); r.Total != 1 || !r.Complete || r.Repo == "" {
		return
	}
	for i := facts; i < len(a.out.Paths); i++ {
		if f := &a.out.Paths[i]; f.Path == dst && f.Intent == action.PathWrite {
			f.Template = src
		}
	}
}

// curlValueOpts are curl's options that take a value, as far as a send to
// the dev server uses them; any other option (a proxy, --resolve,
// --connect-to, -L, -K, -T, -F, --unix-socket …) leaves the send to the
// rules.
var curlValueOpts = setOf("-d", "--data", "--data-raw", "--data-binary", "--data-ascii", "--json", "-H", "--header",
	"-X", "--request", "-o", "--output", "-w", "--write-out", "-m", "--max-time", "--connect-timeout")

// curlPlainFlags are curl's flags that change nothing about where data
// goes.
var curlPlainFlags = setOf("-s", "-S", "-i", "-v", "-f", "-sS", "-si", "-fsS", "-sf", "-fs", "-Ss", "-is", "-sv",
	"--silent", "--show-error", "--fail", "--include", "--verbose", "--compressed", "-g", "--globoff")

// localDevSend reports whether a curl command only sends literal data to
// the project's own dev server: one URL on localhost, 127.0.0.1 or [::1]
// with a port the project's files declare (its package.json, compose file,
// env template or Vite config), no file or standard input as the body, no
// option that sends it anywhere else (proxies, --resolve, --connect-to,
// following redirects), a method that is not DELETE, and a port that is not
// Overseer's or a service's.
func (a *analyzer) localDevSend(s *segCtx) bool {
	if s.name != "curl" || a.env.Cwd == "" {
		return false
	}
	url, sends := "", false
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		if x.dyn || x.glob {
			return false
		}
		v := x.val
		switch {
		case curlPlainFlags[v]:
		case curlValueOpts[v]:
			if j+1 >= len(s.args) || s.args[j+1].dyn {
				return false
			}
			val := s.args[j+1].val
			sends = sends || v != "-H" && v != "--header" && v != "-w" && v != "--write-out" && v != "-m" &&
				v != "--max-time" && v != "--connect-timeout"
			if strings.HasPrefix(val, "@") {
				return false // a file or standard input: -d @f, -H @f
			}
			switch v {
			case "-X", "--request":
				switch strings.ToUpper(val) {
				case "GET", "POST", "PUT", "PATCH", "HEAD":
				default:
					return false
				}
			case "-o", "--output":
				return false // a write, judged by the rules
			}
			j++
		case strings.HasPrefix(v, "-"):
			return false
		case url != "":
			return false
		default:
			url = v
		}
	}
	if !sends {
		return false // a plain GET: the rules' class
	}
	port, ok := localURLPort(url)
	if !ok || port < 1024 || port >= 32768 || servicePorts[port] || a.self().DaemonPort(uint16(port)) {
		return false
	}
	// curl reads ~/.curlrc first: a proxy or --resolve there sends the
	// data elsewhere.
	if a.env.Home == "" || a.fileExists(path.Join(a.env.Home, ".curlrc")) ||
		a.fileExists(path.Join(a.env.Home, ".config", ".curlrc")) || a.fileExists(path.Join(a.env.Home, ".config", "curlrc")) {
		return false
	}
	return a.projectDeclaresPort(port)
}

// localURLPort returns the port of an http URL on the loopback host
// (scheme optional), without user information.
func localURLPort(u string) (int, bool) {
	rest := u
	if r, ok := strings.CutPrefix(rest, "http://"); ok {
		rest = r
	} else if r, ok := strings.CutPrefix(rest, "https://"); ok {
		rest = r
	} else if strings.Contains(rest, "://") {
		return 0, false
	}
	host := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		host = rest[:i]
	}
	if strings.ContainsAny(host, "@%\\") {
		return 0, false
	}
	var name, port string
	if strings.HasPrefix(host, "[") {
		end := strings.Index(host, "]:")
		if end < 0 {
			return 0, false
		}
		name, port = host[1:end], host[end+2:]
	} else {
		var ok bool
		name, port, ok = strings.Cut(host, ":")
		if !ok {
			return 0, false
		}
	}
	switch strings.ToLower(name) {
	case "localhost", "127.0.0.1", "::1":
	default:
		return 0, false
	}
	if !isDigits(port) || len(port) > 5 {
		return 0, false
	}
	n, err := strconv.Atoi(port)
	return n, err == nil
}

// devPortFiles are the files of a project, relative to its root or to a
// workspace package one level down, that name its dev servers' ports.
var devPortFiles = []string{"package.json", ".env.example", ".env.sample", "docker-compose.yml", "docker-compose.yaml",
	"compose.yml", "compose.yaml", "vite.config.ts", "vite.config.js", "vite.config.mjs", "Procfile"}

// projectDeclaresPort reports whether one of the project's devPortFiles
// names port as a number of its own.
func (a *analyzer) projectDeclaresPort(port int) bool {
	root := path.Clean(a.env.Cwd)
	dirs := []string{root}
	if entries, err := fs.ReadDir(a.fileSystem(), fsName(root)); err == nil {
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && e.Name() != "node_modules" && len(dirs) < 32 {
				dirs = append(dirs, path.Join(root, e.Name()))
			}
		}
	}
	want := strconv.Itoa(port)
	for _, d := range dirs {
		for _, f := range devPortFiles {
			b, ok := a.readRegular(fsName(path.Join(d, f)), 256<<10)
			if !ok {
				continue
			}
			text := string(b)
			for i := strings.Index(text, want); i >= 0; {
				end := i + len(want)
				if (i == 0 || !isDigitByte(text[i-1])) && (end == len(text) || !isDigitByte(text[end])) {
					return true
				}
				j := strings.Index(text[end:], want)
				if j < 0 {
					break
				}
				i = end + j
			}
		}
	}
	return false
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

// overseerOnPort reports whether a process running Overseer's own binary
// (the daemon, a hook, an MCP proxy) has a socket whose local or remote
// port is port: lsof -ti:PORT lists it, and the kill would switch
// Overseer off. What cannot be read counts as yes.
func overseerOnPort(port int) bool {
	inodes := map[string]bool{}
	seen := false
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp", "/proc/net/udp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		seen = true
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 10 {
				continue
			}
			for _, addr := range fields[1:3] {
				if i := strings.LastIndexByte(addr, ':'); i >= 0 {
					if p, err := strconv.ParseUint(addr[i+1:], 16, 16); err == nil && int(p) == port {
						inodes["socket:["+fields[9]+"]"] = true
					}
				}
			}
		}
	}
	if !seen {
		return true
	}
	if len(inodes) == 0 {
		return false
	}
	self, err := os.Executable()
	if err != nil {
		return true
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, p := range procs {
		if !isDigits(p.Name()) {
			continue
		}
		dir := "/proc/" + p.Name()
		if exe, err := os.Readlink(dir + "/exe"); err != nil || strings.TrimSuffix(exe, " (deleted)") != self {
			continue
		}
		fds, err := os.ReadDir(dir + "/fd")
		if err != nil {
			return true
		}
		for _, fd := range fds {
			if l, err := os.Readlink(dir + "/fd/" + fd.Name()); err == nil && inodes[l] {
				return true
			}
		}
	}
	return false
}
