package shell

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
)

// This file judges environment variables that change what a program runs,
// reads or loads: the environment section of rules.yaml says what each
// variable is (see docs/guards/shell.md, "Environment variables"). Every
// way of setting one is judged the same: NAME=value before a command, env
// and sudo NAME=value, export and declare -x, and a plain assignment (the
// usual variables are exported already, so a plain assignment changes the
// environment of the commands after it).

// The kinds of environment variables.
const (
	envCommand   = "command"    // a command line a program runs (GIT_EDITOR)
	envProgram   = "program"    // a program a program runs (SUDO_ASKPASS)
	envOptions   = "options"    // options of a program (MAKEFLAGS, TAR_OPTIONS)
	envConfig    = "config"     // a configuration file or directory (GIT_CONFIG_GLOBAL, HOME)
	envLoadPath  = "loadpath"   // directories code or programs are loaded from (PYTHONPATH, PATH)
	envLoader    = "loader"     // code every program loads (LD_PRELOAD)
	envScript    = "script"     // a shell script a shell runs first (BASH_ENV)
	envGitConfig = "git_config" // git -c through the environment (GIT_CONFIG_PARAMETERS)
)

// cenv is a compiled EnvVar.
type cenv struct {
	name     string
	kind     string
	programs []string
	prefixes []string
	code     set
	level    action.Level
}

// envKey is the key of a variable in rules.envVars: npm reads its
// npm_config_ variables in any case.
func envKey(name string) string {
	if len(name) > 11 && strings.EqualFold(name[:11], "npm_config_") {
		return strings.ToLower(name)
	}
	return name
}

// compileEnv validates one entry of the environment section.
func compileEnv(name string, v EnvVar) (*cenv, error) {
	fail := func(msg string) (*cenv, error) {
		return nil, fmt.Errorf("%w: environment: %s: %s", ErrConfig, name, msg)
	}
	if !validName(name, false) && !strings.HasSuffix(name, "_*") {
		return fail("not a variable name")
	}
	switch v.Kind {
	case envCommand, envProgram, envConfig, envLoadPath, envScript, envGitConfig:
	case envOptions:
		if len(v.Programs) == 0 {
			return fail("options need programs")
		}
	case envLoader:
		if v.Level < action.Notify {
			return fail("a loader needs a level")
		}
	default:
		return fail(fmt.Sprintf("unknown kind %q", v.Kind))
	}
	c := &cenv{name: name, kind: v.Kind, prefixes: v.Prefixes, code: makeSet(v.Code, false), level: v.Level}
	for _, p := range v.Programs {
		c.programs = append(c.programs, strings.ToLower(p))
	}
	if c.level < action.Confirm {
		c.level = action.Confirm
	}
	return c, nil
}

// envVar returns the description of a variable, or nil.
func (r *rules) envVar(name string) *cenv {
	if c, ok := r.envVars[envKey(name)]; ok {
		return c
	}
	// GIT_CONFIG_KEY_0, GIT_CONFIG_VALUE_0 …
	if i := strings.LastIndexByte(name, '_'); i > 0 && isDigits(name[i+1:]) {
		return r.envVars[name[:i+1]+"*"]
	}
	return nil
}

// envVal is the value an assignment gives a variable.
type envVal struct {
	val  string
	dyn  bool
	code *textIn // the static text of a process substitution (BASH_ENV=<(echo …))
}

// envState is what the command sets in the environment.
type envState struct {
	envSet  map[string]envVal // set by export, declare -x or a plain assignment
	cmdEnv  map[string]envVal // set for the command being judged (NAME=v cmd, env NAME=v cmd)
	gitSeen map[string]bool   // git configuration from the environment already judged
	// toolrcDepth is above 0 while the options of a curl or wget
	// configuration file are judged (toolrc.go).
	toolrcDepth int
}

// assignVal resolves the value of an assignment.
func (a *analyzer) assignVal(as *syntax.Assign) envVal {
	if as.Value == nil {
		return envVal{}
	}
	if len(as.Value.Parts) == 1 {
		if p, ok := as.Value.Parts[0].(*syntax.ProcSubst); ok {
			if t, ok := a.substOut[p]; ok {
				return envVal{val: a.text(as.Value), dyn: true, code: &t}
			}
		}
	}
	v, dyn, _, _ := a.resolve(as.Value)
	if dyn {
		v = a.text(as.Value)
	}
	return envVal{val: v, dyn: dyn}
}

