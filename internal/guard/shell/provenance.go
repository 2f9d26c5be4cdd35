package shell

// Code provenance: a trusted runner (make, npm run, sh FILE, ./script.sh,
// source FILE) is judged by the content of the file it executes, read from
// Env.FS (never run); code fetched from a registry or a VCS and run at once
// (npx PKG, pnpm dlx, uvx, go run MODULE@v, pip install git+…) is at least
// confirm; and programs thought harmless that run a command given in an
// option (cmake -E, vim -c '!…', emacs --eval, zip -TT, dc -e '!…', tar -I,
// rsync -e, ssh -o ProxyCommand=…, sort --compress-program, go -toolexec)
// have that command judged.
//
// How the content of a file raises its runner (the rule, also in
// docs/guards/shell.md):
//
//   - The runner keeps its own class (make, npm: notify).
//   - Every executed line (a recipe line, a package.json script, a shell
//     script) is analysed like a command typed at the prompt, with
//     origin "make", "package script" or "script", in the directory it runs
//     in. Its findings raise the runner: block stays block, approve stays
//     approve, confirm stays confirm; unknown programs are confirm, except in
//     package scripts, where a program of the project's node_modules/.bin
//     (or a declared dependency) is the project's own (notify).
//   - Findings that only say a value is computed at run time are about what
//     the guard could not resolve, not about what the file does. rm or a
//     write of a computed path (loop variables, arguments) is dropped: the
//     runner keeps its class. A command name or code (eval, sh -c, source)
//     computed at run time, and text that does not parse as shell, are
//     capped at confirm — and dropped in a recipe line that still has make
//     syntax the guard could not expand (a variable from the environment,
//     $(shell …), $(call …)) and in files outside the working tree and the
//     scratch directories (~/.bashrc, /etc/profile: the agent cannot change
//     them without a person; there, unknown programs are notify too). A
//     computed path that becomes "/" when its variable is empty
//     ("rm -rf $(DIR)/"), decoded or downloaded code, and everything the
//     analysis proves, keep their level.
//   - A missing file (no Makefile, no package.json, no such script) means the
//     runner does nothing special: today's class. A file larger than 1 MB,
//     unreadable, not valid JSON, or a makefile the guard cannot read whole
//     (SHELL set to a non-shell, a computed include, too many targets) is
//     confirm, with the reason (fail closed).
//   - Programs in other languages (python3 tools/fix.py, node x.js) are not
//     read: today's class.

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
)

// Origins of code a runner or an option executes.
const (
	OriginMake    Origin = "make"           // a recipe line of a makefile (or a command make runs while reading it)
	OriginPackage Origin = "package script" // a script of package.json that npm, yarn, pnpm or bun runs
	OriginOption  Origin = "exec option"    // a command a program runs through an option (cmake -E, vim -c '!…', tar -I …)
)

// Bounds of the reading of runner files.
const (
	maxRunnerFile     = 1 << 20 // bytes of one file
	maxRunnerRead     = 8 << 20 // bytes of all files one analysis reads
	maxRunnerSegments = 512     // segments one runner's content may add
	maxRunnerRuns     = 48      // runners (make, npm run …) judged by their files in one analysis
)

// runnerBudget counts a runner that reads its files; false when the
// analysis has judged too many (make calling make calling make …): the
// runner needs a person.
func (a *analyzer) runnerBudget(idx int, runner string) bool {
	a.prov.runs++
	if a.prov.runs > maxRunnerRuns+1 {
		return false // said once
	}
	if a.prov.runs > maxRunnerRuns {
		a.runnerProblem(idx, runner, "the command runs more than "+itoa(maxRunnerRuns)+" runners (make, npm run …) in all")
		return false
	}
	return true
}

// provState is what one analysis read for runners.
type provState struct {
	runs   int  // make and package runners whose files were read
	partly bool // a runner's code was judged only in part (said once)
	read   int
	files  map[string]runnerFile
	bins   map[string]bool
}

type fileState uint8

const (
	fileMissing fileState = iota // absent, a directory, or its location is not known
	fileOK
	fileBad // too big or unreadable: the runner needs a person
)

type runnerFile struct {
	text  string
	state fileState
	why   string
}

// fileAbs resolves a path a runner reads; ok is false when its location is
// not known.
func (a *analyzer) fileAbs(p string) (string, bool) {
	abs, known := a.abs(p)
	if strings.HasPrefix(abs, "~") {
		if a.env.Home == "" || abs != "~" && !strings.HasPrefix(abs, "~/") {
			return "", false
		}
		abs = path.Join(a.env.Home, strings.TrimPrefix(abs, "~"))
	}
	if !known || !path.IsAbs(abs) {
		return "", false
	}
	if _, win := windowsPath(abs); win {
		return "", false
	}
	return abs, true
}

// readRunnerFile reads a file a runner executes, once per analysis.
func (a *analyzer) readRunnerFile(abs string) runnerFile {
	if f, ok := a.prov.files[abs]; ok {
		return f
	}
	f := a.loadRunnerFile(abs)
	if a.prov.files == nil {
		a.prov.files = map[string]runnerFile{}
	}
	a.prov.files[abs] = f
	return f
}

func (a *analyzer) loadRunnerFile(abs string) runnerFile {
	fsys := a.fileSystem()
	name := fsName(abs)
	st, err := fs.Stat(fsys, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return runnerFile{}
	case err != nil:
		return runnerFile{state: fileBad, why: "cannot be read (" + errText(err) + ")"}
	case st.IsDir():
		return runnerFile{}
	case !st.Mode().IsRegular():
		// A named pipe would hold the judgement until a writer came, and
		// what a device or a pipe gives is not known before it runs.
		return runnerFile{state: fileBad, why: "is not a regular file and is not read"}
	case st.Size() > maxRunnerFile:
		return runnerFile{state: fileBad, why: "is larger than 1 MB and is not read"}
	case a.prov.read+int(st.Size()) > maxRunnerRead:
		return runnerFile{state: fileBad, why: "is not read: the command runs more than 8 MB of files"}
	}
	fh, _, ok := a.openRegular(name)
	if !ok {
		return runnerFile{state: fileBad, why: "cannot be read as a regular file"}
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxRunnerFile+1))
	if err != nil {
		return runnerFile{state: fileBad, why: "cannot be read (" + errText(err) + ")"}
	}
	if len(data) > maxRunnerFile {
		return runnerFile{state: fileBad, why: "is larger than 1 MB and is not read"}
	}
	a.prov.read += len(data)
	return runnerFile{text: string(data), state: fileOK}
}

// errText is an error without the path (which is the file system's name,
// not the real path).
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// contentOf returns the content of a file a runner reads at the segment
// idx: the text written earlier in the command when it is known; nothing
// (today's class) when an earlier program may have changed it; else the
// file system's.
func (a *analyzer) contentOf(abs string, idx int) runnerFile {
	if w, ok := a.written[abs]; ok {
		if text, known := a.writtenContentAt(w, idx); known {
			return runnerFile{text: text, state: fileOK}
		}
		return runnerFile{state: fileBad, why: changedWhy}
	}
	if a.changedBefore(abs, idx) {
		return runnerFile{state: fileBad, why: changedWhy}
	}
	return a.readRunnerFile(abs)
}

// runnerContent is contentOf for the file abs that runner reads at the
// segment idx, with a file that cannot be judged recorded as the runner's
// problem (runnerProblem): the text is there only when the state is fileOK.
func (a *analyzer) runnerContent(idx int, runner, abs string) (string, fileState) {
	f := a.contentOf(abs, idx)
	if f.state == fileBad {
		a.runnerProblem(idx, runner, a.display(abs)+" "+f.why)
	}
	return f.text, f.state
}

// changedWhy says why a file changed earlier in the command is not judged
// by what is on disk now: sed -i … Makefile && make ran a recipe the
// guard never saw, at make's own class (rm -rf ~/.overseer at notify).
const changedWhy = "is changed earlier in this command: what it holds when it runs is not known"

// fileExists reports whether a file or directory exists.
func (a *analyzer) fileExists(abs string) bool {
	if !path.IsAbs(abs) {
		return false
	}
	_, err := fs.Stat(a.fileSystem(), fsName(abs))
	return err == nil
}

// runnerProblem records that a runner's file cannot be judged: confirm.
func (a *analyzer) runnerProblem(idx int, runner, what string) {
	cur := a.cur
	a.cur = idx
	a.add(guard.Finding{Check: "shell.runner-unread", Level: action.Confirm,
		Message: runner + " runs code the guard cannot judge: " + what})
	a.cur = cur
}

// contentOpts says how code a runner executes is judged.
type contentOpts struct {
	origin     Origin
	cwd        string // the directory it runs in; "" keeps the current one
	unresolved bool   // it has make syntax that could not be expanded
	outside    bool   // a file outside the working tree and the scratch directories (the person's own)
	args       []arg  // the positional parameters the code gets (sh FILE args…)
	hasArgs    bool
	bins       func(string) bool
	where      string // prefixed to the findings' messages
}

// runContent judges src as code the runner segment idx executes and folds
// the findings into the runner (see the rule at the top of this file).
func (a *analyzer) runContent(idx int, src string, o contentOpts) {
	if idx < 0 || idx >= len(a.out.Segments) || strings.TrimSpace(src) == "" {
		return
	}
	cur, cwd, known, vars, pipeIn, classes := a.cur, a.cwd, a.cwdKnown, a.vars, a.pipeIn, a.classes
	parseFailed, parseError, limited := a.out.ParseFailed, a.out.ParseError, a.limited
	pos, posKnown := a.pos, a.posKnown
	a.pos, a.posKnown = o.args, o.hasArgs
	if o.cwd != "" {
		a.cwd, a.cwdKnown = o.cwd, true
	}
	a.vars, a.pipeIn, a.classes = nil, false, nil
	nf, ns := len(a.out.Findings), len(a.out.Segments)
	a.nestedScript(src, o.origin, idx)
	inner := a.classes
	a.classes = classes
	a.cwd, a.cwdKnown, a.vars, a.pipeIn = cwd, known, vars, pipeIn
	a.out.ParseFailed, a.out.ParseError = parseFailed, parseError
	a.pos, a.posKnown = pos, posKnown
	a.cur = -1
	top := action.Auto
	kept := a.out.Findings[:nf]
	partly := false
	for _, f := range a.out.Findings[nf:] {
		if f.Check == "shell.too-complex" && !limited {
			// The content hit a bound of the analysis: what it runs is only
			// partly judged; the rest of the command is judged on.
			partly = true
			continue
		}
		if f, keep := foldFinding(f, o); keep {
			kept = append(kept, f)
			top = max(top, f.Level)
		}
	}
	a.out.Findings = kept
	a.limited = limited
	if len(a.out.Segments) > ns+maxRunnerSegments {
		partly = true
		a.out.Segments = a.out.Segments[:ns+maxRunnerSegments]
	}
	for _, c := range inner {
		for _, n := range c.names {
			check, level := c.check, c.level
			if check == "unknown-command" && (o.outside || o.bins != nil && o.bins(n)) {
				check, level = "project-program", action.Notify
			}
			a.class(check, level, n)
			top = max(top, level)
		}
	}
	a.cur = idx
	a.bump(top)
	if partly && !a.prov.partly {
		a.prov.partly = true
		a.add(guard.Finding{Check: "shell.runner-unread", Level: action.Confirm,
			Message: o.where + ": the code is too long or nested too deep to be judged whole"})
	}
	a.cur = cur
}

