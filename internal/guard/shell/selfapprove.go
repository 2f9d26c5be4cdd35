package shell

import (
	"debug/buildinfo"
	_ "embed"
	"io"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/netguard"
	"github.com/overseer-dev/overseer/internal/lazyre"
)

// No self-approval. An agent must not reach Overseer's own API (to answer
// its approvals, change the policy, abort a task) nor run the overseer
// commands that do the same. Both are hard `block` findings:
//
//   - shell.self-api: a network client whose URL, HOST:PORT or host and
//     port operands reach the daemon — loopback in any spelling, this
//     machine's names and addresses, the daemon's own listen address — at
//     the daemon's port, or at any port with an API path only Overseer
//     serves (see netguard.SelfAPI); inline interpreter code with such a URL
//     or a socket to the daemon's port; bash's /dev/tcp redirections.
//   - shell.self-approve: every `overseer` sub-command that is not on the
//     allow-list of selfapi.yaml (approve, deny, policy changes, init,
//     serve, hook, grant, agent promote, …), by name, by path, through
//     wrappers, or as `go run …/cmd/overseer`.
//
// The lists are data (selfapi.yaml), not policy: a policy cannot loosen
// them.

//go:embed selfapi.yaml
var selfAPIYAML []byte

// selfLists is selfapi.yaml.
type selfLists struct {
	// OverseerAllowed are the sub-commands of the overseer CLI an agent
	// may run: "any" (a string) or the words allowed as their first
	// operand (a list, "" for none).
	OverseerAllowed map[string]any `yaml:"overseer_allowed"`
	HTTPClients     []string       `yaml:"http_clients"`
	URLClients      []string       `yaml:"url_clients"`
	SocketClients   []string       `yaml:"socket_clients"`
}

type selfSets struct {
	http, socket, shorthand, url set
	// allowed maps a sub-command an agent may run to the first operands
	// allowed after it; nil: any.
	allowed map[string]set
}

// selfRules are the lists of selfapi.yaml (built into the binary as Go
// code, selfapi_gen.go: see embedded.go), made into sets on first use (not
// at start-up).
var selfRules = sync.OnceValue(func() selfSets {
	l := selfListsValue()
	allowed := map[string]set{}
	for sub, v := range l.OverseerAllowed {
		switch v := v.(type) {
		case string:
			if v != "any" {
				panic("shell: selfapi.yaml: overseer_allowed." + sub + ": want any or a list")
			}
			allowed[strings.ToLower(sub)] = nil
		case []any:
			words := make([]string, 0, len(v))
			for _, w := range v {
				ws, ok := w.(string)
				if !ok {
					panic("shell: selfapi.yaml: overseer_allowed." + sub + ": a word that is not a string")
				}
				words = append(words, ws)
			}
			allowed[strings.ToLower(sub)] = makeSet(words, true)
		default:
			panic("shell: selfapi.yaml: overseer_allowed." + sub + ": want any or a list")
		}
	}
	return selfSets{
		allowed:   allowed,
		http:      makeSet(l.HTTPClients, true),
		socket:    makeSet(l.SocketClients, true),
		url:       makeSet(l.URLClients, true),
		shorthand: makeSet([]string{"http", "https", "httpie", "xh", "xhs", "curlie"}, true),
	}
})

// defaultSelfAPI knows the daemon's default port only.
var defaultSelfAPI = netguard.NewSelfAPI("")

func (a *analyzer) self() *netguard.SelfAPI {
	if a.env.SelfAPI != nil {
		return a.env.SelfAPI
	}
	return defaultSelfAPI
}

// selfAdvice ends every self-protection message.
const selfAdvice = "an agent may not answer its own approvals, change Overseer's policy or remove its hooks; " +
	"a person answers from the web console, `overseer tui` or a terminal that is not the agent's"