// envAssigns judges the assignments of a simple command or a declaration;
// persist is true when they outlive the command (export, a plain
// assignment). It returns the assignments that are for the command only.
func (a *analyzer) envAssigns(as []*syntax.Assign, persist bool) map[string]envVal {
	var out map[string]envVal
	for _, x := range as {
		if x == nil || x.Name == nil || x.Array != nil || x.Index != nil {
			continue
		}
		name := x.Name.Value
		var v envVal
		switch {
		case x.Naked:
			// export NAME: the variable's value goes to the environment.
			vs, ok := a.vars[name]
			if !ok || vs.isArr {
				continue
			}
			v = envVal{val: vs.val, dyn: vs.dyn}
			if v.dyn {
				v.val = "$" + name
			}
		default:
			v = a.assignVal(x)
			if x.Append {
				v.dyn, v.val = true, a.text(x.Value)
			}
		}
		if a.r.envVar(name) == nil {
			continue
		}
		a.envAssign(name, v)
		if persist {
			if a.envSet == nil {
				a.envSet = map[string]envVal{}
			}
			a.envSet[name] = v
			continue
		}
		if out == nil {
			out = map[string]envVal{}
		}
		out[name] = v
	}
	return out
}

// envArgs judges the NAME=value words of wrappers such as env and sudo and
// returns them.
func (a *analyzer) envArgs(args []arg) map[string]envVal {
	var out map[string]envVal
	for _, x := range args {
		n, v, ok := strings.Cut(x.val, "=")
		if !ok || !validName(n, false) || a.r.envVar(n) == nil {
			continue
		}
		ev := envVal{val: v, dyn: x.dyn, code: x.code}
		if x.dyn {
			ev.val = x.val[len(n)+1:]
		}
		a.envAssign(n, ev)
		if out == nil {
			out = map[string]envVal{}
		}
		out[n] = ev
	}
	return out
}

// envAssign judges the value one assignment gives a variable, whatever the
// program it is for: a command is judged as the command, a configuration
// or a load path outside the working tree needs a person.
func (a *analyzer) envAssign(name string, v envVal) {
	c := a.r.envVar(name)
	if c == nil {
		return
	}
	idx := a.cur
	shown := name + "=" + clip(v.val, 80)
	computed := func(what string) {
		a.add(guard.Finding{Check: "shell.env-dynamic", Level: c.level,
			Message: name + " is set to " + what + " computed at run time: " + shown})
	}
	switch c.kind {
	case envCommand, envProgram:
		if v.dyn {
			computed("a command")
			return
		}
		cmd := strings.TrimSpace(v.val)
		for _, p := range c.prefixes {
			if t, ok := strings.CutPrefix(cmd, p); ok {
				cmd = strings.TrimSpace(t)
				break
			}
		}
		if cmd == "" {
			return
		}
		if c.kind == envProgram {
			cmd = shellQuote(cmd)
		} else {
			cmd = strings.ReplaceAll(cmd, "%s", "FILE")
		}
		a.nestedScript(cmd, OriginEnv, idx)
		a.cur = idx
	case envOptions:
		if v.dyn {
			computed("options")
			return
		}
		for _, o := range splitOptions(v.val) {
			n, _, _ := strings.Cut(o, "=")
			if c.code.has(n) {
				a.add(guard.Finding{Check: "shell.env-code", Level: c.level,
					Message: shown + " makes " + strings.Join(c.programs, ", ") + " load code (" + n + ")"})
				return
			}
		}
	case envConfig:
		if v.dyn {
			computed("a configuration path")
			return
		}
		if v.val == "" {
			return
		}
		p, known := a.abs(v.val)
		w := a.where(p, known)
		if w == whereTree || w == whereHome && a.env.Home != "" && (p == a.env.Home || p == "~") {
			return
		}
		if a.gitConfigWritten(name, p) {
			return
		}
		a.add(guard.Finding{Check: "shell.env-config", Level: c.level,
			Message: shown + " points " + programsOf(c) + " at configuration outside the working tree"})
	case envLoadPath:
		for _, e := range strings.Split(v.val, ":") {
			if e == "" || strings.Contains(e, "$"+name) || strings.Contains(e, "${"+name) {
				continue
			}
			if strings.ContainsAny(e, "$`") {
				// $HOME/bin, $(go env GOPATH)/bin: computed entries are
				// usually the user's own tool directories; not judged.
				continue
			}
			p, known := a.abs(e)
			if w := a.where(p, known); w == whereScratch || w == whereUnknown || a.writtenUnder(p) {
				a.add(guard.Finding{Check: "shell.env-loadpath", Level: c.level,
					Message: shown + " makes " + programsOf(c) + " load code from " + a.display(p)})
				a.autoload(c, p, idx)
				return
			}
		}
	case envLoader:
		if v.val == "" && !v.dyn {
			return
		}
		a.add(guard.Finding{Check: "shell.loader-env", Level: c.level, Hard: c.level >= action.Approve,
			Message: shown + " changes the code the programs it starts load"})
	case envScript:
		switch {
		case v.code != nil:
			a.nestedScript(v.code.text, OriginEnv, idx)
			a.cur = idx
			return
		case v.dyn:
			computed("a start-up script")
			return
		case v.val == "":
			return
		}
		p, known := a.abs(v.val)
		if known && (a.runWritten(p, true, idx) || a.runStored(p, true, idx)) {
			a.cur = idx
			return
		}
		a.add(guard.Finding{Check: "shell.loader-env", Level: c.level,
			Message: shown + " makes shells run a start-up script that cannot be read"})
	}
}