// foldFinding applies the rule to one finding of a runner's content.
func foldFinding(f guard.Finding, o contentOpts) (guard.Finding, bool) {
	if o.where != "" && f.Check != "shell.runner-unread" {
		f.Message = o.where + ": " + f.Message
	}
	if f.Level == action.Block || !computedFinding(f) {
		return f, true
	}
	if o.unresolved || o.outside || f.Check == "shell.rm-dynamic" || f.Check == "shell.write-dynamic" {
		return f, false
	}
	if f.Level > action.Confirm {
		f.Level, f.Hard = action.Confirm, false
	}
	return f, true
}

// computedFinding reports whether a finding only says that something is
// computed at run time.
func computedFinding(f guard.Finding) bool {
	switch f.Check {
	case "shell.obfuscated":
		return !strings.Contains(f.Message, "decoded") && !strings.Contains(f.Message, "downloaded") &&
			!strings.Contains(f.Message, "decode")
	case "shell.rm-dynamic":
		return !strings.Contains(f.Message, "if the variable is empty") && !strings.Contains(f.Message, "arrive on its input")
	case "shell.write-dynamic", "shell.unparseable":
		return true
	}
	return false
}

// provenance is the classify hook: it judges runners by the files they run,
// code fetched and run at once, and commands run through options. It
// reports true when it classified the segment itself.
func (a *analyzer) provenance(s *segCtx) bool {
	defer func() { a.cur = s.idx }()
	for _, w := range a.out.Segments[s.idx].Wrappers {
		if w == "npm exec" {
			a.fetchPackage(s, "npm exec", s.prog, false)
		}
	}
	switch s.name {
	case "make", "gmake":
		a.makeCmd(s)
	case "just":
		a.justCmd(s) // justfile.go
	case "task", "go-task":
		a.taskCmd(s) // taskfile.go
	case "nox", "invoke", "inv", "fab":
		a.pyRunner(s) // pyrunners.go
	case "tox":
		a.toxCmd(s) // pyrunners.go
	case "curl", "wget":
		a.toolrc(s) // toolrc.go
	case "npm", "yarn", "pnpm", "bun":
		a.packageCmd(s)
	case "npx", "bunx", "pnpx":
		a.npxCmd(s, s.name, s.args)
	case "go":
		a.goCmd(s)
	case "pip", "pip3", "uv", "uvx", "pipx", "cargo", "deno", "gem":
		a.installCmd(s)
	case "cmake":
		return a.cmakeCmd(s)
	case "vim", "vi", "nvim", "ex", "view", "gvim", "vimdiff", "evim", "gex", "exim":
		a.vimCmd(s)
	case "emacs", "emacsclient":
		return a.emacsCmd(s)
	case "zip":
		a.zipCmd(s)
	case "dc":
		return a.dcCmd(s)
	case "tar", "gtar", "bsdtar":
		a.tarExec(s)
	case "rsync":
		a.rsyncExec(s)
	case "ssh", "scp", "sftp", "autossh":
		a.sshOptions(s, s.args)
	case "sort", "gsort":
		a.sortExec(s)
	case "gdb":
		a.gdbCmd(s)
	case "script":
		a.scriptCmd(s)
	case "man", "mysql", "mariadb", "bat", "batcat":
		a.pagerExec(s)
	case "httpd":
		return a.busyboxHTTPD(s) // serve.go
	default:
		switch {
		case a.interpreter(s.name) == nil:
		case strings.HasPrefix(s.name, "python"):
			a.pythonPip(s)
		case strings.HasPrefix(s.name, "php"):
			return a.phpServer(s) // serve.go
		case strings.HasPrefix(s.name, "ruby"):
			return a.rubyHTTPD(s) // serve.go
		}
	}
	return false
}

// optionCode judges a command string a program runs through an option.
func (a *analyzer) optionCode(s *segCtx, x arg, what string) {
	if x.dyn {
		a.dynamicCode(x, what+" computed at run time: "+x.val)
		return
	}
	if strings.TrimSpace(x.val) == "" {
		return
	}
	a.nestedScript(x.val, OriginOption, s.idx)
	a.cur = s.idx
}

// --- shell scripts ---

// runStored judges running the file p (absolute) with a shell, by its
// content: asShell is true when a shell is named (sh FILE, source FILE);
// otherwise the file runs directly and is read only when it is a shell
// script. It reports whether the content was judged.
func (a *analyzer) runStored(p string, asShell bool, idx int) bool {
	if strings.HasPrefix(p, "~") {
		abs, ok := a.fileAbs(p)
		if !ok {
			return false
		}
		p = abs
	}
	if idx < 0 || !path.IsAbs(p) {
		return false
	}
	wf, written := a.written[p]
	if _, known := a.writtenContentAt(wf, idx); written && known {
		return false // its known text is not a shell script (runWritten judges those)
	}
	if written || a.changedBefore(p, idx) {
		// Changed earlier in the command (sed -i … r.sh && sh r.sh): what
		// runs is not known. A shell runs it whatever it is; a file run
		// directly is a script when it is one now, or does not exist yet
		// and is written by a redirection (cat "$X" > ov && ./ov): a
		// program the command builds (go build -o app) stays today's
		// class.
		f := a.readRunnerFile(p)
		script := asShell || written && f.state == fileMissing ||
			f.state == fileOK && strings.IndexByte(f.text, 0) < 0 && !strings.HasPrefix(f.text, "\x7fELF")
		if !script {
			return false
		}
		a.runnerProblem(idx, a.display(p), "the file "+changedWhy)
		return true
	}
	f := a.readRunnerFile(p)
	switch f.state {
	case fileMissing:
		return false
	case fileBad:
		a.runnerProblem(idx, a.display(p), "the file "+f.why)
		return true
	}
	if strings.IndexByte(f.text, 0) >= 0 || strings.HasPrefix(f.text, "\x7fELF") {
		return false // a program, not a script
	}
	if !asShell && !shellScript(f.text, a.r) {
		return false // another language: not read
	}
	w := a.where(p, true)
	o := contentOpts{origin: OriginScript, where: a.display(p), outside: w == whereHome || w == whereSystem}
	o.args = a.scriptArgs(p, idx)
	o.hasArgs = len(o.args) > 0
	a.runContent(idx, f.text, o)
	return true
}

// scriptArgs returns the arguments a script gets: those after the script's
// path among the segment's arguments (all of them when the script is the
// program itself).
func (a *analyzer) scriptArgs(p string, idx int) []arg {
	sg := a.out.Segments[idx]
	rest := sg.Args
	for i, v := range sg.Args {
		if q, ok := a.fileAbs(v); ok && q == p && !strings.HasPrefix(v, "-") {
			rest = sg.Args[i+1:]
			break
		}
	}
	out := make([]arg, 0, len(rest))
	for _, v := range rest {
		out = append(out, arg{val: v, dyn: sg.Dynamic && strings.ContainsAny(v, "$`")})
	}
	return out
}

// metaOnly are programs that do not change a file's content.
var metaOnly = map[string]bool{"chmod": true, "chown": true, "chgrp": true, "touch": true, "ls": true, "cat": true,
	"stat": true, "file": true, "head": true, "tail": true, "wc": true, "test": true, "[": true, "[[": true,
	"echo": true, "printf": true, "less": true, "more": true, "grep": true, "diff": true, "bash": true, "sh": true,
	"source": true, ".": true, "shellcheck": true, "dos2unix": false, "realpath": true, "readlink": true,
	// Wrappers whose command is a segment of its own, judged as itself
	// (busybox tar xf a.tar: the wrapper's words name a.tar too).
	"busybox": true}

// changedBefore reports whether a program before the segment idx names the
// file p and may change its content (cp x p, sed -i … p, git checkout p).
func (a *analyzer) changedBefore(p string, idx int) bool {
	return a.changedBetween(p, 0, idx)
}

// changedBetween is changedBefore for the segments from to idx (excluded).
func (a *analyzer) changedBetween(p string, from, idx int) bool {
	for i := max(from, 0); i < idx && i < len(a.out.Segments); i++ {
		sg := &a.out.Segments[i]
		if metaOnly[sg.Name] {
			continue
		}
		if slices.Contains(sg.changes, p) || unseenIn(sg, p) {
			return true
		}
		if slices.Contains(sg.looks, p) {
			continue // read, and nothing says it is written (cp Makefile Makefile.bak)
		}
		for _, x := range sg.Args {
			if x == "" || x[0] == '-' {
				continue
			}
			if q, ok := a.fileAbs(x); ok && q == p {
				return true
			}
		}
	}
	return false
}

// --- make ---