// selfCheck is the hook classify calls for every segment.
func (a *analyzer) selfCheck(s *segCtx) {
	name := s.name
	if name != "overseer" && name != "overseer-hook" {
		// A copy of Overseer's binary under another name (./ov) is
		// Overseer: the guard judges the file the command runs, not its
		// name.
		if n := a.overseerBinary(s.prog); n != "" {
			name = n
		}
	}
	if name == maybeOverseer {
		a.maybeOverseerCmd(s)
		return
	}
	switch {
	case name == "overseer":
		a.overseerCmd(s.args, s.prog.val, s.c.extraDyn)
	case name == "overseer-hook":
		// The lean hook entry does nothing but the hook (and hands calls to
		// `overseer hook`): any run of it from a shell feeds it a forged event.
		a.selfApprove("runs `" + s.prog.val + "` (Overseer's hook) from the agent's shell: the agent's CLI runs the hook itself, " +
			"an event fed to it from a shell is forged (it would spend grants, record false conflicts and mark changed files as read)")
	case name == "go":
		if rest, prog, ok := goRunOverseer(s.args); ok {
			a.overseerCmd(rest, prog, s.c.extraDyn)
		}
	}
	switch {
	case selfRules().http.has(name) || selfRules().socket.has(name) || a.r.downloaders.has(name) || a.r.netSenders.has(name):
		a.selfNetArgs(s)
	case a.interpreter(name) != nil:
		a.selfCode(s)
	case selfRules().url.has(name):
		// git ls-remote URL, pip install URL: a URL operand is fetched.
		for _, x := range s.args {
			if x.dyn || !strings.Contains(x.val, "://") {
				continue
			}
			if why := a.self().MatchURL(x.val, false); why != "" {
				a.selfAPIFinding(name + " " + clip(x.val, 80) + " (" + why + ")")
				return
			}
		}
	}
}

// maybeOverseer stands in ovCopies for a file the command copies or links
// from a path not known until it runs: it may be Overseer's CLI.
const maybeOverseer = "?"

// maybeOverseerCopy records that the command puts at p a copy or link of a
// file whose path is computed when it runs, unless p is already known as
// a copy of Overseer's.
func (a *analyzer) maybeOverseerCopy(p string) {
	if _, ok := a.ovCopies[p]; ok {
		return
	}
	if a.ovCopies == nil {
		a.ovCopies = map[string]string{}
	}
	a.ovCopies[p] = maybeOverseer
}

// maybeOverseerCmd judges a run of a program the same command copied or
// linked from a computed path (cp "$(command -v overseer)" ./ov && ./ov
// approve …): the guard cannot tell whether it is Overseer's CLI, whose
// refusal under an agent the agent can escape (a detached run without its
// environment markers). Its arguments are judged as Overseer's, and what
// the allow-list refuses Overseer reaches a person instead of being
// blocked: a program copied from a computed path and run at once is rare
// in ordinary work, and a person sees what it is.
func (a *analyzer) maybeOverseerCmd(s *segCtx) {
	n := len(a.out.Findings)
	a.overseerCmd(s.args, s.prog.val, s.c.extraDyn)
	for i := n; i < len(a.out.Findings); i++ {
		f := &a.out.Findings[i]
		if f.Check != "shell.self-approve" {
			continue
		}
		f.Check, f.Level, f.Hard = "shell.maybe-overseer", action.Confirm, false
		f.Message = "runs `" + s.prog.val + "`, which this command copies or links from a path it computes when it runs: " +
			"if that is Overseer's CLI, the agent would answer for a person (" + f.Message + ")"
	}
}

