package shell

import (
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// Python task runners. nox and invoke (and Fabric) import a Python file of
// the project (noxfile.py, tasks.py, fabfile.py) and run what it defines:
// they are judged as python3 running that file is (the paths and deletions
// its code names, the local modules it imports), whatever session or task
// is named. tox runs the commands of its configuration (tox.ini,
// setup.cfg, pyproject.toml's [tool.tox], tox.toml) in the environments'
// virtual environments: those commands are judged as a recipe's are, every
// environment's (the environment list may be computed by factors), with
// the programs of the environments (their dependencies) as the project's
// own. A configuration that cannot be read reaches a person.

// pyRunner judges nox, invoke and fab as python3 running the file they
// import.
func (a *analyzer) pyRunner(s *segCtx) {
	var file arg
	named := false
	def := ""
	var fileOpts, valueOpts []string
	switch s.name {
	case "nox":
		def = "noxfile.py"
		fileOpts = []string{"-f", "--noxfile", "--noxfile-path"}
		valueOpts = []string{"-s", "-e", "--session", "--sessions", "-p", "--python", "--pythons", "-t", "--tag", "--tags",
			"-k", "--keywords", "-db", "--default-venv-backend", "-fb", "--force-venv-backend", "--envdir", "--extra-python",
			"--extra-pythons", "--force-python", "-P", "--report", "--download-python"}
	case "invoke", "inv":
		def = "tasks.py"
		fileOpts = []string{"-c", "--collection"}
		valueOpts = []string{"-f", "--config", "-r", "--search-root", "-p", "--pty", "--command-timeout", "-T",
			"--write-pyc", "-e", "--echo", "-w", "--prompt-for-sudo-password", "--complete", "--print-completion-script"}
	case "fab":
		def = "fabfile.py"
		fileOpts = []string{"-c", "--collection"}
		valueOpts = []string{"-f", "--config", "-r", "--search-root", "-H", "--hosts", "-i", "--identity", "-S",
			"--ssh-config", "-t", "--connect-timeout", "-R", "--roles"}
	}
	root := arg{}
	hasRoot := false
	for k := 0; k < len(s.args); k++ {
		x := s.args[k]
		v := x.val
		if v == "--" && !x.dyn {
			break
		}
		name, val, eq := strings.Cut(v, "=")
		value := func() (arg, bool) { return optionValue(s.args, &k, x, val, eq) }
		switch {
		case slices.Contains(fileOpts, name):
			file, named = value()
		case (s.name == "invoke" || s.name == "inv" || s.name == "fab") && (name == "-r" || name == "--search-root"):
			root, hasRoot = value()
		case slices.Contains(valueOpts, name):
			if !eq {
				k++
			}
		}
	}
	if named && file.dyn || hasRoot && root.dyn {
		a.runnerProblem(s.idx, s.name, "the file it imports is computed at run time")
		return
	}
	py := *s
	py.name = "python3"
	if s.name == "nox" {
		if !named {
			file = arg{val: def}
		}
		if a.runsUnseen(&py, file.val, a.absOf(file.val)) {
			return
		}
		a.interpScript(&py, a.absOf(file.val))
		a.pyRunnerCalls(s, a.absOf(file.val))
		return
	}
	// invoke and fab: a module (NAME.py) or a package (NAME/__init__.py)
	// in the search root or the nearest directory above the working
	// directory that holds one.
	mod := strings.TrimSuffix(def, ".py")
	if named {
		mod = strings.TrimSuffix(file.val, ".py")
	}
	start, known := a.cwd, a.cwdKnown
	if hasRoot {
		p, ok := a.fileAbs(root.val)
		start, known = p, ok
	}
	if !known {
		return
	}
	for d, n := start, 0; n < 64; n++ {
		for _, c := range []string{path.Join(d, mod+".py"), path.Join(d, mod, "__init__.py")} {
			if _, w := a.written[c]; w || a.fileExists(c) || a.changedBefore(c, s.idx) {
				if a.runsUnseen(&py, c, c) {
					return
				}
				if a.changedBefore(c, s.idx) {
					if _, w := a.written[c]; !w {
						a.runnerProblem(s.idx, s.name, a.display(c)+" "+changedWhy)
						return
					}
				}
				a.interpScript(&py, c)
				a.pyRunnerCalls(s, c)
				return
			}
		}
		if d == "/" || hasRoot {
			break
		}
		d = path.Dir(d)
	}
}

// pyRunnerCalls judges the commands the runner calls of the Python file
// abs run (pyRunnerCommands) as a recipe's are: a session's or task's
// session.run("sh", "-c", "curl … | sh") reaches a person whichever is
// named. nox's programs are its sessions' virtual environments' (the
// project's own); invoke's command lines run with a shell.
func (a *analyzer) pyRunnerCalls(s *segCtx, abs string) {
	if !path.IsAbs(abs) {
		return
	}
	f := a.contentOf(abs, s.idx)
	if f.state != fileOK {
		return // judged above (missing, or reaching a person)
	}
	runner := s.name
	if runner == "inv" || runner == "fab" {
		runner = "invoke"
	}
	cmds := pyRunnerCommands(runner, f.text)
	if len(cmds) == 0 {
		return
	}
	o := contentOpts{origin: OriginScript, cwd: path.Dir(abs), where: s.name + " runs a command of " + a.display(abs)}
	if runner == "nox" {
		o.bins = func(string) bool { return true }
	}
	a.runContent(s.idx, strings.Join(cmds, "\n"), o)
}

// absOf is p made absolute against the working directory, or p.
func (a *analyzer) absOf(p string) string {
	if q, ok := a.fileAbs(p); ok {
		return q
	}
	return p
}

// toxConfigs are the files tox reads its configuration from, in order.
var toxConfigs = []string{"tox.ini", "setup.cfg", "pyproject.toml", "tox.toml"}

// toxCmd judges tox by the commands of its environments.
func (a *analyzer) toxCmd(s *segCtx) {
	var cfg arg
	hasCfg := false
	var envs []string // the environments named with -e; nil: every one
	all := false
	for k := 0; k < len(s.args); k++ {
		x := s.args[k]
		v := x.val
		if v == "--" && !x.dyn {
			break
		}
		name, val, eq := strings.Cut(v, "=")
		switch {
		case name == "-e" || name == "--env":
			var y arg
			if eq {
				y = arg{val: val, dyn: x.dyn}
			} else if k+1 < len(s.args) {
				k++
				y = s.args[k]
			}
			if y.dyn || strings.Contains(y.val, "{") || y.val == "ALL" || y.val == "" {
				all = true // every environment may run
			}
			envs = append(envs, strings.Split(y.val, ",")...)
		case name == "-c" || name == "--conf" || name == "--configfile":
			hasCfg = true
			if eq {
				cfg = arg{val: val, dyn: x.dyn}
			} else if k+1 < len(s.args) {
				k++
				cfg = s.args[k]
			}
		case v == "--version" || v == "-h" || v == "--help" || v == "l" || v == "list" || v == "c" || v == "config" ||
			v == "--showconfig" || v == "--listenvs" || v == "--listenvs-all" || v == "-l" || v == "-a" || v == "q" ||
			v == "quickstart" || v == "de" || v == "depends":
			return // lists or shows: runs no environment's commands
		}
	}
	if all {
		envs = nil
	}
	if hasCfg && cfg.dyn {
		a.runnerProblem(s.idx, "tox", "the configuration file is computed at run time")
		return
	}
	var abs, text string
	if hasCfg {
		p, ok := a.fileAbs(cfg.val)
		if !ok {
			a.runnerProblem(s.idx, "tox", "the configuration file's place is not known")
			return
		}
		t, st := a.runnerContent(s.idx, "tox", p)
		if st != fileOK {
			return
		}
		abs, text = p, t
	} else if a.cwdKnown {
	walk:
		for d, n := a.cwd, 0; n < 64; n++ {
			for _, name := range toxConfigs {
				p := path.Join(d, name)
				if _, w := a.written[p]; !w && !a.fileExists(p) && !a.changedBefore(p, s.idx) {
					continue
				}
				t, st := a.runnerContent(s.idx, "tox", p)
				switch st {
				case fileMissing:
					continue
				case fileBad:
					return
				}
				if toxHolds(name, t) {
					abs, text = p, t
					break walk
				}
			}
			if d == "/" {
				break
			}
			d = path.Dir(d)
		}
	}
	if abs == "" {
		return
	}
	if !a.runnerBudget(s.idx, "tox") {
		return
	}
	cmds, why := toxCommands(path.Base(abs), text, path.Dir(abs), envs)
	if why != "" {
		a.runnerProblem(s.idx, "tox", a.display(abs)+": "+why)
		return
	}
	if len(cmds) > maxLaterCommands {
		a.runnerProblem(s.idx, "tox", a.display(abs)+": it runs more commands than the guard judges")
		return
	}
	a.runContent(s.idx, strings.Join(cmds, "\n"), contentOpts{origin: OriginScript, cwd: path.Dir(abs),
		bins: func(string) bool { return true }, where: "tox runs the commands of " + a.display(abs)})
}

// toxHolds reports whether a candidate file holds tox's configuration.
func toxHolds(name, text string) bool {
	switch name {
	case "tox.ini", "tox.toml":
		return true
	case "setup.cfg":
		return strings.Contains(text, "[tox:tox]")
	}
	return strings.Contains(text, "[tool.tox")
}

// toxCommands returns the commands of the environments envs (every one
// when nil) of a tox configuration file (base name name, in dir), or why
// it cannot be read. An environment named runs the base environment's
// commands and its own section's.
func toxCommands(name, text, dir string, envs []string) ([]string, string) {
	switch name {
	case "pyproject.toml", "tox.toml":
		var doc map[string]any
		if err := toml.Unmarshal([]byte(text), &doc); err != nil {
			return nil, "it is not TOML the guard can read (" + clip(err.Error(), 80) + ")"
		}
		if name == "pyproject.toml" {
			tool, _ := doc["tool"].(map[string]any)
			doc, _ = tool["tox"].(map[string]any)
			if legacy, ok := doc["legacy_tox_ini"].(string); ok {
				return toxINI(legacy, dir, envs), ""
			}
		}
		return toxTOML(doc, dir, envs), ""
	}
	return toxINI(text, dir, envs), ""
}

// toxKeys are the keys of an environment whose values tox runs.
var toxKeys = map[string]bool{"commands": true, "commands_pre": true, "commands_post": true, "install_command": true,
	"list_dependencies_command": true}

// toxINI returns the commands of the testenv sections of INI text
// (setup.cfg's are [testenv…] too) that the environments envs run.
func toxINI(text, dir string, envs []string) []string {
	runs := func(section string) bool {
		if section == "testenv" || envs == nil && strings.HasPrefix(section, "testenv:") {
			return true
		}
		name, ok := strings.CutPrefix(section, "testenv:")
		return ok && slices.Contains(envs, strings.TrimSpace(name))
	}
	var out []string
	section, key := "", ""
	var val []string
	flush := func() {
		if key != "" && toxKeys[key] && runs(section) {
			joined := strings.ReplaceAll(strings.Join(val, "\n"), "\\\n", " ")
			for _, l := range strings.Split(joined, "\n") {
				l = strings.TrimSpace(l)
				if l == "" || strings.HasPrefix(l, "#") {
					continue
				}
				out = append(out, toxLine(l, dir))
			}
		}
		key, val = "", nil
	}
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		if key != "" && line != "" && (line[0] == ' ' || line[0] == '\t') {
			if !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, ";") {
				val = append(val, t)
			}
			continue
		}
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
			continue
		}
		flush()
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			section = strings.TrimSpace(t[1 : len(t)-1])
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok {
			continue
		}
		key = strings.TrimSpace(k)
		val = []string{strings.TrimSpace(v)}
	}
	flush()
	return out
}