// makeCmd judges make by the recipes it runs.
func (a *analyzer) makeCmd(s *segCtx) {
	args := s.args
	dir, dirKnown := a.cwd, a.cwdKnown
	var files []arg
	var evals []string
	var goals []arg
	cmdVars := map[string]arg{}
	dry := false
	for j := 0; j < len(args); j++ {
		x := args[j]
		v := x.val
		next := func() (arg, bool) {
			if j+1 < len(args) {
				j++
				return args[j], true
			}
			return arg{}, false
		}
		if x.dyn {
			if strings.HasPrefix(v, "-") {
				continue
			}
			goals = append(goals, x)
			continue
		}
		switch {
		case v == "--":
			continue
		case strings.HasPrefix(v, "--"):
			name, val, eq := strings.Cut(v, "=")
			value := func() (arg, bool) {
				if eq {
					return arg{val: val}, true
				}
				return next()
			}
			switch name {
			case "--file", "--makefile":
				if y, ok := value(); ok {
					files = append(files, y)
				}
			case "--directory":
				if y, ok := value(); ok {
					dir, dirKnown = a.makeDir(dir, dirKnown, y)
				}
			case "--eval":
				if y, ok := value(); ok {
					if y.dyn {
						a.dynamicCode(y, "make --eval evaluates makefile text computed at run time")
						return
					}
					evals = append(evals, y.val)
				}
			case "--include-dir", "--old-file", "--assume-old", "--what-if", "--new-file", "--assume-new":
				if !eq {
					next()
				}
			case "--just-print", "--dry-run", "--recon", "--question", "--touch":
				dry = true
			case "--version", "--help":
				return
			}
		case len(v) > 1 && v[0] == '-':
			for k := 1; k < len(v); k++ {
				c := v[k]
				rest := v[k+1:]
				val := func() (arg, bool) {
					if rest != "" {
						return arg{val: rest}, true
					}
					return next()
				}
				switch c {
				case 'f':
					if y, ok := val(); ok {
						files = append(files, y)
					}
				case 'C':
					if y, ok := val(); ok {
						dir, dirKnown = a.makeDir(dir, dirKnown, y)
					}
				case 'E':
					if y, ok := val(); ok {
						if y.dyn {
							a.dynamicCode(y, "make --eval evaluates makefile text computed at run time")
							return
						}
						evals = append(evals, y.val)
					}
				case 'I', 'o', 'W':
					val()
				case 'j', 'l':
					if rest == "" && j+1 < len(args) && isNumber(args[j+1].val) {
						j++
					}
				case 'n', 'q', 't':
					dry = true
					continue
				case 'v', 'h':
					return
				default:
					continue
				}
				break
			}
		case isAssignment(strings.Replace(v, ":=", "=", 1)) || strings.Contains(v, "+=") && isAssignment(strings.Replace(v, "+=", "=", 1)):
			name, val, _ := strings.Cut(v, "=")
			name = strings.TrimRight(name, ":+?")
			cmdVars[name] = arg{val: val}
		default:
			goals = append(goals, x)
		}
	}
	if !dirKnown || !a.runnerBudget(s.idx, "make") {
		return
	}
	m := newMakefile(dir)
	m.read = func(name string) (string, bool, string) {
		p := name
		if !path.IsAbs(p) {
			p = path.Join(dir, p)
		}
		f := a.contentOf(p, s.idx)
		switch f.state {
		case fileOK:
			return f.text, true, ""
		case fileBad:
			return "", false, f.why
		}
		return "", false, ""
	}
	m.exists = func(name string) bool {
		if !path.IsAbs(name) {
			name = path.Join(dir, name)
		}
		return a.fileExists(name)
	}
	for k, v := range cmdVars {
		m.setCmdVar(k, v.val, v.dyn)
	}
	label := "make"
	for i, e := range evals {
		m.parse("--eval#"+itoa(i+1), e)
	}
	read := false
	// MAKEFILES: makefiles make reads before the others (envvars.go).
	for _, fx := range a.makefilesEnv() {
		text, name, ok := a.makefileText(s, fx, dir)
		if !ok {
			return
		}
		if text != "\x00missing" {
			m.parse(name, text)
			read = true
		}
	}
	if len(files) == 0 {
		for _, n := range []string{"GNUmakefile", "makefile", "Makefile"} {
			f := a.contentOf(path.Join(dir, n), s.idx)
			if f.state == fileBad {
				a.runnerProblem(s.idx, "make", n+" "+f.why)
				return
			}
			if f.state == fileOK {
				label = a.display(path.Join(dir, n))
				m.parse(label, f.text)
				read = true
				break
			}
		}
	}
	for _, fx := range files {
		text, name, ok := a.makefileText(s, fx, dir)
		if !ok {
			return
		}
		if text == "\x00missing" {
			continue
		}
		label = name
		m.parse(name, text)
		read = true
	}
	if !read && len(evals) == 0 {
		return // no makefile: make's built-in rules only
	}
	if len(m.problems) > 0 {
		a.runnerProblem(s.idx, "make", label+": "+strings.Join(m.problems, "; "))
	}
	if p := m.shellProblem(a.r.shells.has); p != "" {
		a.runnerProblem(s.idx, "make", label+": "+p)
		return
	}
	all := false
	var goalNames []string
	for _, g := range goals {
		if g.dyn {
			all = true
			continue
		}
		goalNames = append(goalNames, g.val)
	}
	jobs, truncated := m.jobs(goalNames, all)
	if truncated {
		a.runnerProblem(s.idx, "make", label+": it has more targets or recipe lines than the guard follows")
	}
	opts := contentOpts{origin: OriginMake, cwd: dir}
	budget := len(a.out.Segments) + maxRunnerSegments
	for _, j := range m.parseCmds {
		opts.unresolved, opts.where = j.unresolved, "make runs "+j.where+" in "+label
		a.runContent(s.idx, j.text, opts)
	}
	for _, j := range jobs {
		if dry && !j.plus {
			continue
		}
		if len(a.out.Segments) > budget {
			a.runnerProblem(s.idx, "make", label+": it runs more commands than the guard judges")
			break
		}
		opts.unresolved, opts.where = j.unresolved || all, "make runs "+j.where
		a.runContent(s.idx, j.text, opts)
	}
	if m.hasEval && !dry {
		for _, l := range m.defines {
			text, _ := stripRecipePrefix(l.text)
			e := m.expand(text, map[string]string{})
			opts.unresolved, opts.where = true, "make may run "+l.file+":"+itoa(l.line)
			a.runContent(s.idx, e.text, opts)
		}
	}
}

// makeDir applies make -C.
func (a *analyzer) makeDir(dir string, known bool, y arg) (string, bool) {
	if y.dyn || !known && !path.IsAbs(y.val) && !strings.HasPrefix(y.val, "~") {
		return dir, false
	}
	cwd, ck := a.cwd, a.cwdKnown
	a.cwd, a.cwdKnown = dir, known
	p, ok := a.fileAbs(y.val)
	a.cwd, a.cwdKnown = cwd, ck
	return p, ok
}

// makefileText returns the text of a makefile given with -f. ok is false
// when the makefile cannot be judged (already reported). A missing file is
// "\x00missing".
func (a *analyzer) makefileText(s *segCtx, fx arg, dir string) (text, name string, ok bool) {
	if fx.dyn {
		if t, static := a.substText(fx); static {
			return t, "a makefile given by " + clip(fx.val, 40), true
		}
		a.dynamicCode(fx, "make reads a makefile computed at run time: "+fx.val)
		return "", "", false
	}
	switch fx.val {
	case "-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
		in := a.stdinOf(s.c.redirs)
		switch {
		case in.kind == 'd' && in.dyn:
			a.dynamicCode(arg{val: "<<", sub: in.sub}, "make reads a makefile computed at run time from a here-document")
			return "", "", false
		case in.kind == 'd':
			return in.text, "the makefile on standard input", true
		case in.kind == 'f':
			fx = in.file
			if fx.dyn {
				a.dynamicCode(fx, "make reads a makefile computed at run time: "+fx.val)
				return "", "", false
			}
		case s.c.in != nil:
			return s.c.in.text, "the makefile piped into make", true
		case a.pipeIn:
			a.add(guard.Finding{Check: "shell.obfuscated", Level: action.Approve, Hard: true,
				Message: "make reads a makefile from a pipe whose content is computed at run time"})
			return "", "", false
		default:
			return "\x00missing", "", true
		}
	}
	p := fx.val
	if !path.IsAbs(p) && !strings.HasPrefix(p, "~") {
		p = path.Join(dir, p)
	}
	abs, known := a.fileAbs(p)
	if !known {
		return "\x00missing", "", true
	}
	text, st := a.runnerContent(s.idx, "make", abs)
	switch st {
	case fileBad:
		return "", "", false
	case fileMissing:
		return "\x00missing", "", true
	}
	return text, a.display(abs), true
}

// substText returns the static text a process substitution argument
// produces (make -f <(printf …)).
func (a *analyzer) substText(x arg) (string, bool) {
	if !strings.HasPrefix(x.val, "<(") || x.sub[1] <= x.sub[0] || x.sub[1] > len(a.out.Segments) {
		return "", false
	}
	var b strings.Builder
	for i := x.sub[0]; i < x.sub[1]; i++ {
		s := a.out.Segments[i]
		if s.flags&fText == 0 || s.flags&(fDownload|fDecode) != 0 {
			return "", false
		}
		b.WriteString(s.text)
	}
	return b.String(), true
}

func isNumber(s string) bool {
	return isDigits(s)
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for i > 0 {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
	}
	return string(b)
}

// --- package.json scripts ---

// pkgJSON is what the guard reads of a package.json.
type pkgJSON struct {
	Scripts map[string]any `json:"scripts"`
	Deps    map[string]any `json:"dependencies"`
	DevDeps map[string]any `json:"devDependencies"`
	OptDeps map[string]any `json:"optionalDependencies"`
	Peer    map[string]any `json:"peerDependencies"`
}