// overseerCmd judges the arguments of the overseer CLI against the
// allow-list of selfapi.yaml: a sub-command (or its first operand) not on
// it is `block`.
func (a *analyzer) overseerCmd(args []arg, prog string, extraDyn bool) {
	sub, i := overseerOperand(args, 0)
	if i < 0 && extraDyn {
		// xargs appends the sub-command at run time.
		a.selfApprove("runs `" + prog + "` with a sub-command computed at run time (arguments xargs appends)")
		return
	}
	if i < 0 {
		return // `overseer`, `overseer --help`: prints
	}
	if sub.dyn {
		a.selfApprove("runs `" + prog + "` with a sub-command computed at run time (" + sub.val + ")")
		return
	}
	label := "overseer " + sub.val
	next, ok := selfRules().allowed[strings.ToLower(sub.val)]
	switch {
	case !ok && strings.EqualFold(sub.val, "hook"):
		a.selfApprove("runs `" + label + "` from the agent's shell: the agent's CLI runs the hook itself, " +
			"an event fed to it from a shell is forged (it would spend grants, record false conflicts and mark changed files as read)")
		return
	case !ok:
		a.selfApprove("runs `" + label + "`, which an agent may not run")
		return
	case next == nil:
		return
	}
	// The first word after the sub-command that is not an option names
	// what it does; options are skipped whatever they are (a value read as
	// an operand only makes this stricter).
	var op *arg
	for j := i + 1; j < len(args); j++ {
		if args[j].dyn || !strings.HasPrefix(args[j].val, "-") {
			op = &args[j]
			break
		}
		if args[j].val == "--" {
			if j+1 < len(args) {
				op = &args[j+1]
			}
			break
		}
	}
	switch {
	case op == nil && next.has(""):
		return
	case op == nil:
		a.selfApprove("runs `" + label + "`, which an agent may not run")
	case op.dyn:
		a.selfApprove("runs `" + label + "` with a sub-command computed at run time (" + op.val + ")")
	case !next.has(strings.ToLower(op.val)):
		a.selfApprove("runs `" + label + " " + op.val + "`, which an agent may not run")
	}
}

func (a *analyzer) selfApprove(what string) {
	a.add(guard.Finding{Check: "shell.self-approve", Level: action.Block, Hard: true,
		Message: what + ": " + selfAdvice})
}

// overseerOperand returns the first operand of the overseer CLI at or after
// args[from], skipping its global options, and its index (-1: none).
func overseerOperand(args []arg, from int) (arg, int) {
	for i := from; i < len(args); i++ {
		x := args[i]
		if x.dyn {
			return x, i
		}
		switch v := x.val; {
		case v == "--home" || v == "--policy":
			i++
		case v == "--":
			if i+1 < len(args) {
				return args[i+1], i + 1
			}
			return arg{}, -1
		case strings.HasPrefix(v, "-"):
		default:
			return x, i
		}
	}
	return arg{}, -1
}

// goRunValueFlags are the `go run` build flags that take a value.
var goRunValueFlags = map[string]bool{"-tags": true, "-ldflags": true, "-gcflags": true, "-asmflags": true,
	"-mod": true, "-modfile": true, "-o": true, "-p": true, "-exec": true, "-overlay": true, "-pgo": true,
	"-toolexec": true, "-C": true, "-coverpkg": true, "-covermode": true, "-buildmode": true, "-compiler": true,
	"-gccgoflags": true, "-installsuffix": true, "-pkgdir": true, "-buildvcs": true}

// goRunOverseer recognises `go run [flags] …/cmd/overseer[@v] args…` and
// returns the program's arguments.
func goRunOverseer(args []arg) ([]arg, string, bool) {
	if len(args) < 2 || args[0].dyn || args[0].val != "run" {
		return nil, "", false
	}
	for i := 1; i < len(args); i++ {
		x := args[i]
		if x.dyn {
			return nil, "", false
		}
		v := x.val
		if strings.HasPrefix(v, "-") {
			if goRunValueFlags[v] {
				i++
			}
			continue
		}
		pkg, _, _ := strings.Cut(v, "@")
		if path.Base(strings.TrimSuffix(pkg, "/")) == "overseer" && !strings.HasSuffix(pkg, ".go") {
			return args[i+1:], "go run " + v, true
		}
		return nil, "", false
	}
	return nil, "", false
}