// programsOf names the programs that read a variable.
func programsOf(c *cenv) string {
	if len(c.programs) == 0 {
		return "the programs it starts"
	}
	return strings.Join(c.programs, ", ")
}

// writtenUnder reports whether the command wrote a file under dir earlier.
func (a *analyzer) writtenUnder(dir string) bool {
	for p := range a.written {
		if action.Within(dir, p) {
			return true
		}
	}
	return false
}

// autoload judges the files of a load path directory written earlier in
// the command that interpreters run at start (Python's sitecustomize).
func (a *analyzer) autoload(c *cenv, dir string, idx int) {
	for _, f := range []string{"sitecustomize.py", "usercustomize.py"} {
		if w, ok := a.written[path.Join(dir, f)]; ok {
			text, known := a.writtenContent(w)
			if !known {
				continue
			}
			a.inlineCode("python", text, idx)
			a.cur = idx
		}
	}
}

// commandEnv is the environment a command runs with: what the command set
// before it, with the command's own assignments over it.
func (a *analyzer) commandEnv(extra map[string]envVal) map[string]envVal {
	if len(extra) == 0 && len(a.cmdEnv) == 0 {
		return a.envSet
	}
	m := make(map[string]envVal, len(a.envSet)+len(a.cmdEnv)+len(extra))
	for _, src := range []map[string]envVal{a.envSet, a.cmdEnv, extra} {
		for k, v := range src {
			m[k] = v
		}
	}
	return m
}

// envForCommand applies the environment to the segment about to be
// classified: options variables become options of their program, git
// configuration from the environment is judged as git -c, and a program
// found through a PATH entry written by the command is judged by its
// content.
func (a *analyzer) envForCommand(s *segCtx, env map[string]envVal) {
	switch s.name {
	case "npm", "pnpm", "yarn", "npx":
		a.npmrc(s)
	}
	if len(env) == 0 {
		return
	}
	var pre []arg
	for name, v := range env {
		c := a.r.envVar(name)
		if c == nil {
			continue
		}
		switch c.kind {
		case envOptions:
			if v.dyn || !containsFold(c.programs, s.name) {
				continue
			}
			for _, o := range splitOptions(v.val) {
				pre = append(pre, arg{val: o, pat: globQuote(o)})
			}
		case envLoadPath:
			if name != "PATH" {
				continue
			}
			for _, e := range strings.Split(v.val, ":") {
				if strings.ContainsAny(e, "$`") {
					continue // the old value, or computed
				}
				if p, ok := a.abs(e); ok && e != "" && a.runWritten(path.Join(p, s.name), false, s.idx) {
					a.cur = s.idx
					break
				}
			}
		}
	}
	if len(pre) > 0 {
		s.args = append(pre, s.args...)
	}
	a.gitConfigEnv(s, env)
	if v, ok := env["GIT_DIR"]; ok && s.name == "git" && !v.dyn && v.val != "" {
		if p, ok := a.fileAbs(v.val); ok {
			a.gitForeignConfig(s, p) // gitrestore.go
		}
	}
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// splitOptions splits the value of an options variable into words as the
// programs do: at blanks, with backslash escapes and quotes; a word with an
// unclosed "$(" goes on to its ")" (MAKEFLAGS='--eval=$(shell a b)').
func splitOptions(s string) []string {
	var out []string
	var b strings.Builder
	in := false
	var q byte
	depth := 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case q != 0 && ch == q:
			q = 0
		case q == 0 && (ch == '\'' || ch == '"'):
			q, in = ch, true
		case ch == '\\' && q != '\'' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
			in = true
		case q == 0 && depth == 0 && (ch == ' ' || ch == '\t' || ch == '\n'):
			if in {
				out = append(out, b.String())
				b.Reset()
				in = false
			}
		default:
			if ch == '(' && i > 0 && s[i-1] == '$' {
				depth++
			} else if ch == ')' && depth > 0 {
				depth--
			}
			b.WriteByte(ch)
			in = true
		}
	}
	if in {
		out = append(out, b.String())
	}
	return out
}