var (
	npmRun     = map[string]bool{"run": true, "run-script": true, "rum": true, "urn": true}
	npmInstall = map[string]bool{"install": true, "i": true, "in": true, "ins": true, "inst": true, "insta": true,
		"instal": true, "isnt": true, "isnta": true, "isntal": true, "isntall": true, "add": true, "ci": true,
		"clean-install": true, "ic": true, "install-clean": true, "isntall-clean": true,
		"install-test": true, "it": true, "install-ci-test": true, "cit": true}
	// Commands of yarn, pnpm and bun that are not script names.
	pkgBuiltins = map[string]bool{"add": true, "audit": true, "autoclean": true, "bin": true, "cache": true,
		"check": true, "config": true, "create": true, "dedupe": true, "dlx": true, "exec": true, "explain": true,
		"generate-lock-entry": true, "global": true, "help": true, "import": true, "info": true, "init": true,
		"install": true, "i": true, "licenses": true, "link": true, "list": true, "ls": true, "login": true,
		"logout": true, "node": true, "outdated": true, "owner": true, "pack": true, "patch": true, "plugin": true,
		"policies": true, "publish": true, "rebuild": true, "remove": true, "rm": true, "search": true, "set": true,
		"tag": true, "team": true, "unlink": true, "unplug": true, "up": true, "update": true, "upgrade": true,
		"upgrade-interactive": true, "version": true, "versions": true, "why": true, "workspace": true,
		"workspaces": true, "store": true, "prune": true, "fetch": true, "env": true, "setup": true, "root": true,
		"doctor": true, "server": true, "deploy": true, "x": true, "build": false, "pm": true, "upgrade-all": true,
		"constraints": true, "npm": true, "stage": true, "dev": false, "test": false, "start": false}
	pkgValueOpts = map[string]bool{"--prefix": true, "-C": true, "--dir": true, "--cwd": true, "-w": true,
		"--workspace": true, "--filter": true, "-F": true, "--loglevel": true, "--registry": true, "--cache": true,
		"--userconfig": true, "--script-shell": true, "--tag": true, "--otp": true}
	lifecycleInstall = []string{"preinstall", "install", "postinstall", "prepublish", "preprepare", "prepare", "postprepare"}
)

// packageCmd judges npm, yarn, pnpm and bun by the package.json scripts
// they run, and package installs from a VCS or a URL.
func (a *analyzer) packageCmd(s *segCtx) {
	runner := s.name
	var ops []arg
	var after []arg // after "--"
	dir := ""
	dirArg := arg{}
	hasDir := false
	ignoreScripts, scoped := false, false
	args := s.args
	for j := 0; j < len(args); j++ {
		x := args[j]
		v := x.val
		if x.dyn {
			ops = append(ops, x)
			continue
		}
		if v == "--" {
			after = args[j+1:]
			break
		}
		if len(v) > 1 && v[0] == '-' && len(ops) == 0 || len(v) > 1 && v[0] == '-' && runner == "npm" {
			name, val, eq := strings.Cut(v, "=")
			if name == "--ignore-scripts" {
				ignoreScripts = val != "false"
			}
			if pkgValueOpts[name] {
				y := arg{val: val}
				if !eq {
					if j+1 >= len(args) {
						continue
					}
					j++
					y = args[j]
				}
				switch name {
				case "--prefix", "-C", "--dir", "--cwd":
					dirArg, hasDir = y, true
				case "-w", "--workspace", "--filter", "-F":
					if !y.dyn && (strings.HasPrefix(y.val, ".") || strings.Contains(y.val, "/")) && name != "--filter" && name != "-F" {
						dirArg, hasDir = y, true
					} else {
						scoped = true
					}
				}
			}
			if name == "-r" || name == "--recursive" || name == "--workspaces" || name == "-ws" {
				scoped = true
			}
			continue
		}
		ops = append(ops, x)
	}
	if hasDir {
		if dirArg.dyn {
			return
		}
		p, ok := a.fileAbs(dirArg.val)
		if !ok {
			return
		}
		dir = p
	} else if a.cwdKnown {
		dir = a.cwd
	}
	sub := ""
	if len(ops) > 0 {
		if ops[0].dyn {
			return
		}
		sub = ops[0].val
	}
	// Installs of packages from a VCS or a URL, and create/init/dlx/exec.
	switch {
	case (runner == "npm" || runner == "pnpm" || runner == "yarn" || runner == "bun") && (sub == "create" || sub == "init" && len(ops) > 1 && runner != "bun" || runner == "bun" && sub == "create"):
		if len(ops) > 1 && !ops[1].dyn && !strings.HasPrefix(ops[1].val, "-") {
			a.add(guard.Finding{Check: "shell.fetch-exec", Level: action.Confirm,
				Message: runner + " " + sub + " " + ops[1].val + " fetches a package from the registry and runs it at once"})
		}
		return
	case runner == "npm" && (sub == "exec" || sub == "x"):
		a.npxCmd(s, "npm "+sub, args[indexOf(args, ops[0])+1:])
		return
	case (runner == "pnpm" || runner == "yarn") && sub == "dlx", runner == "bun" && sub == "x":
		a.npxCmd(s, runner+" "+sub, args[indexOf(args, ops[0])+1:])
		return
	}
	if sub == "add" || npmInstall[sub] || (runner == "yarn" || runner == "pnpm" || runner == "bun") && (sub == "install" || sub == "i") {
		for _, x := range ops[1:] {
			if !x.dyn && vcsPackage(x.val) {
				a.add(guard.Finding{Check: "shell.fetch-exec", Level: action.Confirm,
					Message: runner + " " + sub + " installs " + x.val + " from a VCS or a URL; its install scripts run at once"})
			}
		}
	}
	if a.pkgConfig(s, runner, sub, ops, dir) {
		return
	}
	if dir == "" || scoped {
		return
	}
	var names []string
	var extra []arg
	runScript := func(name string, rest []arg) {
		names = []string{"pre" + name, name, "post" + name}
		if ignoreScripts {
			names = []string{name}
		}
		extra = rest
	}
	switch runner {
	case "npm":
		switch {
		case npmRun[sub] && len(ops) > 1:
			runScript(ops[1].val, after)
		case sub == "test" || sub == "t" || sub == "tst" || sub == "start" || sub == "stop" || sub == "restart":
			n := map[string]string{"t": "test", "tst": "test"}[sub]
			if n == "" {
				n = sub
			}
			runScript(n, after)
		case npmInstall[sub] && sub != "add" && (len(ops) == 1 || sub == "ci" || sub == "clean-install" || sub == "ic" || sub == "install-clean" || sub == "cit" || sub == "install-ci-test"):
			if !ignoreScripts {
				names = lifecycleInstall
				if strings.Contains(sub, "test") || sub == "it" || sub == "cit" {
					names = append(names, "pretest", "test", "posttest")
				}
			}
		case sub == "pack" || sub == "publish":
			if !ignoreScripts {
				names = []string{"prepublishOnly", "prepack", "prepare", "postpack", "publish", "postpublish"}
			}
		case sub == "version" && len(ops) > 1:
			if !ignoreScripts {
				names = []string{"preversion", "version", "postversion"}
			}
		}
	default:
		switch {
		case sub == "" && runner == "yarn", (sub == "install" || sub == "i") && len(ops) == 1:
			if !ignoreScripts {
				names = lifecycleInstall
			}
		case sub == "run" || sub == "run-script":
			if len(ops) > 1 {
				rest := args[indexOf(args, ops[1])+1:]
				if runner == "npm" {
					rest = after
				}
				runScript(ops[1].val, rest)
			}
		case sub == "test" && runner == "bun":
			// bun's own test runner.
		case sub == "t" || sub == "tst":
			runScript("test", args[indexOf(args, ops[0])+1:])
		case !pkgBuiltins[sub] && sub != "":
			runScript(sub, args[indexOf(args, ops[0])+1:])
		}
	}
	if len(names) == 0 {
		return
	}
	if !a.runnerBudget(s.idx, runner) {
		return
	}
	pj, pdir, st, why := a.findPackageJSON(dir, s.idx)
	switch st {
	case fileMissing:
		return
	case fileBad:
		a.runnerProblem(s.idx, runner, why)
		return
	}
	bins := func(name string) bool { return a.localBin(pdir, name) || pj.dep(name) }
	main := ""
	if len(names) == 3 || len(names) == 1 {
		main = names[len(names)/2]
	}
	for _, n := range names {
		v, ok := pj.Scripts[n]
		if !ok {
			if n == "start" && runner == "npm" && a.fileExists(path.Join(pdir, "server.js")) {
				v, ok = "node server.js", true
			} else {
				continue
			}
		}
		text, isStr := v.(string)
		if !isStr {
			continue
		}
		if n == main && len(extra) > 0 {
			text += " " + quoteArgs(extra)
		}
		a.runContent(s.idx, text, contentOpts{origin: OriginPackage, cwd: pdir, bins: bins,
			where: runner + " runs the script \"" + clip(n, 40) + "\" of " + a.display(path.Join(pdir, "package.json"))})
	}
}

func indexOf(args []arg, x arg) int {
	for i := range args {
		if args[i].val == x.val && args[i].dyn == x.dyn {
			return i
		}
	}
	return len(args) - 1
}

// quoteArgs quotes static arguments for the shell; computed ones are kept
// as written.
func quoteArgs(args []arg) string {
	parts := make([]string, 0, len(args))
	for _, x := range args {
		if x.dyn {
			parts = append(parts, x.val)
			continue
		}
		q, err := syntax.Quote(x.val, syntax.LangBash)
		if err != nil {
			q = "\"${ARG}\""
		}
		parts = append(parts, q)
	}
	return strings.Join(parts, " ")
}

func (p *pkgJSON) dep(name string) bool {
	for _, m := range []map[string]any{p.Deps, p.DevDeps, p.OptDeps, p.Peer} {
		if _, ok := m[name]; ok {
			return true
		}
	}
	return false
}

// pkgConfig judges the sub-commands that change what later runs of the
// package manager execute without naming the file they write: npm pkg set
// scripts.test=… (package.json) and npm config set script-shell … (an
// .npmrc). It reports whether the segment was one.
func (a *analyzer) pkgConfig(s *segCtx, runner, sub string, ops []arg, dir string) bool {
	verb := ""
	if len(ops) > 1 && !ops[1].dyn {
		verb = ops[1].val
	}
	switch {
	case sub == "pkg" && (verb == "set" || verb == "delete" || verb == "fix"), sub == "set-script",
		runner == "bun" && sub == "pm" && verb == "pkg":
		// package.json changes: a script run later in the command is not
		// the one on disk now.
		if dir == "" {
			return true
		}
		p := path.Join(dir, "package.json")
		if _, pdir, st, _ := a.findPackageJSON(dir, s.idx); st != fileMissing && pdir != "" {
			p = path.Join(pdir, "package.json")
		}
		a.markWritten(p, "", false)
		if runner == "npm" && (sub == "set-script" || verb == "set") {
			a.pkgSetLater(s, sub, ops, p) // laterrun.go: the scripts it sets run at the next install
		}
		return true
	case sub == "config" && (verb == "set" || verb == "delete" || verb == "rm" || verb == "edit"),
		sub == "set" && runner == "npm":
		// npm config set script-shell /tmp/x.sh writes ~/.npmrc (or the
		// project's .npmrc): every later npm command runs it.
		kv := ops[1:]
		if sub == "config" {
			kv = ops[2:]
		}
		for j := 0; j < len(kv); j++ {
			if kv[j].dyn {
				a.add(guard.Finding{Check: "shell.env-config", Level: action.Confirm,
					Message: runner + " " + sub + " sets a configuration key computed at run time"})
				continue
			}
			k, v, eq := strings.Cut(kv[j].val, "=")
			if !eq && j+1 < len(kv) {
				j++
				v = kv[j].val
			}
			name := "npm_config_" + strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, "--")), "-", "_")
			if a.r.envVar(name) == nil {
				continue
			}
			a.add(guard.Finding{Check: "shell.env-config", Level: action.Confirm,
				Message: runner + " " + sub + " " + k + " changes what every later " + runner + " command runs"})
			if p, ok := a.fileAbs(v); ok {
				a.effectFact(p, action.PathRead) // names it, does not change it (changedBefore)
			}
			a.envAssign(name, envVal{val: v, dyn: j < len(kv) && kv[j].dyn})
			a.cur = s.idx
		}
		return true
	}
	return false
}