func (a *analyzer) selfAPIFinding(what string) {
	a.add(guard.Finding{Check: "shell.self-api", Level: action.Block, Hard: true,
		Message: what + ": it reaches Overseer's own API; " + selfAdvice})
}

// selfNetArgs judges the arguments of a network client.
func (a *analyzer) selfNetArgs(s *segCtx) {
	sa := a.self()
	name := s.name
	bare := selfRules().http.has(name)
	socket := selfRules().socket.has(name)
	var localHost, daemonPort, localMention bool
	var selfPathURL string
	for _, x := range a.selfNetWords(s) {
		v := x.val
		if x.dyn {
			if why := dynURL(sa, v); why != "" {
				a.selfAPIFinding(name + " " + clip(v, 80) + " (" + why + ")")
				return
			}
			continue
		}
		cands := []string{v}
		if i := strings.LastIndexByte(v, '='); i >= 0 && i+1 < len(v) {
			cands = append(cands, v[i+1:])
		}
		if name == "curl" && strings.ContainsAny(v, "{[") && !hasFlag(s.args, "-g") && !hasFlag(s.args, "--globoff") {
			cands = append(cands, curlGlob(v, 32)...) // curl's own URL globbing
		}
		for _, c := range cands {
			isOpt := strings.HasPrefix(c, "-")
			if why := sa.MatchURL(c, bare && !isOpt); why != "" {
				a.selfAPIFinding(name + " " + clip(v, 80) + " (" + why + ")")
				return
			}
			if u := urlPath(c, bare && !isOpt); u != "" && netguard.SelfPath(u) {
				selfPathURL = c
			}
			if isOpt {
				continue
			}
			// HOST:PORT forms (socat TCP:h:p, curl --resolve/--connect-to,
			// openssl -connect h:p).
			if strings.Contains(c, "://") {
				continue
			}
			parts := splitHostPort(c)
			var hostHere, portHere bool
			for _, p := range parts {
				switch {
				case p != "" && !isDigits(p) && sa.LocalHost(p):
					hostHere = true
				case isDigits(p) && len(p) <= 5 && sa.DaemonPort(parsePort(p)):
					portHere = true
				}
			}
			if len(parts) > 1 && hostHere && portHere {
				a.selfAPIFinding(name + " " + clip(v, 80) + " (this machine at the daemon's port)")
				return
			}
			if len(parts) > 1 && hostHere {
				localMention = true
			}
			if socket {
				switch {
				case isDigits(c) && len(c) <= 5 && sa.DaemonPort(parsePort(c)):
					daemonPort = true
				case !isDigits(c) && sa.LocalHost(c) || c == "0":
					localHost = true
				}
			}
		}
	}
	switch {
	case socket && localHost && daemonPort:
		a.selfAPIFinding(describeArgs(name, s.args) + " (a connection to this machine at the daemon's port, " + sa.Ports() + ")")
	case localMention && selfPathURL != "":
		a.selfAPIFinding(name + " " + clip(selfPathURL, 80) + " (routed to this machine, and the path is Overseer's API)")
	}
}