// toxTOML returns the commands of tox's TOML configuration: env_run_base,
// env_pkg_base and env.NAME for the environments envs (every one when nil).
func toxTOML(doc map[string]any, dir string, envs []string) []string {
	var tables []map[string]any
	for _, k := range []string{"env_run_base", "env_pkg_base"} {
		if m, ok := doc[k].(map[string]any); ok {
			tables = append(tables, m)
		}
	}
	if e, ok := doc["env"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(e)) {
			if m, ok := e[k].(map[string]any); ok && (envs == nil || slices.Contains(envs, k)) {
				tables = append(tables, m)
			}
		}
	}
	var out []string
	for _, env := range tables {
		for _, k := range slices.Sorted(maps.Keys(toxKeys)) {
			switch x := env[k].(type) {
			case []any:
				if k == "install_command" || k == "list_dependencies_command" {
					out = append(out, toxArgv(x, dir))
					continue
				}
				for _, c := range x {
					if l, ok := c.([]any); ok {
						out = append(out, toxArgv(l, dir))
					} else {
						out = append(out, `"$TOX_VALUE"`)
					}
				}
			case string:
				out = append(out, toxLine(x, dir))
			}
		}
	}
	return out
}

// toxArgv quotes one TOML command (a list of words; a word that is not a
// string, a substitution, is a value not known).
func toxArgv(words []any, dir string) string {
	q := make([]string, len(words))
	for i, w := range words {
		s, ok := w.(string)
		switch {
		case !ok:
			q[i] = `"$TOX_VALUE"`
		case strings.Contains(s, "{"):
			q[i] = toxLine(s, dir)
		default:
			q[i] = shellQuote(s)
		}
	}
	return strings.Join(q, " ")
}