// findPackageJSON finds the package.json that governs dir (dir or the
// nearest parent that has one).
func (a *analyzer) findPackageJSON(dir string, idx int) (*pkgJSON, string, fileState, string) {
	for d, n := dir, 0; n < 64; n++ {
		f := a.contentOf(path.Join(d, "package.json"), idx)
		switch f.state {
		case fileBad:
			return nil, d, fileBad, a.display(path.Join(d, "package.json")) + " " + f.why
		case fileOK:
			var pj pkgJSON
			if err := json.Unmarshal([]byte(f.text), &pj); err != nil {
				return nil, d, fileBad, a.display(path.Join(d, "package.json")) + " is not valid JSON (" + err.Error() + ")"
			}
			return &pj, d, fileOK, ""
		}
		if d == "/" {
			break
		}
		d = path.Dir(d)
	}
	return nil, "", fileMissing, ""
}

// localBin reports whether name is a program of node_modules/.bin in dir or
// a parent.
func (a *analyzer) localBin(dir, name string) bool {
	if dir == "" || name == "" || strings.ContainsAny(name, "/ \t") {
		return false
	}
	key := dir + "\x00" + name
	if v, ok := a.prov.bins[key]; ok {
		return v
	}
	found := false
	for d, n := dir, 0; n < 64; n++ {
		if a.fileExists(path.Join(d, "node_modules", ".bin", name)) {
			found = true
			break
		}
		if d == "/" {
			break
		}
		d = path.Dir(d)
	}
	if a.prov.bins == nil {
		a.prov.bins = map[string]bool{}
	}
	a.prov.bins[key] = found
	return found
}

// vcsPackage reports whether an install argument names a package in a VCS
// or at a URL rather than in the registry.
func vcsPackage(v string) bool {
	l := strings.ToLower(v)
	for _, p := range []string{"git+", "git://", "github:", "gitlab:", "bitbucket:", "gist:", "http://", "https://", "hg+", "svn+", "bzr+", "ssh://"} {
		if strings.HasPrefix(l, p) || strings.Contains(l, "@"+p) || strings.Contains(l, " @ "+p) {
			return true
		}
	}
	if strings.Contains(l, "@git+") || strings.Contains(l, "@https://") || strings.Contains(l, "@http://") {
		return true
	}
	// owner/repo (GitHub shorthand); not a scope, a path or a file.
	if strings.Count(v, "/") == 1 && !strings.HasPrefix(v, "@") && !strings.HasPrefix(v, ".") &&
		!strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "~") && !strings.Contains(v, ":") &&
		!strings.HasSuffix(l, ".tgz") && !strings.HasSuffix(l, ".tar.gz") && !strings.HasPrefix(v, "-") {
		return true
	}
	return false
}

// --- code fetched and run at once ---

// npxCmd judges npx, bunx, pnpx, npm exec, pnpm dlx, yarn dlx, bun x: the
// package they run is fetched from the registry unless it is a program of
// the project.
func (a *analyzer) npxCmd(s *segCtx, runner string, args []arg) {
	var pkgs []arg
	noInstall := false
	var call *arg
	j := 0
	for ; j < len(args); j++ {
		x := args[j]
		v := x.val
		if x.dyn {
			break
		}
		if v == "--" {
			j++
			break
		}
		if !strings.HasPrefix(v, "-") || v == "-" {
			break
		}
		name, val, eq := strings.Cut(v, "=")
		switch name {
		case "-p", "--package":
			if eq {
				pkgs = append(pkgs, arg{val: val})
			} else if j+1 < len(args) {
				j++
				pkgs = append(pkgs, args[j])
			}
		case "-c", "--call", "--shell-mode":
			if eq {
				y := arg{val: val}
				call = &y
			} else if j+1 < len(args) {
				j++
				y := args[j]
				call = &y
			}
		case "--no", "--no-install", "--offline", "--prefer-offline":
			noInstall = name != "--prefer-offline" || noInstall
		case "-w", "--workspace", "--cache", "--registry", "--userconfig", "--prefix", "--node-options":
			if !eq {
				j++
			}
		}
	}
	if len(pkgs) == 0 && j < len(args) && call == nil {
		pkgs = append(pkgs, args[j])
	}
	if len(pkgs) == 1 && call == nil && j < len(args) && !args[j].dyn && args[j].val == "serve" {
		a.nodeServe(args[j+1:]) // serve.go: a static file server
	}
	dir := ""
	if a.cwdKnown {
		dir = a.cwd
	}
	alwaysFetch := strings.HasSuffix(runner, "dlx") || runner == "pnpx"
	for _, p := range pkgs {
		if noInstall && !alwaysFetch {
			continue // runs only what is installed
		}
		a.fetchPackage(s, runner, p, alwaysFetch)
	}
	if call != nil {
		if call.dyn {
			a.dynamicCode(*call, runner+" -c runs a string computed at run time: "+call.val)
			return
		}
		a.runContent(s.idx, call.val, contentOpts{origin: OriginPackage, bins: func(n string) bool { return a.localBin(dir, n) },
			where: runner + " -c"})
	}
}

// fetchPackage judges running the package spec p: confirm unless it is a
// local path or a program of the project's node_modules/.bin (without a
// version, which could differ from the installed one).
func (a *analyzer) fetchPackage(s *segCtx, runner string, p arg, always bool) {
	cur := a.cur
	a.cur = s.idx
	defer func() { a.cur = cur }()
	if p.dyn {
		a.add(guard.Finding{Check: "shell.fetch-exec", Level: action.Confirm,
			Message: runner + " runs a package computed at run time, which may be fetched from the registry: " + p.val})
		return
	}
	v := p.val
	if v == "" || strings.HasPrefix(v, ".") || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "file:") {
		return
	}
	name, version := v, ""
	if i := strings.LastIndexByte(v, '@'); i > 0 {
		name, version = v[:i], v[i+1:]
	}
	bin := name
	if strings.HasPrefix(bin, "@") {
		if _, b, ok := strings.Cut(bin, "/"); ok {
			bin = b
		}
	}
	if !always && version == "" && !vcsPackage(v) && a.cwdKnown && a.localBin(a.cwd, bin) {
		return
	}
	why := "fetches the package " + v + " from the registry and runs it at once"
	if vcsPackage(v) {
		why = "fetches " + v + " from a VCS or a URL and runs it at once"
	}
	a.add(guard.Finding{Check: "shell.fetch-exec", Level: action.Confirm, Message: runner + " " + why})
}

// goCmd judges go run MODULE@version (fetched and run) and -toolexec/-exec.
func (a *analyzer) goCmd(s *segCtx) {
	ops := operandsOf(s.args, "-C", "-o", "-p", "-tags", "-ldflags", "-gcflags", "-asmflags", "-mod", "-modfile",
		"-overlay", "-pgo", "-buildmode", "-compiler", "-gccgoflags", "-installsuffix", "-pkgdir", "-exec", "-toolexec",
		"-run", "-bench", "-count", "-timeout", "-coverprofile", "-cpu", "-parallel", "-covermode", "-coverpkg", "-vet")
	for _, name := range []string{"-toolexec", "-exec", "--toolexec", "--exec"} {
		if x, ok := optValue(s.args, name); ok {
			a.optionCode(s, x, "go "+name+" runs a command")
		}
	}
	a.goOutputs(s, ops)
	if len(ops) > 0 && !ops[0].dyn && ops[0].val == "generate" {
		i := indexOf(s.args, ops[0])
		a.goGenerate(s, append(slices.Clone(s.args[:i]), s.args[i+1:]...)) // gogenerate.go
		return
	}
	if len(ops) < 2 || ops[0].dyn || ops[0].val != "run" {
		return
	}
	p := ops[1]
	if p.dyn || strings.HasPrefix(p.val, ".") || strings.HasPrefix(p.val, "/") || !strings.Contains(p.val, "@") {
		return
	}
	a.add(guard.Finding{Check: "shell.fetch-exec", Level: action.Confirm,
		Message: "go run fetches the module " + p.val + " and runs it at once"})
}

var pipValueOpts = []string{"-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f", "--find-links",
	"-t", "--target", "--prefix", "--root", "--src", "--upgrade-strategy", "--python-version", "--platform",
	"--implementation", "--abi", "--no-binary", "--only-binary", "--progress-bar", "--log", "--proxy", "--retries",
	"--timeout", "--exists-action", "--trusted-host", "--cert", "--client-cert", "--cache-dir", "--config-settings",
	"-C", "--global-option", "--report", "--python", "-p", "--with", "--from", "--spec", "--index", "--default-index",
	"--directory", "--project", "--branch", "--tag", "--rev", "--root", "--features", "--bin", "--example",
	"--target-dir", "--profile", "--registry", "--version", "--vers", "-j", "--jobs", "--config", "--locked-version"}

