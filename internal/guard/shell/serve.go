package shell

import (
	"net"
	"path"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
)

// Static file servers: python -m http.server, php -S, busybox httpd,
// ruby -run -e httpd. Each serves every file below its directory to
// whoever connects — a project's .env and .git among them. On the loopback
// interface that is this machine's own (a development preview): notify.
// On every interface (python's, busybox's and ruby's default) the files
// reach the network, and a directory that holds the home or a secret
// location serves the keys even on loopback (to the agent's own curl too):
// a person is asked.

// fileServer judges a server of dir on host ("" or a wildcard address:
// every interface). what names it in the findings.
func (a *analyzer) fileServer(what string, dir arg, host string) {
	if dir.dyn {
		a.add(guard.Finding{Check: "shell.serve-dynamic", Level: action.Confirm,
			Message: what + " serves a directory computed at run time: " + dir.val})
		return
	}
	a.candidate(dir, inRead, true)
	abs, known := a.abs(dir.val)
	switch {
	case !known || !path.IsAbs(abs):
		a.add(guard.Finding{Check: "shell.serve-secrets", Level: action.Confirm,
			Message: what + " serves " + dir.val + ", a directory whose place is not known"})
	case a.holdsSecrets(abs):
		a.add(guard.Finding{Check: "shell.serve-secrets", Level: action.Confirm,
			Message: what + " serves " + abs + ", which holds the home or secret files, and everything below it"})
	}
	if !loopbackHost(host) {
		where := "every interface"
		switch host {
		case "":
		case "?":
			where = "an address, or with options, not known"
		default:
			where = host
		}
		a.add(guard.Finding{Check: "shell.serve-network", Level: action.Confirm,
			Message: what + " serves " + dir.val + " and every file below it (a .env, .git) to the network, on " + where})
		return
	}
	a.class("dev", action.Notify, what+" on "+host)
}

// holdsSecrets reports whether serving dir serves a secret: dir is a
// secret location or inside one, the home or a directory above it, or a
// directory above a secret location named from the root (/etc/ssl/private).
func (a *analyzer) holdsSecrets(dir string) bool {
	if a.r.secret(dir) || dir == "/" {
		return true
	}
	if h := a.env.Home; h != "" && action.Within(dir, path.Clean(h)) {
		return true
	}
	for _, s := range a.r.secrets {
		if (s.kind == 'a' || s.kind == 'A') && action.Within(dir, s.text) {
			return true
		}
	}
	return false
}

// wildcardHost reports whether h is an address that means every
// interface.
func wildcardHost(h string) bool {
	h = strings.Trim(h, "[]")
	if h == "" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsUnspecified()
}

// serveHost returns the host a bind option names, "" for every
// interface; a loopback address other than the three loopbackHost knows
// (127.0.0.2) counts as loopback.
func serveHost(h string) string {
	h = strings.Trim(h, "[]")
	if wildcardHost(h) {
		return ""
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return "127.0.0.1"
	}
	return h
}

// pythonHTTPServer judges python -m http.server's arguments: [PORT]
// -b/--bind ADDR, -d/--directory DIR, -p/--protocol VERSION. --cgi runs
// the directory's CGI scripts for whoever connects; an option not known
// leaves the server judged as serving everything everywhere.
func (a *analyzer) pythonHTTPServer(args []arg) {
	dir := arg{val: "."}
	host, ports := "", 0
	for j := 0; j < len(args); j++ {
		x := args[j]
		v := x.val
		name, val, hasVal := strings.Cut(v, "=")
		if !strings.HasPrefix(v, "--") {
			name, hasVal = v, false
			if len(v) > 2 && v[0] == '-' && (v[1] == 'd' || v[1] == 'b' || v[1] == 'p') {
				name, val, hasVal = v[:2], v[2:], true
			}
		}
		value := func() (arg, bool) { return optionValue(args, &j, x, val, hasVal) }
		switch name {
		case "-d", "--directory":
			d, ok := value()
			if !ok {
				return
			}
			dir = d
		case "-b", "--bind":
			b, ok := value()
			if !ok || b.dyn {
				host = "?"
				continue
			}
			host = serveHost(b.val)
		case "-p", "--protocol":
			if _, ok := value(); !ok {
				return
			}
		case "--cgi":
			a.add(guard.Finding{Check: "shell.serve-network", Level: action.Confirm,
				Message: "http.server --cgi runs the directory's CGI scripts for whoever connects"})
		default:
			if x.dyn || strings.HasPrefix(v, "-") || !isDigits(v) || ports > 0 {
				host = "?" // not known: judged as the network
			}
			ports++
		}
	}
	a.fileServer("http.server", dir, host)
}