// selfNetWords returns the arguments of a network client with the URLs it
// reads from files: curl -K FILE (url = "…" lines, or options), wget -i
// FILE (a URL a line). The files are read as the command leaves them
// (written earlier in it) or from the file system.
func (a *analyzer) selfNetWords(s *segCtx) []arg {
	var opts []string
	switch s.name {
	case "curl":
		opts = []string{"-K", "--config"}
	case "wget", "wget2":
		opts = []string{"-i", "--input-file"}
	default:
		return s.args
	}
	out := s.args
	for j, x := range s.args {
		var f arg
		switch {
		case slices.Contains(opts, x.val) && j+1 < len(s.args):
			f = s.args[j+1]
		case strings.HasPrefix(x.val, opts[1]+"="):
			f = arg{val: strings.TrimPrefix(x.val, opts[1]+"="), dyn: x.dyn}
		default:
			continue
		}
		if f.dyn || f.val == "-" {
			continue
		}
		p, ok := a.abs(f.val)
		if !ok {
			continue
		}
		rf := a.contentOf(p, s.idx)
		if rf.state != fileOK {
			continue
		}
		for _, line := range strings.Split(rf.text, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || line[0] == '#' {
				continue
			}
			if s.name == "curl" {
				k, v, _ := strings.Cut(line, "=")
				if sp := strings.IndexAny(line, " \t:"); sp >= 0 && (sp < len(k) || !strings.Contains(line, "=")) {
					k, v = line[:sp], strings.TrimLeft(line[sp:], " \t:=")
				}
				k = strings.TrimLeft(strings.TrimSpace(k), "-")
				v = strings.Trim(strings.TrimSpace(v), `"'`)
				if k == "url" {
					out = append(out, arg{val: v})
					continue
				}
				if strings.Contains(v, "://") {
					out = append(out, arg{val: v})
				}
				continue
			}
			out = append(out, arg{val: line})
		}
	}
	return out
}

// curlGlob expands curl's URL globbing ({a,b}, [1-3], [a-c]) in v, at
// most limit URLs.
func curlGlob(v string, limit int) []string {
	i := strings.IndexAny(v, "{[")
	if i < 0 || limit <= 0 {
		return []string{v}
	}
	var alts []string
	if v[i] == '{' {
		j := strings.IndexByte(v[i:], '}')
		if j < 0 {
			return []string{v}
		}
		alts = strings.Split(v[i+1:i+j], ",")
		v = v[:i] + "\x00" + v[i+j+1:]
	} else {
		j := strings.IndexByte(v[i:], ']')
		if j < 0 {
			return []string{v}
		}
		lo, hi, ok := strings.Cut(v[i+1:i+j], "-")
		hi, _, _ = strings.Cut(hi, ":") // [1-9:2]: a step
		if !ok {
			return []string{v}
		}
		if a, err := strconv.Atoi(lo); err == nil {
			b, err := strconv.Atoi(hi)
			if err != nil || b < a {
				return []string{v}
			}
			for n := a; n <= b && len(alts) < limit; n++ {
				alts = append(alts, strconv.Itoa(n))
			}
		} else if len(lo) == 1 && len(hi) == 1 && lo[0] <= hi[0] {
			for c := lo[0]; c <= hi[0] && len(alts) < limit; c++ {
				alts = append(alts, string(c))
			}
		}
		v = v[:i] + "\x00" + v[i+j+1:]
	}
	var out []string
	for _, alt := range alts {
		for _, u := range curlGlob(strings.Replace(v, "\x00", alt, 1), limit-len(out)) {
			out = append(out, u)
			if len(out) >= limit {
				return out
			}
		}
	}
	return out
}

// urlPath returns the path of a URL (read as a client would), or "".
func urlPath(raw string, bare bool) string {
	i := strings.Index(raw, "://")
	switch {
	case i > 0:
		raw = raw[i+3:]
	case bare:
	default:
		return ""
	}
	j := strings.IndexByte(raw, '/')
	if j < 0 {
		return ""
	}
	return raw[j:]
}

// splitHostPort splits "a:b:[::1]:c" into its parts, keeping bracketed
// IPv6 addresses whole and dropping socat's ",options".
func splitHostPort(s string) []string {
	if i := strings.IndexByte(s, ','); i >= 0 {
		s = s[:i]
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s = s[:i]
	}
	var parts []string
	start, depth := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ':':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

func parsePort(s string) uint16 {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
		if n > 65535 {
			return 0
		}
	}
	return uint16(n)
}