// installCmd judges pip, uv, uvx, pipx, cargo, deno and gem: packages from a
// VCS or a URL, and tools fetched and run at once.
func (a *analyzer) installCmd(s *segCtx) {
	ops := operandsOf(s.args, pipValueOpts...)
	sub := func(i int) string {
		if i < len(ops) && !ops[i].dyn {
			return ops[i].val
		}
		return ""
	}
	fetchRun := func(what string) {
		a.add(guard.Finding{Check: "shell.fetch-exec", Level: action.Confirm, Message: what})
	}
	switch s.name {
	case "uvx":
		if len(ops) > 0 {
			fetchRun("uvx fetches the tool " + ops[0].val + " and runs it at once")
		}
		return
	case "uv":
		switch {
		case sub(0) == "tool" && (sub(1) == "run" || sub(1) == "x") && len(ops) > 2:
			fetchRun("uv tool run fetches the tool " + ops[2].val + " and runs it at once")
			return
		case sub(0) == "pip" && sub(1) == "install", sub(0) == "add", sub(0) == "tool" && sub(1) == "install":
			a.pipInstall(s, "uv "+sub(0), s.args)
		}
		return
	case "pipx":
		switch sub(0) {
		case "run":
			if len(ops) > 1 {
				fetchRun("pipx run fetches " + ops[1].val + " and runs it at once")
			}
		case "install", "inject":
			a.pipInstall(s, "pipx "+sub(0), s.args)
		}
		return
	case "pip", "pip3":
		if sub(0) == "install" {
			a.pipInstall(s, s.name+" install", s.args)
		}
		return
	case "cargo":
		if sub(0) == "install" {
			if x, ok := optValue(s.args, "--git"); ok {
				fetchRun("cargo install --git fetches " + x.val + " and builds it (its build script runs at once)")
			}
		}
		return
	case "deno":
		if sub(0) == "run" || sub(0) == "install" || sub(0) == "x" || sub(0) == "compile" {
			for _, x := range ops[1:] {
				if x.dyn {
					break
				}
				l := strings.ToLower(x.val)
				if strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "npm:") || strings.HasPrefix(l, "jsr:") {
					fetchRun("deno " + sub(0) + " fetches " + x.val + " and runs it at once")
				}
				break
			}
		}
		return
	case "gem":
		switch sub(0) {
		case "install":
			for _, x := range ops[1:] {
				if !x.dyn && (strings.Contains(x.val, "://") || strings.HasPrefix(x.val, "git+")) {
					fetchRun("gem install fetches " + x.val + " from a URL")
				}
			}
		case "specific_install":
			fetchRun("gem specific_install fetches a gem from a VCS or a URL")
		}
	}
}

// pythonPip judges python -m pip install.
func (a *analyzer) pythonPip(s *segCtx) {
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		if x.dyn || !strings.HasPrefix(x.val, "-") || strings.HasPrefix(x.val, "--") {
			return
		}
		// A group of one-letter options: -m MOD, -mMOD, -Im MOD; -W and -X
		// take a value (-W ignore), -c ends them with code.
		mod, rest, found := "", s.args[j+1:], false
		for k := 1; k < len(x.val) && !found; k++ {
			switch x.val[k] {
			case 'm':
				found = true
				if mod = x.val[k+1:]; mod == "" {
					if len(rest) == 0 || rest[0].dyn {
						return
					}
					mod, rest = rest[0].val, rest[1:]
				}
			case 'W', 'X':
				if k+1 == len(x.val) {
					j++ // its value is the next word
				}
				k = len(x.val)
			case 'c', 'Q':
				return
			}
		}
		if !found {
			continue
		}
		switch {
		case mod == "pip" && len(rest) > 0 && rest[0].val == "install":
			a.pipInstall(s, s.name+" -m pip install", rest[1:])
		case mod == "http.server" || mod == "SimpleHTTPServer" || mod == "CGIHTTPServer":
			// Python 2's servers take only a port and serve every
			// interface; CGIHTTPServer runs the scripts of cgi-bin.
			if mod == "CGIHTTPServer" {
				rest = append(slices.Clone(rest), arg{val: "--cgi"})
			}
			a.pythonHTTPServer(rest) // serve.go
		}
		return
	}
}

// pipInstall judges the requirements of a pip-like install: VCS and URL
// requirements, also inside -r files, are confirm.
func (a *analyzer) pipInstall(s *segCtx, what string, args []arg) {
	url := func(v string) bool {
		l := strings.ToLower(v)
		if strings.HasPrefix(l, "file:") {
			return false
		}
		return strings.Contains(l, "git+") || strings.Contains(l, "hg+") || strings.Contains(l, "svn+") ||
			strings.Contains(l, "bzr+") || strings.Contains(l, "://")
	}
	skip := false
	for j, x := range args {
		if x.dyn {
			continue
		}
		v := x.val
		if skip {
			skip = false
			continue
		}
		switch {
		case v == "-r" || v == "--requirement" || v == "-e" || v == "--editable":
			if j+1 < len(args) {
				y := args[j+1]
				skip = true
				if v == "-e" || v == "--editable" {
					if !y.dyn && url(y.val) {
						a.add(guard.Finding{Check: "shell.fetch-exec", Level: action.Confirm,
							Message: what + " installs " + y.val + " from a VCS or a URL; its build code runs at once"})
					}
					continue
				}
				a.requirementsFile(s, what, y, url)
			}
		case strings.HasPrefix(v, "--requirement=") || strings.HasPrefix(v, "-r") && len(v) > 2:
			f := strings.TrimPrefix(strings.TrimPrefix(v, "--requirement="), "-r")
			a.requirementsFile(s, what, arg{val: f}, url)
		case strings.HasPrefix(v, "-"):
			for _, o := range pipValueOpts {
				if v == o {
					skip = true
				}
			}
		case url(v):
			a.add(guard.Finding{Check: "shell.fetch-exec", Level: action.Confirm,
				Message: what + " installs " + v + " from a VCS or a URL; its build code runs at once"})
		}
	}
}

// requirementsFile reads a requirements file for VCS and URL requirements.
func (a *analyzer) requirementsFile(s *segCtx, what string, f arg, url func(string) bool) {
	if f.dyn {
		return
	}
	p, ok := a.fileAbs(f.val)
	if !ok {
		return
	}
	rf := a.readRunnerFile(p)
	if rf.state != fileOK {
		return
	}
	for _, l := range strings.Split(rf.text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "--index-url") || strings.HasPrefix(l, "-i ") ||
			strings.HasPrefix(l, "--extra-index-url") || strings.HasPrefix(l, "--find-links") || strings.HasPrefix(l, "-f ") ||
			strings.HasPrefix(l, "--trusted-host") {
			continue
		}
		if url(l) {
			a.add(guard.Finding{Check: "shell.fetch-exec", Level: action.Confirm,
				Message: what + " installs from a VCS or a URL listed in " + f.val + ": " + clip(l, 80)})
			return
		}
	}
}

// --- commands run through options ---

// cmakeCmd judges cmake -E: its commands are judged as the equivalent
// program.
func (a *analyzer) cmakeCmd(s *segCtx) bool {
	args := s.args
	if len(args) < 2 || args[0].dyn || args[0].val != "-E" {
		return false
	}
	if args[1].dyn {
		a.dynamicCode(args[1], "cmake -E runs a command computed at run time: "+args[1].val)
		return true
	}
	cmd, rest := args[1].val, args[2:]
	var eq []arg
	switch cmd {
	case "rm":
		eq = append([]arg{{val: "rm"}}, rest...)
	case "remove":
		eq = append([]arg{{val: "rm"}, {val: "-f"}}, rest...)
	case "remove_directory":
		eq = append([]arg{{val: "rm"}, {val: "-rf"}}, rest...)
	case "copy", "copy_if_different":
		eq = append([]arg{{val: "cp"}}, rest...)
	case "copy_directory", "copy_directory_if_different":
		eq = append([]arg{{val: "cp"}, {val: "-r"}}, rest...)
	case "rename":
		eq = append([]arg{{val: "mv"}}, rest...)
	case "make_directory":
		eq = append([]arg{{val: "mkdir"}, {val: "-p"}}, rest...)
	case "touch", "touch_nocreate":
		eq = append([]arg{{val: "touch"}}, rest...)
	case "create_symlink", "create_hardlink":
		eq = append([]arg{{val: "ln"}, {val: "-s"}}, rest...)
	case "tar":
		eq = append([]arg{{val: "tar"}}, rest...)
	case "cat":
		eq = append([]arg{{val: "cat"}}, rest...)
	case "echo", "echo_append":
		eq = append([]arg{{val: "echo"}}, rest...)
	case "chdir":
		if len(rest) < 2 {
			return false
		}
		cwd, known := a.cwd, a.cwdKnown
		if rest[0].dyn {
			a.cwdKnown = false
		} else if p, ok := a.abs(rest[0].val); ok {
			a.cwd, a.cwdKnown = p, true
		}
		a.bump(action.Notify)
		a.class("dev", action.Notify, "cmake -E chdir")
		a.nestedCommand(rest[1:], cmdCtx{origin: OriginOption}, s.idx)
		a.cwd, a.cwdKnown = cwd, known
		return true
	case "env", "time":
		inner := rest
		for len(inner) > 0 && !inner[0].dyn && (isAssignment(inner[0].val) || strings.HasPrefix(inner[0].val, "--")) {
			inner = inner[1:]
			if len(inner) > 0 && inner[0].val == "--" {
				inner = inner[1:]
				break
			}
		}
		if len(inner) == 0 {
			return false
		}
		a.class("dev", action.Notify, "cmake -E "+cmd)
		a.nestedCommand(inner, cmdCtx{origin: OriginOption}, s.idx)
		return true
	default:
		return false
	}
	a.class("dev", action.Notify, "cmake -E "+cmd)
	a.nestedCommand(eq, cmdCtx{origin: OriginOption}, s.idx)
	return true
}

// vimCmd judges the Ex commands vim runs from -c, --cmd and +: "!cmd",
// "r !cmd", "w !cmd" run a shell command; system(), :terminal and the
// language interfaces run code the guard does not read.
func (a *analyzer) vimCmd(s *segCtx) {
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		var c arg
		switch {
		case x.dyn:
			continue
		case x.val == "-c" || x.val == "--cmd":
			if j+1 >= len(s.args) {
				continue
			}
			j++
			c = s.args[j]
		case strings.HasPrefix(x.val, "+") && len(x.val) > 1:
			c = arg{val: x.val[1:]}
		case len(x.val) > 2 && x.val[1] != '-' && isLetters(x.val[1:]) && x.val[len(x.val)-1] == 'c' && j+1 < len(s.args):
			// A group of flags ending in -c: ex -sc 'cmd'.
			j++
			c = s.args[j]
		default:
			continue
		}
		if c.dyn {
			a.dynamicCode(c, s.name+" runs an Ex command computed at run time")
			continue
		}
		a.exCommands(s, c.val)
	}
}