var (
	toxSubst   = lazyre.New(`\{[^{}]*\}`)
	toxFactors = lazyre.New(`^[A-Za-z0-9_.,!-]+:\s+`)
)

// toxLine returns one tox command line as shell text: tox's prefixes (- to
// ignore the exit status, ! to negate it) go, the project's directory and
// the environment's python are put in, other substitutions become a value
// not known.
func toxLine(l, dir string) string {
	l = strings.TrimLeft(strings.TrimSpace(l), "-! ")
	if m := toxFactors.FindString(l); m != "" {
		l = strings.TrimLeft(l[len(m):], "-! ") // py3,lint: cmd runs in those environments
	}
	l = strings.NewReplacer("{envbindir}/", "", "{env_bin_dir}/", "").Replace(l)
	return toxSubst.ReplaceAllStringFunc(l, func(t string) string {
		switch t {
		case "{toxinidir}", "{tox_root}":
			if !strings.ContainsAny(dir, " \t'\"$`\\") {
				return dir
			}
		case "{envpython}", "{env_python}":
			return "python"
		}
		return `"$TOX_VALUE"`
	})
}

// pyRunCall finds the calls through which nox sessions and invoke or
// Fabric tasks run commands: session.run("pytest", "-x"),
// c.run("make build"), c.sudo(…), ctx.local(…).
var pyRunCall = lazyre.New(`\.\s*(run|run_always|run_install|sudo|local)\s*\(`)