// substRe matches the parts of a word's source text that are computed at
// run time.
var substRe = lazyre.New(`\$\{[^}]*\}|\$\([^)]*\)|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]|` + "`[^`]*`")

// dynURL judges a URL whose text is partly computed at run time: the parts
// that are static (a loopback host, an API path) may be enough.
func dynURL(sa *netguard.SelfAPI, text string) string {
	if !strings.Contains(text, "://") {
		return ""
	}
	t := strings.NewReplacer(`"`, "", `'`, "").Replace(text)
	// Arithmetic of numbers is static: $((7000+777)).
	t = arithRe.ReplaceAllStringFunc(t, func(m string) string {
		if n, ok := staticArith(m[3 : len(m)-2]); ok {
			return strconv.Itoa(n)
		}
		return m
	})
	if !substRe.MatchString(t) {
		return sa.MatchURL(t, false)
	}
	for _, fill := range []string{"x", "1"} {
		u := substRe.ReplaceAllString(t, fill)
		if why := sa.MatchURL(u, false); why != "" && !strings.Contains(why, "daemon's port") || why != "" && fill == "x" {
			return why
		}
	}
	return ""
}

// arithRe matches an arithmetic expansion of numbers.
var arithRe = lazyre.New(`\$\(\([0-9+\-*/% ()]*\)\)`)

// staticArith evaluates an expression of numbers and + - * / % (no
// parentheses), left to right with * / % first.
func staticArith(e string) (int, bool) {
	e = strings.ReplaceAll(e, " ", "")
	if e == "" || strings.ContainsAny(e, "()") {
		return 0, false
	}
	sum, term, op := 0, 0, byte('+')
	num, have := 0, false
	apply := func() bool {
		if !have {
			return false
		}
		switch op {
		case '+':
			sum += term
			term = num
		case '-':
			sum += term
			term = -num
		case '*':
			term *= num
		case '/', '%':
			if num == 0 {
				return false
			}
			if op == '/' {
				term /= num
			} else {
				term %= num
			}
		}
		num, have = 0, false
		return true
	}
	for i := 0; i < len(e); i++ {
		c := e[i]
		if c >= '0' && c <= '9' {
			num = num*10 + int(c-'0')
			have = true
			if num > 1<<30 {
				return 0, false
			}
			continue
		}
		if !apply() {
			return 0, false
		}
		op = c
	}
	if !apply() {
		return 0, false
	}
	return sum + term, true
}

// urlLitRe finds URL literals in inline code.
var urlLitRe = lazyre.New(`(?i)\b(?:https?|wss?|gopher|telnet|ftp|dict)://[^\s'"` + "`" + `<>(){}\\,;]+`)

// strLitRe finds quoted string literals in inline code.
var strLitRe = lazyre.New(`'([^'\\\n]{1,255})'|"([^"\\\n]{1,255})"`)

// numRe finds numbers in inline code.
var numRe = lazyre.New(`\b[0-9]{2,5}\b`)

// selfCode judges the inline code of an interpreter (python -c, node -e,
// perl -e, a here-document fed to python …): a URL literal that reaches the
// daemon, or a string literal naming this machine next to the daemon's port
// (a raw socket).
func (a *analyzer) selfCode(s *segCtx) {
	var texts []string
	for _, x := range s.args {
		if !x.dyn && len(x.val) > 3 {
			texts = append(texts, x.val)
		}
	}
	if in := a.stdinOf(s.c.redirs); in.kind == 'd' && !in.dyn {
		texts = append(texts, in.text)
	}
	sa := a.self()
	for _, t := range texts {
		if len(t) > 1<<16 {
			t = t[:1<<16]
		}
		for _, u := range urlLitRe.FindAllString(t, 16) {
			if why := sa.MatchURL(u, false); why != "" {
				a.selfAPIFinding(s.name + " code with " + clip(u, 80) + " (" + why + ")")
				return
			}
		}
		local := false
		for _, m := range strLitRe.FindAllStringSubmatch(t, 64) {
			lit := m[1] + m[2]
			if !strings.ContainsAny(lit, " /") && sa.LocalHost(lit) {
				local = true
				break
			}
		}
		if !local {
			continue
		}
		for _, n := range numRe.FindAllString(t, 64) {
			if sa.DaemonPort(parsePort(n)) {
				a.selfAPIFinding(s.name + " code that connects to this machine at the daemon's port (" + sa.Ports() + ")")
				return
			}
		}
	}
}