// exCommands judges a line of Ex commands separated by "|".
func (a *analyzer) exCommands(s *segCtx, line string) {
	for n := 0; n < 32 && line != ""; n++ {
		c := strings.TrimLeft(line, " \t:")
		for _, p := range []string{"silent!", "silent", "sil!", "sil", "exe ", "execute "} {
			if strings.HasPrefix(c, p) {
				c = strings.TrimLeft(c[len(p):], " \t:")
			}
		}
		// A range before the command ("%!sort", "1,5!cmd").
		c = strings.TrimLeft(c, "0123456789,.$%'<>+- ")
		word := strings.TrimLeft(c, " ")
		lw := strings.ToLower(word)
		shell := ""
		switch {
		case strings.HasPrefix(word, "!"):
			shell = word[1:]
		case strings.HasPrefix(lw, "r !") || strings.HasPrefix(lw, "r!") || strings.HasPrefix(lw, "read !") || strings.HasPrefix(lw, "read!") ||
			strings.HasPrefix(lw, "w !") || strings.HasPrefix(lw, "w!") && strings.HasPrefix(strings.TrimLeft(lw[2:], " "), "!") ||
			strings.HasPrefix(lw, "write !"):
			shell = word[strings.IndexByte(word, '!')+1:]
		case strings.HasPrefix(lw, "ter") || strings.HasPrefix(lw, "py") || strings.HasPrefix(lw, "lua") ||
			strings.HasPrefix(lw, "perl") || strings.HasPrefix(lw, "rub") || strings.HasPrefix(lw, "mz") ||
			strings.HasPrefix(lw, "tcl") || strings.Contains(lw, "system(") || strings.Contains(lw, "systemlist(") ||
			strings.Contains(lw, "job_start(") || strings.Contains(lw, "jobstart(") || strings.HasPrefix(lw, "so") ||
			strings.HasPrefix(lw, "exe") || strings.HasPrefix(lw, "call "):
			a.add(guard.Finding{Check: "shell.inline-code", Level: action.Confirm,
				Message: s.name + " runs code through an Ex command: " + clip(word, 120)})
		}
		if shell != "" {
			// "!" takes the rest of the line, "|" included.
			a.nestedScript(shell, OriginOption, s.idx)
			a.cur = s.idx
			return
		}
		i := strings.IndexByte(line, '|')
		if i < 0 {
			return
		}
		line = line[i+1:]
	}
}

// emacsCmd judges emacs --eval: shell-command and process calls with
// literal strings are judged as commands; other Lisp is inline code
// (confirm).
func (a *analyzer) emacsCmd(s *segCtx) bool {
	found := false
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		var code arg
		switch {
		case x.dyn:
			continue
		case x.val == "--eval" || x.val == "-eval" || x.val == "-e" && s.name == "emacsclient":
			if j+1 >= len(s.args) {
				continue
			}
			j++
			code = s.args[j]
		case strings.HasPrefix(x.val, "--eval="):
			code = arg{val: strings.TrimPrefix(x.val, "--eval=")}
		default:
			continue
		}
		found = true
		if code.dyn {
			a.dynamicCode(code, s.name+" evaluates Lisp computed at run time")
			continue
		}
		a.elisp(s, code.val)
	}
	_ = found
	return false
}

// elisp judges Emacs Lisp code for the commands it runs.
func (a *analyzer) elisp(s *segCtx, code string) {
	judged := false
	for _, fn := range []string{"shell-command-to-string", "async-shell-command", "shell-command",
		"start-process-shell-command", "call-process-shell-command", "call-process", "start-process",
		"process-lines", "make-process", "process-file", "delete-directory", "delete-file", "eshell-command"} {
		rest := code
		for k := 0; k < 16; k++ {
			i := strings.Index(rest, "("+fn)
			if i < 0 {
				break
			}
			rest = rest[i+1+len(fn):]
			if rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\n' && rest[0] != ')' {
				continue // a longer name
			}
			strs, literal := lispStrings(rest)
			judged = true
			switch {
			case !literal || len(strs) == 0:
				a.add(guard.Finding{Check: "shell.obfuscated", Level: action.Approve, Hard: true,
					Message: s.name + " runs (" + fn + " …) with arguments computed at run time"})
			case fn == "delete-directory":
				a.nestedCommand([]arg{{val: "rm"}, {val: "-rf"}, {val: strs[0]}}, cmdCtx{origin: OriginOption}, s.idx)
			case fn == "delete-file":
				a.nestedCommand([]arg{{val: "rm"}, {val: "-f"}, {val: strs[0]}}, cmdCtx{origin: OriginOption}, s.idx)
			case strings.Contains(fn, "shell") || fn == "eshell-command":
				a.nestedScript(strs[0], OriginOption, s.idx)
			default:
				// (call-process "prog" infile buffer display "args"…): the
				// strings are the program and its arguments.
				var argv []arg
				for _, t := range strs {
					argv = append(argv, arg{val: t})
				}
				if fn == "start-process" && len(argv) > 2 {
					argv = argv[2:] // name and buffer come first
				}
				a.nestedCommand(argv, cmdCtx{origin: OriginOption}, s.idx)
			}
			a.cur = s.idx
		}
	}
	if !judged {
		a.add(guard.Finding{Check: "shell.inline-code", Level: action.Confirm,
			Message: s.name + " evaluates inline Lisp: " + clip(code, 160)})
	}
}

// lispStrings returns the string literals of the form that starts at rest
// (up to its closing parenthesis); literal is false when the form has
// other arguments than strings, nil and t (computed values).
func lispStrings(rest string) ([]string, bool) {
	var out []string
	literal := true
	depth := 0
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case c == '"':
			var b strings.Builder
			i++
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				b.WriteByte(rest[i])
			}
			if depth == 0 {
				out = append(out, b.String())
			}
		case c == '(':
			depth++
			if depth == 1 {
				literal = false
			}
		case c == ')':
			if depth == 0 {
				return out, literal
			}
			depth--
		case c == ' ' || c == '\t' || c == '\n':
		case depth == 0:
			j := i
			for j < len(rest) && !strings.ContainsRune(" \t\n()\"", rune(rest[j])) {
				j++
			}
			tok := rest[i:j]
			if tok != "nil" && tok != "t" && !isDigits(tok) {
				literal = false
			}
			i = j - 1
		}
	}
	return out, literal
}

// zipCmd judges zip -TT/--unzip-command: zip runs the command to test the
// archive.
func (a *analyzer) zipCmd(s *segCtx) {
	if x, ok := optValue(s.args, "-TT", "--unzip-command"); ok {
		if !x.dyn {
			x.val = strings.ReplaceAll(x.val, "{}", "archive.zip")
		}
		a.optionCode(s, x, "zip --unzip-command runs a command")
	}
}

// dcCmd judges dc: "!" runs the rest of the line as a shell command.
func (a *analyzer) dcCmd(s *segCtx) bool {
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		var prog arg
		switch {
		case x.dyn:
			continue
		case x.val == "-e" || x.val == "--expression":
			if j+1 >= len(s.args) {
				continue
			}
			j++
			prog = s.args[j]
		case strings.HasPrefix(x.val, "--expression="):
			prog = arg{val: strings.TrimPrefix(x.val, "--expression=")}
		case strings.HasPrefix(x.val, "-e") && len(x.val) > 2:
			prog = arg{val: x.val[2:]}
		default:
			continue
		}
		if prog.dyn {
			if strings.Contains(prog.val, "!") {
				a.dynamicCode(prog, "dc runs a program computed at run time")
			}
			continue
		}
		for _, c := range dcShell(prog.val) {
			a.nestedScript(c, OriginOption, s.idx)
			a.cur = s.idx
		}
	}
	if in := a.stdinOf(s.c.redirs); in.kind == 'd' && !in.dyn {
		for _, c := range dcShell(in.text) {
			a.nestedScript(c, OriginOption, s.idx)
			a.cur = s.idx
		}
	}
	return false
}

// dcShell returns the shell commands of a dc program: "!" not followed by
// "<", ">" or "=" runs the rest of its line (or macro string).
func dcShell(p string) []string {
	var out []string
	for i := 0; i < len(p) && len(out) < 16; i++ {
		if p[i] != '!' {
			continue
		}
		if i+1 < len(p) && strings.IndexByte("<>=", p[i+1]) >= 0 {
			i++
			continue
		}
		end := len(p)
		if k := strings.IndexAny(p[i+1:], "\n]"); k >= 0 {
			end = i + 1 + k
		}
		out = append(out, p[i+1:end])
		i = end
	}
	return out
}

// tarExec judges the commands tar runs through options. A compressor
// (-I, --use-compress-program) is routine and judged as a command; when
// tarCmd already needs a person for another command option, its tarRuns
// (foreign.go) judges the compressor with the rest. --info-script and
// --new-volume-script (-F) run a script too.
func (a *analyzer) tarExec(s *segCtx) {
	others := anyFlag(s.args, "--to-command", "--checkpoint-action", "--info-script", "--new-volume-script", "-F", "--rsh-command")
	for _, o := range []string{"--use-compress-program", "-I", "--info-script", "--new-volume-script", "-F"} {
		if others && (o == "-I" || o == "--use-compress-program") {
			continue
		}
		if x, ok := optValue(s.args, o); ok {
			a.optionCode(s, x, "tar "+o+" runs a command")
		}
	}
}

// pagerOptions are the options whose value is a command a program runs to
// show its output (man -P 'rm -rf ~' ls ran at auto: man is read-only).
var pagerOptions = map[string][]string{
	"man":     {"-P", "--pager", "-H", "--html"},
	"mysql":   {"--pager"},
	"mariadb": {"--pager"},
	"bat":     {"--pager"},
	"batcat":  {"--pager"},
}