// gitConfigEnv judges GIT_CONFIG_COUNT with GIT_CONFIG_KEY_n and
// GIT_CONFIG_VALUE_n, and GIT_CONFIG_PARAMETERS, as git -c.
func (a *analyzer) gitConfigEnv(s *segCtx, env map[string]envVal) {
	var kvs []envVal
	if n, ok := env["GIT_CONFIG_COUNT"]; ok {
		count, err := strconv.Atoi(n.val)
		if n.dyn || err != nil || count > 64 {
			count = 64
		}
		for i := 0; i < count; i++ {
			k, kok := env["GIT_CONFIG_KEY_"+strconv.Itoa(i)]
			v, vok := env["GIT_CONFIG_VALUE_"+strconv.Itoa(i)]
			if !kok && !vok {
				continue
			}
			kvs = append(kvs, envVal{val: k.val + "=" + v.val, dyn: k.dyn || v.dyn})
		}
	}
	if p, ok := env["GIT_CONFIG_PARAMETERS"]; ok {
		if p.dyn {
			kvs = append(kvs, envVal{val: p.val, dyn: true})
		} else {
			kvs = append(kvs, gitConfigParameters(p.val)...)
		}
	}
	for _, kv := range kvs {
		if a.gitSeen[kv.val] {
			continue
		}
		if a.gitSeen == nil {
			a.gitSeen = map[string]bool{}
		}
		a.gitSeen[kv.val] = true
		if kv.dyn {
			a.add(guard.Finding{Check: "shell.git-config-exec", Level: action.Confirm,
				Message: "git configuration from the environment computed at run time: " + clip(kv.val, 80)})
			continue
		}
		a.gitConfigKV(kv.val, false, s.idx, "the environment's git configuration ")
	}
}

// gitConfigParameters parses GIT_CONFIG_PARAMETERS: 'key'='value' pairs
// separated by blanks, quoted as git quotes them.
func gitConfigParameters(s string) []envVal {
	var out []envVal
	words := splitOptions(s)
	for _, w := range words {
		out = append(out, envVal{val: w})
	}
	return out
}

// gitConfigWritten judges a git configuration file written earlier in the
// command that a configuration variable points git at (HOME=/tmp/g with
// /tmp/g/.gitconfig). It reports whether the file was found and judged.
func (a *analyzer) gitConfigWritten(name, p string) bool {
	var f string
	switch name {
	case "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG":
		f = p
	case "HOME":
		f = path.Join(p, ".gitconfig")
	case "XDG_CONFIG_HOME":
		f = path.Join(p, "git", "config")
	case "GIT_DIR":
		f = path.Join(p, "config")
	default:
		return false
	}
	w, ok := a.written[f]
	if !ok {
		return false
	}
	text, known := a.writtenContent(w)
	if !known {
		return false
	}
	idx := a.cur
	for _, kv := range gitConfigText(text) {
		a.gitConfigKV(kv, false, idx, name+" names a git configuration that sets ")
	}
	a.add(guard.Finding{Check: "shell.env-config", Level: action.Confirm,
		Message: name + "=" + clip(p, 80) + " points git at a configuration the command wrote: " + a.display(f)})
	return true
}