// phpServer judges php's built-in web server, php -S ADDR:PORT [-t
// DOCROOT] [ROUTER]: it runs the project's PHP files for each request, a
// development server like rails server, and serves the other files below
// DOCROOT as they are. It reports whether it judged the segment: any other
// option (-d, -c, which set what runs) leaves it to the interpreter's
// rules.
func (a *analyzer) phpServer(s *segCtx) bool {
	if set := phpCodeSetting(s.args); set != "" {
		a.add(guard.Finding{Check: "shell.inline-code", Level: action.Confirm,
			Message: "php -d " + set + " names code or a program php loads or runs besides its script"})
	}
	if len(s.args) < 2 || s.args[0].val != "-S" || s.args[1].dyn {
		// The server with other options first or after (php -n -S
		// 0.0.0.0:80, -S0.0.0.0:80, -S ADDR -d x=1): its address is still
		// judged; the interpreter's rules judge the rest.
		if addr, dir, ok := phpServerAddr(s.args); ok {
			host := "?"
			if h, _, err := net.SplitHostPort(addr.val); err == nil && !addr.dyn {
				host = serveHost(h)
			}
			a.fileServer("php -S", dir, host)
		}
		return false
	}
	addr := s.args[1].val
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	dir := arg{val: "."}
	var router *arg
	for j := 2; j < len(s.args); j++ {
		x := s.args[j]
		switch {
		case x.val == "-t" && j+1 < len(s.args):
			j++
			dir = s.args[j]
		case strings.HasPrefix(x.val, "-") || router != nil:
			// -d, -c, a second operand: the interpreter's rules judge
			// them, the address is judged here.
			_, d, _ := phpServerAddr(s.args)
			a.fileServer("php -S", d, serveHost(host))
			return false
		default:
			router = &s.args[j]
		}
	}
	if router != nil {
		if router.dyn {
			return false
		}
		p, known := a.abs(router.val)
		if w := a.where(p, known); w != whereTree {
			return false // a router from elsewhere: the interpreter's rules
		}
		a.interpScript(s, p)
	}
	a.fileServer("php -S", dir, serveHost(host))
	return true
}

// phpValueOpts are php's options that take a value.
var phpValueOpts = setOf("-c", "-d", "-f", "-r", "-B", "-R", "-F", "-E", "-z", "-t", "-S", "--php-ini", "--define",
	"--file", "--docroot", "--server", "--zend-extension")

// phpCodeSettings are php.ini settings that name code php runs besides
// its script: files prepended or appended to every script, extensions, a
// program mail() runs.
var phpCodeSettings = setOf("auto_prepend_file", "auto_append_file", "extension", "zend_extension", "extension_dir",
	"sendmail_path", "ffi.preload", "opcache.preload")

// phpCodeSetting returns the first -d/--define setting (or -z extension)
// among php's options that names code to run, "" when none.
func phpCodeSetting(args []arg) string {
	for j := 0; j < len(args); j++ {
		x := args[j]
		v := x.val
		if v == "--" || !x.dyn && !strings.HasPrefix(v, "-") {
			break
		}
		var set string
		switch {
		case v == "-d" || v == "--define" || v == "-z" || v == "--zend-extension":
			if j+1 >= len(args) {
				return ""
			}
			j++
			set = args[j].val
			if v == "-z" || v == "--zend-extension" {
				return "zend_extension=" + set
			}
		case strings.HasPrefix(v, "-d"):
			set = v[2:]
		case strings.HasPrefix(v, "--define="):
			set = v[len("--define="):]
		case strings.HasPrefix(v, "-z"):
			return "zend_extension=" + v[2:]
		case len(v) == 2 && phpValueOpts[v]:
			j++ // another option's value
			continue
		default:
			continue
		}
		name, _, _ := strings.Cut(set, "=")
		if phpCodeSettings[strings.ToLower(strings.TrimSpace(name))] || x.dyn || args[j].dyn {
			return set
		}
	}
	return ""
}

// phpServerAddr finds php's -S/--server option among the options before
// the script, and -t's document root ("." when none).
func phpServerAddr(args []arg) (addr, dir arg, ok bool) {
	dir = arg{val: "."}
	for j := 0; j < len(args); j++ {
		x := args[j]
		v := x.val
		if v == "--" || !x.dyn && !strings.HasPrefix(v, "-") {
			break
		}
		name, val, hasVal := strings.Cut(v, "=")
		if !strings.HasPrefix(v, "--") {
			name, val, hasVal = v, "", false
			if len(v) > 2 && phpValueOpts[v[:2]] {
				name, val, hasVal = v[:2], v[2:], true
			}
		}
		if !phpValueOpts[name] {
			continue
		}
		value := arg{val: val, dyn: x.dyn}
		if !hasVal {
			if j+1 >= len(args) {
				break
			}
			j++
			value = args[j]
		}
		switch name {
		case "-S", "--server":
			addr, ok = value, true
		case "-t", "--docroot":
			dir = value
		}
	}
	return addr, dir, ok
}