// pagerExec judges the pager (or browser) command an option gives.
func (a *analyzer) pagerExec(s *segCtx) {
	names := pagerOptions[s.name]
	for _, x := range s.args {
		if x.dyn && (strings.HasPrefix(x.val, "--pager=") || strings.HasPrefix(x.val, "--html=")) {
			a.dynamicCode(x, s.name+" runs a pager computed at run time: "+x.val)
			return
		}
	}
	if x, ok := optValue(s.args, names...); ok {
		if strings.EqualFold(s.name, "man") && (x.val == "-H" || x.val == "--html") {
			return
		}
		a.optionCode(s, x, s.name+" runs a command to show its output")
	}
}

// rsyncExec judges rsync -e/--rsh: the remote shell command.
func (a *analyzer) rsyncExec(s *segCtx) {
	x, ok := optValue(s.args, "-e", "--rsh")
	if !ok {
		return
	}
	if x.dyn {
		a.dynamicCode(x, "rsync -e runs a remote shell computed at run time: "+x.val)
		return
	}
	f := strings.Fields(x.val)
	if len(f) == 0 {
		return
	}
	if p := progName(f[0]); p == "ssh" || p == "rsh" {
		// The usual transport: only its options can run commands.
		var argv []arg
		for _, w := range f[1:] {
			argv = append(argv, arg{val: strings.Trim(w, `"'`)})
		}
		a.sshOptions(s, argv)
		return
	}
	a.optionCode(s, x, "rsync -e runs a command")
}

// sshOptions judges the ssh options that run local commands:
// ProxyCommand, LocalCommand, KnownHostsCommand, Match exec.
func (a *analyzer) sshOptions(s *segCtx, args []arg) {
	for j := 0; j < len(args); j++ {
		x := args[j]
		var o arg
		switch {
		case x.dyn:
			continue
		case x.val == "-o" && j+1 < len(args):
			j++
			o = args[j]
		case strings.HasPrefix(x.val, "-o") && len(x.val) > 2:
			o = arg{val: x.val[2:], dyn: false}
		case x.val == "-J" || x.val == "-F" || x.val == "-i" || x.val == "-p" || x.val == "-l" || x.val == "-P" || x.val == "-S":
			j++
			continue
		default:
			continue
		}
		if o.dyn {
			if strings.Contains(strings.ToLower(o.val), "command") {
				a.dynamicCode(o, s.name+" -o runs a command computed at run time")
			}
			continue
		}
		key, val := o.val, ""
		if i := strings.IndexAny(o.val, "= \t"); i > 0 {
			key, val = o.val[:i], strings.TrimLeft(o.val[i+1:], "= \t")
		}
		switch strings.ToLower(key) {
		case "proxycommand", "localcommand", "knownhostscommand", "remotecommand":
			if val == "" || strings.EqualFold(val, "none") {
				continue
			}
			if strings.EqualFold(key, "remotecommand") {
				continue // runs on the other machine, like ssh's command
			}
			val = strings.NewReplacer("%h", "host", "%p", "22", "%r", "user", "%n", "host", "%%", "%").Replace(val)
			a.optionCode(s, arg{val: val}, s.name+" -o "+key+" runs a command")
		case "match":
			if i := strings.Index(strings.ToLower(val), "exec "); i >= 0 {
				a.optionCode(s, arg{val: strings.Trim(strings.TrimSpace(val[i+5:]), `"`)}, s.name+" -o Match exec runs a command")
			}
		}
	}
}

// sortExec judges sort --compress-program: sort runs the program.
func (a *analyzer) sortExec(s *segCtx) {
	x, ok := optValue(s.args, "--compress-program")
	if !ok {
		return
	}
	if x.dyn {
		a.dynamicCode(x, "sort --compress-program runs a program computed at run time: "+x.val)
		return
	}
	a.nestedCommand([]arg{{val: x.val}}, cmdCtx{origin: OriginOption}, s.idx)
	a.cur = s.idx
}

// gdbCmd judges gdb -ex/--eval-command "shell CMD" or "!CMD".
func (a *analyzer) gdbCmd(s *segCtx) {
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		var c arg
		switch {
		case x.dyn:
			continue
		case (x.val == "-ex" || x.val == "--ex" || x.val == "-eval-command" || x.val == "--eval-command" || x.val == "-iex") && j+1 < len(s.args):
			j++
			c = s.args[j]
		case strings.HasPrefix(x.val, "--eval-command="):
			c = arg{val: strings.TrimPrefix(x.val, "--eval-command=")}
		default:
			continue
		}
		if c.dyn {
			a.dynamicCode(c, "gdb runs a command computed at run time")
			continue
		}
		t := strings.TrimSpace(c.val)
		switch {
		case strings.HasPrefix(t, "!"):
			a.optionCode(s, arg{val: t[1:]}, "gdb runs a shell command")
		case strings.HasPrefix(t, "shell ") || strings.HasPrefix(t, "pipe ") || strings.HasPrefix(t, "|"):
			_, rest, _ := strings.Cut(t, " ")
			if strings.HasPrefix(t, "|") {
				rest = t[1:]
			}
			a.optionCode(s, arg{val: rest}, "gdb runs a shell command")
		case strings.HasPrefix(t, "python") || strings.HasPrefix(t, "py ") || strings.HasPrefix(t, "guile"):
			a.add(guard.Finding{Check: "shell.inline-code", Level: action.Confirm,
				Message: "gdb runs inline code: " + clip(t, 120)})
		}
	}
}

// scriptCmd judges script -c CMD (util-linux), which runs CMD with a shell.
func (a *analyzer) scriptCmd(s *segCtx) {
	if x, ok := optValue(s.args, "-c", "--command"); ok {
		a.optionCode(s, x, "script -c runs a command")
	}
}

// goOutputs records the executables go build and go install write, each
// named after its package (the last element of its import path, a major
// version suffix skipped): go build into the -o directory (an existing one,
// or one written with a trailing slash) or, without -o, the one package's
// executable into the working directory; go install into $GOBIN, else
// $GOPATH/bin, else ~/go/bin. A package whose name is not known
// (pattern, computed) writes files not known into that directory.
func (a *analyzer) goOutputs(s *segCtx, ops []arg) {
	if len(ops) == 0 || ops[0].dyn || ops[0].val != "build" && ops[0].val != "install" {
		return
	}
	base, known := a.cwd, a.cwdKnown
	if c, ok := goFlag(s.args, "C"); ok {
		if c.dyn {
			return
		}
		if p, ok := a.abs(c.val); ok {
			base, known = a.expandHome(p), true
		}
	}
	resolve := func(v string) (string, bool) {
		if strings.HasPrefix(v, "~") {
			if p, ok := a.abs(v); ok {
				return a.expandHome(p), true
			}
		}
		if path.IsAbs(v) {
			return path.Clean(v), true
		}
		return path.Join(base, v), known
	}
	pkgs := ops[1:]
	if len(pkgs) == 0 {
		pkgs = []arg{{val: "."}}
	}
	var names []string
	unknown := false
	for _, p := range pkgs {
		n := goBinName(p, resolve)
		if n == "" {
			unknown = true
			continue
		}
		names = append(names, n)
	}
	var dir string
	switch ops[0].val {
	case "build":
		o, ok := goFlag(s.args, "o")
		switch {
		case ok && o.dyn:
			return // a computed -o is already a write of what it names
		case ok:
			p, pok := resolve(o.val)
			if !pok || !strings.HasSuffix(o.val, "/") && !a.isDir(p) {
				return // a file: the -o write covers it
			}
			dir = p
		case len(pkgs) == 1 && known:
			dir = base
		default:
			return // several packages: go build writes no executable
		}
	default:
		dir = a.goBin()
	}
	if dir == "" {
		return
	}
	if unknown {
		a.effectFact(dir, action.PathUnknown)
	}
	for _, n := range names {
		a.effectFact(path.Join(dir, n), action.PathWrite)
	}
}

// goFlag returns the value of the go command's flag name, in any of the
// forms Go's flag package takes: -name v, --name v, -name=v, --name=v.
func goFlag(args []arg, name string) (arg, bool) {
	for _, x := range args {
		if x.val == "--" {
			break
		}
		if v, ok := strings.CutPrefix(x.val, "-"+name+"="); ok && !x.dyn {
			y := x
			y.val = v
			return y, true
		}
	}
	return optValue(args, "-"+name, "--"+name)
}

// goBinName is the name of the executable go builds for package operand p
// ("./cmd/tool", "example.com/x/cmd/tool@v1", "main.go"), or "" when it is
// not known (computed, a pattern with "...", the module root seen only as
// ".").
func goBinName(p arg, resolve func(string) (string, bool)) string {
	if p.dyn || p.glob || strings.Contains(p.val, "...") {
		return ""
	}
	v := p.val
	if i := strings.LastIndexByte(v, '@'); i > 0 {
		v = v[:i]
	}
	if strings.HasSuffix(v, ".go") {
		return strings.TrimSuffix(path.Base(v), ".go")
	}
	if v == "." || v == "./" || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") || path.IsAbs(v) || strings.HasPrefix(v, "~") {
		r, ok := resolve(v)
		if !ok {
			return ""
		}
		v = r
	}
	v = strings.TrimSuffix(v, "/")
	elems := strings.Split(v, "/")
	n := elems[len(elems)-1]
	if len(elems) > 1 && len(n) > 1 && n[0] == 'v' && strings.Trim(n[1:], "0123456789") == "" {
		n = elems[len(elems)-2] // example.com/tool/v2 builds "tool"
	}
	if n == "" || n == "." || n == ".." {
		return ""
	}
	return n
}

// goBin is the directory go install writes executables to.
func (a *analyzer) goBin() string {
	get := func(name string) (string, bool) {
		if st, ok := a.vars[name]; ok {
			return st.val, !st.dyn && !st.isArr
		}
		v, ok := a.env.Vars[name]
		return v, ok
	}
	if v, ok := get("GOBIN"); ok && v != "" {
		if p, ok := a.abs(v); ok && path.IsAbs(a.expandHome(p)) {
			return a.expandHome(p)
		}
		return ""
	} else if _, set := a.vars["GOBIN"]; set {
		return "" // computed
	}
	if v, ok := get("GOPATH"); ok && v != "" {
		first, _, _ := strings.Cut(v, string(os.PathListSeparator))
		if p, ok := a.abs(first); ok {
			return path.Join(a.expandHome(p), "bin")
		}
		return ""
	}
	if a.env.Home == "" {
		return ""
	}
	return path.Join(a.env.Home, "go", "bin")
}