// gitConfigText returns the key=value pairs of a git configuration file
// ([core] fsmonitor = cmd gives core.fsmonitor=cmd).
func gitConfigText(text string) []string {
	var out []string
	section := ""
	for _, line := range strings.Split(strings.ReplaceAll(text, "]", "]\n"), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			sec := strings.Trim(line, "[]")
			name, sub, ok := strings.Cut(sec, " ")
			section = strings.ToLower(name)
			if ok {
				section += "." + strings.Trim(strings.TrimSpace(sub), `"`)
			}
		default:
			k, v, _ := strings.Cut(line, "=")
			out = append(out, section+"."+strings.TrimSpace(k)+"="+strings.Trim(strings.TrimSpace(v), `"`))
		}
	}
	return out
}

// multiCall returns the program a multi-call binary runs:
// coreutils --coreutils-prog=rm.
func multiCall(name string, rest []arg) (string, bool) {
	if name != "coreutils" || len(rest) == 0 || rest[0].dyn {
		return "", false
	}
	for _, o := range []string{"--coreutils-prog=", "--coreutils-prog-shebang="} {
		if p, ok := strings.CutPrefix(rest[0].val, o); ok && p != "" {
			return p, true
		}
	}
	return "", false
}

// wrapperCommands judges a wrapper that runs command lines given in its
// options (nodemon --exec CMD): each is judged as a script, with the
// wrapper's operands appended.
func (a *analyzer) wrapperCommands(prog arg, rest []arg, cmds []arg, wrappers []string, c cmdCtx) int {
	name := progName(prog.val)
	idx := a.newSegment(Segment{Name: name, Path: prog.val, Args: vals(rest), Origin: c.origin,
		Wrappers: wrappers, Dynamic: anyDyn(rest)})
	if idx < 0 {
		return -1
	}
	a.cur = idx
	a.bump(action.Auto)
	for _, x := range cmds {
		if x.dyn {
			a.dynamicCode(x, name+" runs a command computed at run time")
			continue
		}
		a.nestedScript(x.val, OriginWatch, idx)
		a.cur = idx
	}
	return idx
}

// makefilesEnv returns the makefiles MAKEFILES names in the environment of
// the command being judged: make reads them before the others.
func (a *analyzer) makefilesEnv() []arg {
	v, ok := a.cmdEnv["MAKEFILES"]
	if !ok {
		v, ok = a.envSet["MAKEFILES"]
	}
	if !ok || v.dyn {
		return nil
	}
	var out []arg
	for _, f := range strings.Fields(v.val) {
		out = append(out, arg{val: f})
	}
	return out
}

// npmrc judges the project's .npmrc as npm reads it: a key is the
// npm_config_ variable of the same name (script-shell=/tmp/x.sh is
// npm_config_script_shell=/tmp/x.sh).
func (a *analyzer) npmrc(s *segCtx) {
	if a.env.Home != "" {
		// The user's: npm config set script-shell … writes it.
		p := path.Join(a.env.Home, ".npmrc")
		switch f := a.contentOf(p, s.idx); {
		case f.state == fileOK:
			a.npmrcText(s, f.text)
		case f.why == changedWhy:
			a.runnerProblem(s.idx, s.name, a.display(p)+" "+f.why)
		}
	}
	if a.cwdKnown {
		p := path.Join(a.cwd, ".npmrc")
		switch f := a.contentOf(p, s.idx); f.state {
		case fileOK:
			a.npmrcText(s, f.text)
		case fileBad:
			a.runnerProblem(s.idx, s.name, a.display(p)+" "+f.why)
		}
	}
	a.cur = s.idx
}

// npmrcText judges the keys of an .npmrc that change what npm runs.
func (a *analyzer) npmrcText(s *segCtx, text string) {
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.HasPrefix(k, "#") || strings.HasPrefix(k, ";") {
			continue
		}
		name := "npm_config_" + strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "-", "_")
		if a.r.envVar(name) == nil {
			continue
		}
		a.cur = s.idx
		a.envAssign(name, envVal{val: strings.Trim(strings.TrimSpace(v), `"`)})
	}
	a.cur = s.idx
}