// rubyHTTPD judges ruby -run -e httpd [DIR] with --port/-p,
// --bind-address and the options that change nothing served; it reports
// whether it judged the segment.
func (a *analyzer) rubyHTTPD(s *segCtx) bool {
	if len(s.args) < 3 || s.args[0].val != "-run" || s.args[1].val != "-e" || s.args[2].val != "httpd" {
		return false
	}
	dir := arg{val: "."}
	host, dirs := "", 0
	for j := 3; j < len(s.args); j++ {
		x := s.args[j]
		if x.dyn && !strings.HasPrefix(x.val, "-") {
			dir = x
			dirs++
			continue
		}
		name, val, hasVal := strings.Cut(x.val, "=")
		switch {
		case x.dyn:
			return false
		case name == "--bind-address":
			if !hasVal {
				if j+1 >= len(s.args) || s.args[j+1].dyn {
					return false
				}
				j++
				val = s.args[j].val
			}
			host = serveHost(val)
		case name == "-p" || name == "--port" || name == "--max-clients" || name == "--request-timeout" ||
			name == "--http-version":
			if !hasVal {
				j++
			}
		case name == "--do-not-reverse-lookup":
		case strings.HasPrefix(x.val, "-"):
			return false // certificates, a temp dir: not known here
		default:
			dir = x
			dirs++
		}
	}
	if dirs > 1 {
		return false
	}
	a.fileServer("ruby httpd", dir, host)
	return true
}

// busyboxHTTPD judges busybox httpd -p [ADDR:]PORT -h DIR (with -f, -v):
// it serves DIR (else the working directory) and runs the scripts below
// its cgi-bin for whoever asks; it reports whether it judged the segment.
// Apache's httpd, of the same name, is not busybox's: only a segment
// reached through busybox is judged.
func (a *analyzer) busyboxHTTPD(s *segCtx) bool {
	w := a.out.Segments[s.idx].Wrappers
	if len(w) == 0 || w[len(w)-1] != "busybox" {
		return false
	}
	dir := arg{val: "."}
	host := ""
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		if x.dyn {
			return false
		}
		switch x.val {
		case "-f", "-v", "-vv":
		case "-p", "-h":
			if j+1 >= len(s.args) || s.args[j+1].dyn && x.val == "-p" {
				return false
			}
			j++
			if x.val == "-h" {
				dir = s.args[j]
				continue
			}
			if h, _, err := net.SplitHostPort(s.args[j].val); err == nil {
				host = serveHost(h)
			} else if !isDigits(s.args[j].val) {
				return false
			}
		default:
			return false // -c (a configuration), -u, -r, -i, -e, -d, -m
		}
	}
	if !dir.dyn {
		if p, known := a.abs(path.Join(dir.val, "cgi-bin")); known && a.exists(p) {
			return false // its scripts run for whoever asks
		}
	}
	a.fileServer("busybox httpd", dir, host)
	return true
}

// nodeServe judges the serve package's arguments (npx serve [DIR] -l
// URI): it listens on port 3000 of every interface unless -l names a
// loopback address (tcp://127.0.0.1:3000, tcp://localhost:3000); a
// serve.json in the directory (which may follow links out of it, or serve
// another directory), a configuration file, symbolic links followed (-S)
// or an option not known leave it judged as serving everything everywhere.
func (a *analyzer) nodeServe(args []arg) {
	dir := arg{val: "."}
	host, known, dirs := "", true, 0
	listens := 0
	for j := 0; j < len(args); j++ {
		x := args[j]
		name, val, hasVal := strings.Cut(x.val, "=")
		switch {
		case x.dyn && !strings.HasPrefix(x.val, "-"):
			dir = x
			dirs++
		case x.dyn:
			known = false
		case name == "-l" || name == "--listen" || name == "-p" || name == "--port":
			if !hasVal {
				if j+1 >= len(args) || args[j+1].dyn {
					known = false
					continue
				}
				j++
				val = args[j].val
			}
			listens++
			switch {
			case isDigits(val):
				host = ""
			case strings.HasPrefix(val, "tcp://"):
				h, _, err := net.SplitHostPort(strings.TrimPrefix(val, "tcp://"))
				if err != nil {
					known = false
				}
				host = serveHost(h)
			default:
				known = false // a socket or a form not known
			}
		case name == "-s" || name == "--single" || name == "-n" || name == "--no-clipboard" || name == "-C" ||
			name == "--cors" || name == "-L" || name == "--no-request-logging" || name == "-u" || name == "--no-compression" ||
			name == "--no-etag" || name == "-d" || name == "--debug" || name == "--no-port-switching":
		case strings.HasPrefix(x.val, "-"):
			known = false // -c, -S/--symlinks, --ssl-*
		default:
			dir = x
			dirs++
		}
	}
	if dirs > 1 || listens > 1 {
		known = false
	}
	if !dir.dyn {
		if p, ok := a.abs(path.Join(dir.val, "serve.json")); !ok || a.exists(p) {
			known = false
		}
	}
	if !known {
		host = "?"
	}
	a.fileServer("serve", dir, host)
}