// devNetRe matches bash's network redirections.
var devNetRe = lazyre.New(`^/dev/(?:tcp|udp)/([^/]*)/([^/]+)$`)

// selfRedirect judges a redirection to bash's /dev/tcp/HOST/PORT (or udp):
// a connection to the daemon's port on this machine is `block`. It is
// called for every redirection of a statement.
func (a *analyzer) selfRedirect(r *syntax.Redirect) {
	if r == nil || r.Word == nil {
		return
	}
	v, dyn, _, _ := a.resolve(r.Word)
	if dyn || !strings.HasPrefix(v, "/dev/") {
		return
	}
	m := devNetRe.FindStringSubmatch(path.Clean(v))
	if m == nil {
		return
	}
	if why := a.self().MatchHostPort(m[1], m[2]); why != "" {
		a.selfAPIFinding("a redirection to " + v + " (" + why + ")")
	}
}

// WithSelfAPI returns a copy of g that recognises the daemon described by
// self: its address file's port and listen address besides the default
// port.
func (g *Guard) WithSelfAPI(self *netguard.SelfAPI) *Guard {
	c := *g
	c.self = self
	return &c
}

// AgentMayRun reports whether an agent may run `overseer sub op` (op is
// the first operand after the sub-command, "" for none): the allow-list of
// selfapi.yaml, which the shell guard applies to the commands it sees by
// name. The CLI applies the same list to itself under an agent, so that a
// renamed copy of the binary is refused what the name is (package cli).
func AgentMayRun(sub, op string) bool {
	next, ok := selfRules().allowed[strings.ToLower(sub)]
	return ok && (next == nil || next.has(strings.ToLower(op)))
}

// overseerModule is the module Overseer is built from (this binary's main
// module), or "" when unknown.
var overseerModule = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Path
	}
	return ""
})

// overseerBinary reports whether the program a command runs by its path
// (./ov, /tmp/x/tool) is a build of Overseer's own commands, whatever the
// file is called: a copy, a link or a rebuild of the overseer CLI or the
// lean hook entry. It returns "overseer" or "overseer-hook" from the build
// information Go writes into the file, or "" (not a path, not a file, not
// Overseer's).
func (a *analyzer) overseerBinary(prog arg) string {
	if prog.dyn || !strings.ContainsAny(prog.val, `/\`) {
		return ""
	}
	p, ok := a.abs(prog.val)
	if !ok {
		return ""
	}
	p = a.expandHome(p)
	if n, ok := a.ovCopies[p]; ok {
		return n // cp /usr/local/bin/overseer ./ov && ./ov …
	}
	return a.overseerFile(p)
}

// overseerFile is overseerBinary of the file at the absolute path p.
func (a *analyzer) overseerFile(p string) string {
	mod := overseerModule()
	if mod == "" {
		return ""
	}
	f, _, ok := a.openRegular(strings.TrimPrefix(p, "/"))
	if !ok {
		return ""
	}
	defer f.Close()
	ra, isRA := f.(io.ReaderAt)
	if !isRA {
		return ""
	}
	bi, err := buildinfo.Read(ra)
	if err != nil || bi.Main.Path != mod || !strings.HasPrefix(bi.Path, mod+"/cmd/") {
		return ""
	}
	switch n := path.Base(bi.Path); n {
	case "overseer", "overseer-hook":
		return n
	}
	return ""
}