// pyRunnerCommands returns the commands the runner calls of a nox or
// invoke file's text run, as shell text: nox's arguments are an argument
// list, invoke's first argument a command line. An argument that is not a
// string literal (a variable, an f-string's {…}) is a value not known;
// keyword arguments are not part of the command.
func pyRunnerCommands(runner, text string) []string {
	var out []string
	for _, m := range pyRunCall.FindAllStringIndex(text, maxLaterCommands) {
		from, to := callArgs(text, m[1])
		if m[1] > 0 && text[m[1]-1] == '(' {
			from = m[1]
		}
		var words []string
		for _, piece := range splitTopLevel(text[from:to]) {
			p := strings.TrimSpace(piece)
			if p == "" {
				continue
			}
			if k := strings.IndexByte(p, '='); k > 0 && pyIdent.MatchString(strings.TrimSpace(p[:k])) && (k+1 >= len(p) || p[k+1] != '=') {
				continue // a keyword argument
			}
			words = append(words, pyWord(p))
		}
		if len(words) == 0 || words[0] == "\x00" {
			continue // no command, or a program computed by the code (subprocess.run([…]), judged as Python)
		}
		if runner == "nox" {
			q := make([]string, len(words))
			for i, w := range words {
				if w == "\x00" {
					q[i] = `"$PY_VALUE"`
				} else {
					q[i] = shellQuote(w)
				}
			}
			out = append(out, strings.Join(q, " "))
			continue
		}
		out = append(out, words[0])
	}
	return out
}

var pyIdent = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// pyWord returns the value of a Python argument that is one string literal
// (an f-string's {…} becomes a variable of the shell text), or "\x00"
// when it is not one.
func pyWord(p string) string {
	prefix := strings.ToLower(strings.TrimRight(p[:strings.IndexAny(p+"'\"", "'\"")], " "))
	if len(prefix) > 2 || strings.Trim(prefix, "rfbu") != "" {
		return "\x00"
	}
	lits := literals(p[len(prefix):])
	if len(lits) != 1 || lits[0].start != 0 || lits[0].end != len(p)-len(prefix) {
		return "\x00"
	}
	v := lits[0].val
	if strings.Contains(prefix, "f") {
		v = toxSubst.ReplaceAllLiteralString(v, `"$PY_VALUE"`)
	}
	return v
}

// splitTopLevel splits a call's argument text at the commas outside
// brackets and strings.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	var q byte
	for k := 0; k < len(s); k++ {
		c := s[k]
		switch {
		case q != 0:
			if c == '\\' {
				k++
			} else if c == q {
				q = 0
			}
		case c == '\'' || c == '"':
			q = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:k])
			start = k + 1
		}
	}
	return append(out, s[start:])
}
