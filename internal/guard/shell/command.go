package shell

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
)

// cmdCtx is the context a simple command runs in.
type cmdCtx struct {
	origin   Origin
	redirs   []*syntax.Redirect
	extraDyn bool      // arguments are appended at run time (xargs)
	find     *findInfo // the find whose -exec runs this command
	listed   *findInfo // the roots of the search whose list xargs gives this command (refactor.go)
	in       *textIn   // the static text the command reads from a pipe
}

// segCtx is what a handler gets to judge one segment.
type segCtx struct {
	idx  int
	name string // lower-cased base name
	prog arg    // the program as written
	args []arg  // the arguments after the program
	c    cmdCtx
	// envNames are the variables wrappers before the program set (env
	// NAME=v prog), whether or not the guard knows them.
	envNames []string
}

// progName returns the lower-cased base name of a program path.
func progName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		p = p[i+1:]
	}
	p = strings.ToLower(p)
	return strings.TrimSuffix(p, ".exe")
}

func vals(args []arg) []string {
	if len(args) == 0 {
		return nil
	}
	out := make([]string, len(args))
	for i, x := range args {
		out[i] = x.val
	}
	return out
}

func anyDyn(args []arg) bool {
	for _, x := range args {
		if x.dyn {
			return true
		}
	}
	return false
}

// wrapperFor returns the wrapper spec for a program whose arguments are
// rest, or nil.
func (r *rules) wrapperFor(name string, rest []arg) *cwrapper {
	for _, w := range r.wrappers[name] {
		if w.sub == "" {
			return w
		}
		if len(rest) > 0 && !rest[0].dyn && strings.EqualFold(rest[0].val, w.sub) {
			return w
		}
	}
	return nil
}

// unwrapped is the result of skipping a wrapper's options.
type unwrapped struct {
	next     int    // index of the wrapped program
	stop     bool   // the wrapper runs no program (command -v)
	chdir    string // the working directory the wrapper sets
	chdirDyn bool   // … computed at run time
	hasDir   bool
	split    arg // env -S: a string that is split into the program and arguments
	hasSplit bool
	hasX     bool  // watch -x: the arguments are a program, not a shell string
	cmds     []arg // values of command options (nodemon --exec CMD)
}

// skipWrapper skips the options of wrapper w whose name is at args[i].
func skipWrapper(w *cwrapper, args []arg, i int) unwrapped {
	j := i + 1
	if w.sub != "" {
		j++
	}
	var u unwrapped
	operands := w.operands
	value := func(opt string, v arg) {
		if w.chdir.has(opt) {
			u.chdir, u.chdirDyn, u.hasDir = v.val, v.dyn, true
		}
		if w.name == "env" && (opt == "-S" || opt == "--split-string") {
			u.split, u.hasSplit = v, true
		}
		if w.cmdOpts.has(opt) {
			u.cmds = append(u.cmds, v)
		}
	}
	next := func(k int) arg {
		if k < len(args) {
			return args[k]
		}
		return arg{}
	}
	for j < len(args) {
		x := args[j]
		v := x.val
		switch {
		case x.dyn:
			u.next = j
			return u
		case v == "--":
			u.next = j + 1
			return u
		case strings.HasPrefix(v, "--"):
			name, val, eq := strings.Cut(v, "=")
			if w.stop.has(name) {
				u.stop = true
				u.next = j
				return u
			}
			if name == "--exec" {
				u.hasX = true
			}
			if w.pairOpts.has(name) && !eq {
				j += 3
				continue
			}
			if w.valueOpts.has(name) {
				if eq {
					value(name, arg{val: val, dyn: x.dyn})
					j++
				} else {
					value(name, next(j+1))
					j += 2
				}
				continue
			}
			j++
		case len(v) > 1 && v[0] == '-':
			if w.stop.has(v) {
				u.stop = true
				u.next = j
				return u
			}
			if w.valueOpts.has(v) {
				value(v, next(j+1))
				j += 2
				continue
			}
			if w.pairOpts.has(v) {
				j += 3
				continue
			}
			skipNext := false
			for k := 1; k < len(v); k++ {
				opt := "-" + v[k:k+1]
				if w.stop.has(opt) {
					u.stop = true
					u.next = j
					return u
				}
				if v[k] == 'x' && w.name == "watch" {
					u.hasX = true
				}
				if strings.IndexByte(w.shortValue, v[k]) >= 0 {
					if k+1 < len(v) {
						value(opt, arg{val: v[k+1:]})
					} else {
						value(opt, next(j+1))
						skipNext = true
					}
					break
				}
			}
			j++
			if skipNext {
				j++
			}
		case w.assigns && isAssignment(v):
			j++
		case operands > 0:
			operands--
			j++
		default:
			u.next = j
			return u
		}
	}
	u.next = min(j, len(args))
	return u
}

// isAssignment reports whether v has the form NAME=value.
func isAssignment(v string) bool {
	name, _, ok := strings.Cut(v, "=")
	return ok && validName(name, false)
}

// command judges one simple command given as resolved words: it unwraps
// wrappers, records the segment, and classifies it. It returns the
// segment's index, or -1.
func (a *analyzer) command(args []arg, c cmdCtx) int {
	if len(args) == 0 {
		return -1
	}
	var wrappers []string
	cwd, known := a.cwd, a.cwdKnown
	chdir := false
	defer func() {
		if chdir {
			a.cwd, a.cwdKnown = cwd, known
		}
	}()
	i := 0
	for n := 0; i < len(args) && n < 32; n++ {
		if args[i].dyn {
			break
		}
		name := progName(args[i].val)
		if prog, ok := multiCall(name, args[i+1:]); ok {
			// coreutils --coreutils-prog=rm ARGS: the program is rm.
			args = append([]arg{{val: prog}}, args[i+2:]...)
			i = 0
			continue
		}
		w := a.r.wrapperFor(name, args[i+1:])
		if w == nil {
			break
		}
		u := skipWrapper(w, args, i)
		a.wrapperEffects(name, args[i+1:min(u.next, len(args))])
		label := name
		if w.sub != "" {
			label += " " + w.sub
		}
		if len(u.cmds) > 0 {
			// nodemon --exec CMD: the option's value is a command line.
			return a.wrapperCommands(args[i], args[i+1:], u.cmds, wrappers, c)
		}
		if w.script && !u.stop && u.next < len(args) {
			// tmux new -d 'cmd', watchexec -- cmd: the words run with sh -c.
			return a.watchScript(args[i], args[u.next:], wrappers, c)
		}
		if u.stop || u.next >= len(args) && !u.hasSplit {
			// The wrapper runs no program: it is the segment itself.
			break
		}
		wrappers = append(wrappers, label)
		if u.hasDir {
			chdir = true
			if u.chdirDyn || u.chdir == "" {
				a.cwdKnown = false
			} else if p, ok := a.abs(u.chdir); ok {
				a.cwd, a.cwdKnown = p, true
			} else {
				a.cwdKnown = false
			}
		}
		switch {
		case u.hasSplit && u.split.dyn:
			// env -S "$X": the program is not known.
			args = append([]arg{u.split}, args[u.next:]...)
			i = 0
			n = 32
		case u.hasSplit:
			// env -S 'prog args': split into words.
			var split []arg
			for _, f := range strings.Fields(u.split.val) {
				split = append(split, arg{val: f, glob: hasGlobMeta(f), pat: f})
			}
			split = append(split, args[u.next:]...)
			if len(split) == 0 {
				wrappers = wrappers[:len(wrappers)-1]
				n = 32 // env itself is the segment
				continue
			}
			if v := split[0].val; strings.HasPrefix(v, "-") || isAssignment(v) {
				// env -S 'A=1 -u B prog': the words are env's own
				// arguments again, assignments and options before the
				// program.
				split = append([]arg{args[i]}, split...)
			}
			args = split
			i = 0
		case name == "watch" && !u.hasX:
			// watch runs its arguments with sh -c.
			return a.watchScript(args[i], args[u.next:], wrappers, c)
		default:
			i = u.next
		}
	}
	prog := args[i]
	rest := args[i+1:]
	seg := Segment{Path: prog.val, Args: vals(rest), Dynamic: anyDyn(args[i:]) || c.extraDyn, Origin: c.origin, Wrappers: wrappers}
	if prog.dyn || prog.glob {
		seg.Dynamic = true
		idx := a.newSegment(seg)
		a.cur = idx
		if prog.glob {
			a.add(guard.Finding{Check: "shell.obfuscated", Level: action.Approve, Hard: true,
				Message: "the command name is a wildcard pattern resolved at run time: " + prog.val})
			return idx
		}
		a.dynamicCode(prog, "the command name is computed at run time: "+prog.val)
		return idx
	}
	name := progName(prog.val)
	seg.Name = name
	idx := a.newSegment(seg)
	if idx < 0 {
		return -1
	}
	for _, w := range a.out.Segments[idx].Wrappers {
		if a.r.privileged(w) {
			a.out.Segments[idx].flags |= fPrivileged
		}
	}
	a.cur = idx
	sc := &segCtx{idx: idx, name: name, prog: prog, args: rest, c: c}
	for _, x := range args[:i] {
		switch v := x.val; {
		case isAssignment(v):
			n, _, _ := strings.Cut(v, "=")
			sc.envNames = append(sc.envNames, n)
		case v == "-i" || v == "-" || v == "--ignore-environment" || strings.HasPrefix(v, "-u") || strings.HasPrefix(v, "--unset"):
			// env -i, env -u NAME: HOME may be gone (kubectl then reads
			// .kube/config of the working directory).
			sc.envNames = append(sc.envNames, "HOME")
		}
	}
	saved := a.cmdEnv
	a.cmdEnv = a.commandEnv(a.envArgs(args[:i])) // envvars.go: env LD_PRELOAD=… cmd
	a.envForCommand(sc, a.cmdEnv)
	a.builtName(prog) // static.go: a name printed by a substitution
	a.classify(sc)
	a.effects(sc)
	a.cmdEnv = saved
	a.cur = idx
	s := &a.out.Segments[idx]
	switch {
	case s.flags&fPrivileged != 0 && s.Level > action.Auto:
		a.add(guard.Finding{Check: "shell.sudo", Level: action.Confirm,
			Message: "runs as another user (usually root): " + name})
	case s.flags&fPrivileged != 0 && a.secretIn(idx, idx+1):
		a.add(guard.Finding{Check: "shell.sudo", Level: action.Confirm,
			Message: "reads a protected file as another user (usually root): " + name})
	case name != "su" && name != "runuser" && a.r.privileged(name):
		a.add(guard.Finding{Check: "shell.sudo", Level: action.Confirm,
			Message: name + " without a program to run: a root shell or a change of credentials"})
	}
	return idx
}

// privileged reports whether a wrapper label runs its program as another
// user.
func (r *rules) privileged(label string) bool {
	name, _, _ := strings.Cut(label, " ")
	if name == "su" || name == "runuser" {
		return true
	}
	for _, w := range r.wrappers[name] {
		if w.privileged {
			return true
		}
	}
	return false
}

// watchScript judges "watch [options] words…", which runs the words with
// sh -c.
func (a *analyzer) watchScript(prog arg, words []arg, wrappers []string, c cmdCtx) int {
	name := progName(prog.val)
	if name == "watch" && len(wrappers) > 0 {
		wrappers = wrappers[:len(wrappers)-1]
	}
	seg := Segment{Name: name, Path: prog.val, Args: vals(words), Origin: c.origin,
		Wrappers: wrappers, Dynamic: anyDyn(words)}
	idx := a.newSegment(seg)
	if idx < 0 {
		return -1
	}
	a.cur = idx
	a.bump(action.Auto)
	parts := make([]string, 0, len(words))
	for _, w := range words {
		if w.dyn {
			a.dynamicCode(w, name+" runs a command computed at run time")
			return idx
		}
		parts = append(parts, w.val)
	}
	a.nestedScript(strings.Join(parts, " "), OriginWatch, idx)
	return idx
}

// nestedScript judges src as a script run by the segment idx (sh -c, eval,
// …). The script's segments inherit the segment's wrappers.
func (a *analyzer) nestedScript(src string, origin Origin, idx int) {
	cur, wc := a.cur, a.wrapCtx
	if idx >= 0 && idx < len(a.out.Segments) {
		a.wrapCtx = a.out.Segments[idx].Wrappers
	}
	a.script(src, origin)
	a.cur, a.wrapCtx = cur, wc
}

// nestedCommand judges a command run by the segment idx (xargs, find -exec).
func (a *analyzer) nestedCommand(args []arg, c cmdCtx, idx int) int {
	cur, wc := a.cur, a.wrapCtx
	if idx >= 0 && idx < len(a.out.Segments) {
		a.wrapCtx = a.out.Segments[idx].Wrappers
	}
	n := a.command(args, c)
	a.cur, a.wrapCtx = cur, wc
	return n
}

// dynamicCode records that code to run (a command name, a script, an eval
// string) is only known at run time.
func (a *analyzer) dynamicCode(x arg, what string) {
	var f segFlags
	var names []string
	for i := max(x.sub[0], 0); i < x.sub[1] && i < len(a.out.Segments); i++ {
		s := a.out.Segments[i]
		f |= s.flags
		if s.Name != "" && len(names) < 4 {
			names = append(names, s.Name)
		}
	}
	switch {
	case f&fDownload != 0:
		a.add(guard.Finding{Check: "shell.download-exec", Level: action.Approve, Hard: true,
			Message: what + ": it runs downloaded content (" + strings.Join(names, ", ") + ")"})
	case f&fDecode != 0:
		a.add(guard.Finding{Check: "shell.obfuscated", Level: action.Approve, Hard: true,
			Message: what + ": it runs decoded content (" + strings.Join(names, ", ") + ")"})
	default:
		a.add(guard.Finding{Check: "shell.obfuscated", Level: action.Approve, Hard: true, Message: what})
	}
}

// classify judges one segment: its handler if it has one, then the lists.
func (a *analyzer) classify(s *segCtx) {
	name := s.name
	a.callFunction(s) // a function defined in the command, judged with its arguments
	switch {
	case a.r.downloaders.has(name):
		a.out.Segments[s.idx].flags |= fDownload
	case a.r.decoders.has(name):
		a.out.Segments[s.idx].flags |= fDecode
	}
	if a.r.netSenders.has(name) {
		a.out.Segments[s.idx].flags |= fNetSend
	}
	a.selfCheck(s) // selfapprove.go: Overseer's own API and commands
	// provenance.go: runners, code fetched and run, commands in options.
	handled := a.provenance(s)
	switch {
	case handled:
	case a.r.shells.has(name):
		handled = a.shellCmd(s)
	case a.interpreter(name) != nil:
		handled = a.interpCmd(s, a.interpreter(name))
	case strings.HasPrefix(name, "mkfs") || strings.HasPrefix(name, "newfs"):
		handled = a.diskCmd(s)
	default:
		if h := handlers[name]; h != nil {
			handled = h(a, s)
		}
	}
	a.cur = s.idx
	a.unpackers(s) // unseen.go
	if a.r.netSenders.has(name) {
		a.netSend(s)
	}
	if !handled {
		a.listClass(s)
	}
}

// interpreter returns the inline-code options of an interpreter, or nil.
// "python3.12" is looked up as "python3.12", then "python".
func (a *analyzer) interpreter(name string) []string {
	if o, ok := a.r.interp[name]; ok {
		return o
	}
	base := strings.TrimRight(name, "0123456789.")
	if base != name && base != "" {
		if o, ok := a.r.interp[base]; ok {
			return o
		}
	}
	return nil
}

// listClass classifies a segment by the patterns and the lists.
func (a *analyzer) listClass(s *segCtx) {
	name := s.name
	ops := a.operands(name, s.args)
	for i := range a.r.patterns[name] {
		p := &a.r.patterns[name][i]
		if !p.match(s.args, ops) {
			continue
		}
		label := commandLabel(name, ops, len(p.subs))
		switch p.check {
		case "readonly", "dev":
			a.class(p.check, p.level, label)
		default:
			a.add(guard.Finding{Check: "shell." + p.check, Level: p.level, Hard: p.level == action.Block, Message: label + ": " + p.msg})
		}
		return
	}
	if e := a.r.matchList(name, s.args, ops); e != nil {
		a.class(e.check, e.level, commandLabel(name, ops, len(e.subs)))
		return
	}
	if a.funcs[name] {
		a.class("function", action.Auto, name)
		return
	}
	if p := s.prog.val; strings.Contains(p, "/") && name != "" && !strings.ContainsAny(p, " \t\n") {
		if strings.Contains(p, "node_modules/.bin/") {
			// The package's own file servers, run by their path as
			// npx would run them (serve.go).
			switch name {
			case "serve":
				a.nodeServe(s.args)
			case "http-server", "live-server", "static-server":
				a.add(guard.Finding{Check: "shell.serve-network", Level: action.Confirm,
					Message: name + " serves the directory's files, on every interface unless told otherwise"})
			}
		}
		abs, known := a.abs(p)
		if a.downloaded[abs] {
			a.add(guard.Finding{Check: "shell.download-exec", Level: action.Approve, Hard: true,
				Message: "runs " + p + ", which this command downloaded"})
			return
		}
		if a.runsUnseen(s, p, abs) {
			a.class("project-program", action.Notify, p)
			return
		}
		if a.runWritten(abs, false, s.idx) {
			a.cur = s.idx
			a.class("project-program", action.Notify, p)
			return
		}
		a.runStored(abs, false, s.idx) // provenance.go: a shell script is judged by its content
		if known && a.cwdKnown && action.Within(a.cwd, abs) || !known {
			a.class("project-program", action.Notify, p)
			return
		}
	}
	if name == "" || strings.ContainsAny(s.prog.val, " \t\n") {
		name = clip(s.prog.val, 60)
	}
	a.class("unknown-command", action.Confirm, name)
}

func commandLabel(name string, ops []string, n int) string {
	if n == 0 || len(ops) < n {
		return name
	}
	return name + " " + strings.Join(ops[:n], " ")
}

// operands returns the arguments of a command that are not options,
// skipping the values of the program's global options before its first
// operand. The slice is reused: use it before the next call.
func (a *analyzer) operands(name string, args []arg) []string {
	ops := a.ops[:0]
	gopts := a.r.globalOpts[name]
	dashdash := false
	for j := 0; j < len(args); j++ {
		v := args[j].val
		switch {
		case dashdash:
			ops = append(ops, v)
		case v == "--" && !args[j].dyn:
			dashdash = true
		case len(v) > 1 && v[0] == '-' && !args[j].dyn:
			if len(ops) == 0 && gopts != nil {
				if n, _, eq := strings.Cut(v, "="); !eq && gopts.has(n) {
					j++
				}
			}
		default:
			ops = append(ops, v)
		}
	}
	a.ops = ops
	return ops
}

// hasFlag reports whether flag is among args (see Pattern.Flags).
func hasFlag(args []arg, flag string) bool {
	return hasComp(args, comp{s: flag})
}

// hasComp reports whether the flag f is among args: exactly, as "--f=v",
// inside a group of one-letter flags ("-f" in "-fd"), or matching a glob.
func hasComp(args []arg, f comp) bool {
	flag := f.s
	for _, x := range args {
		v := x.val
		if x.dyn {
			continue
		}
		if v == flag {
			return true
		}
		if v == "--" {
			return false
		}
		if len(v) < 2 || v[0] != '-' {
			continue
		}
		switch {
		case f.glob:
			if ok, _ := path.Match(flag, v); ok {
				return true
			}
		case len(flag) == 2:
			if v[1] != '-' && len(v) <= 6 && isLetters(v[1:]) && strings.IndexByte(v[1:], flag[1]) >= 0 {
				return true
			}
		default:
			if len(v) > len(flag) && v[len(flag)] == '=' && strings.HasPrefix(v, flag) {
				return true
			}
		}
	}
	return false
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isLetter(s[i]) {
			return false
		}
	}
	return s != ""
}

func anyFlag(args []arg, flags ...string) bool {
	for _, f := range flags {
		if hasFlag(args, f) {
			return true
		}
	}
	return false
}

func (p *cpattern) match(args []arg, ops []string) bool {
	if len(ops) < len(p.subs) {
		return false
	}
	for i, s := range p.subs {
		if !s.match(ops[i]) {
			return false
		}
	}
	if len(p.flags) > 0 {
		found := false
		for _, f := range p.flags {
			if hasComp(args, f) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if len(p.args) > 0 {
		found := false
		for _, op := range ops[len(p.subs):] {
			for _, g := range p.args {
				if g.match(op) {
					found = true
					break
				}
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// matchList returns the most specific read_only or notify entry that
// matches; on a tie the stricter.
func (r *rules) matchList(name string, args []arg, ops []string) *listEntry {
	li := r.lists[name]
	if li == nil {
		return nil
	}
	var best *listEntry
	bestSpec := -1
	try := func(i int) {
		e := &li.entries[i]
		if len(ops) < len(e.subs) {
			return
		}
		for k, s := range e.subs {
			if !s.match(ops[k]) {
				return
			}
		}
		for _, f := range e.flags {
			if !hasComp(args, f) {
				return
			}
		}
		spec := len(e.subs) + len(e.flags)
		if spec > bestSpec || spec == bestSpec && e.level > best.level {
			best, bestSpec = e, spec
		}
	}
	for _, i := range li.other {
		try(i)
	}
	if len(ops) > 0 {
		first, ok := li.byFirst[ops[0]]
		if !ok {
			first = li.byFirst[strings.ToLower(ops[0])]
		}
		for _, i := range first {
			try(i)
		}
	}
	return best
}

// display returns p relative to the working directory when it is inside
// it.
func (a *analyzer) display(p string) string {
	if a.env.Cwd != "" && action.Within(a.env.Cwd, p) {
		if p == a.env.Cwd {
			return "."
		}
		return strings.TrimPrefix(p[len(a.env.Cwd):], "/")
	}
	return p
}

// pathFact records a path the command touches.
func (a *analyzer) pathFact(p string, known bool, intent action.PathIntent) {
	if !known || !path.IsAbs(p) {
		return
	}
	for i, f := range a.out.Paths {
		if f.Path == p && f.Intent == intent {
			// Written again: no longer only a copy of its template.
			a.out.Paths[i].Template = ""
			return
		}
	}
	a.out.Paths = append(a.out.Paths, action.PathFact{Path: p, Intent: intent,
		InCwd: a.env.Cwd != "" && action.Within(a.env.Cwd, p)})
}

// writeTarget judges a path the command writes.
func (a *analyzer) writeTarget(x arg, how string) {
	if x.dyn {
		a.add(guard.Finding{Check: "shell.write-dynamic", Level: action.Confirm,
			Message: how + " " + x.val + ", a path computed at run time"})
		return
	}
	p, known := a.abs(x.val)
	if a.r.harmlessDevice(p) {
		return
	}
	if a.r.blockDevice(p) {
		a.add(guard.Finding{Check: "shell.device-write", Level: action.Block, Hard: true,
			Message: how + " " + p + ", a raw disk device, destroying its contents"})
		return
	}
	a.pathFact(p, known, action.PathWrite)
	switch a.where(p, known) {
	case whereTree, whereScratch:
		a.class("write", action.Notify, a.display(p))
	case whereUnknown:
		// Relative to a directory only known at run time (cd "$DIR"):
		// it may be Overseer's home or a hook configuration.
		a.add(guard.Finding{Check: "shell.write-unknown-dir", Level: action.Confirm,
			Message: how + " " + x.val + " relative to a working directory computed at run time"})
	default:
		switch {
		case strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/sys/") || strings.HasPrefix(p, "/dev/"):
			a.add(guard.Finding{Check: "shell.write-system", Level: action.Approve,
				Message: how + " " + p + ", a kernel or device interface"})
		case a.danger(p) == dangerRoot || a.danger(p) == dangerSystem || a.danger(p) == dangerDrive:
			a.add(guard.Finding{Check: "shell.write-system-dir", Level: action.Approve,
				Message: how + " " + p + ", a system directory"})
		case a.r.secret(p):
			a.add(guard.Finding{Check: "shell.write-secret", Level: action.Approve,
				Message: how + " " + p + ", a credential or key file"})
		default:
			a.add(guard.Finding{Check: "shell.write-outside", Level: action.Confirm,
				Message: how + " " + p + ", outside the working tree"})
		}
	}
}

// markDownloaded remembers a file this command downloads, so that running
// it later in the command is judged as running downloaded code.
func (a *analyzer) markDownloaded(p string) {
	abs, known := a.abs(p)
	if !known {
		return
	}
	if a.downloaded == nil {
		a.downloaded = map[string]bool{}
	}
	a.downloaded[abs] = true
}

// markWritten remembers the static text this command writes to a file
// (echo … > run.sh, cat > run.sh <<EOF), so that running the file later in
// the command is judged by its text. Empty text with appending false means
// the content is not known.
func (a *analyzer) markWritten(p, text string, appending bool) {
	abs, known := a.abs(p)
	if !known {
		return
	}
	if a.written == nil {
		a.written = map[string]writtenFile{}
	}
	old, seen := a.written[abs]
	var w writtenFile
	switch {
	case text == "" && !appending:
	case appending && seen:
		t, known := a.writtenContent(old)
		w = writtenFile{text: t + text, known: known}
	case appending:
		// Appended to a file not written before in the command: its start
		// is what is on disk now (nothing when it does not exist yet).
		w = a.appendToDisk(abs, text)
	default:
		w = writtenFile{text: text, known: true}
	}
	w.path, w.at = abs, a.cur
	a.written[abs] = w
}

// writtenFile is a file written earlier in the command.
type writtenFile struct {
	text  string
	known bool // text is the file's whole content
	// from is the file a copy, a move or a link took it from, as that file
	// was on disk at the segment fromIdx (cp other.mk Makefile && make).
	from    string
	fromIdx int
	// path is the file, written by the segment at: a program after it
	// that may change the file makes the text stale (printf … > x.sh &&
	// sed -i … x.sh && sh x.sh).
	path string
	at   int
}

// known reports whether the content of a file written earlier in the
// command is known (writtenContent).
func (a *analyzer) known(w writtenFile) bool {
	_, ok := a.writtenContent(w)
	return ok
}

// writtenContent returns the whole content of a file written earlier in
// the command, when it is known: the text written, or the source of a copy
// as it is on disk when no program before the copy may have changed it.
func (a *analyzer) writtenContent(w writtenFile) (string, bool) {
	return a.writtenContentAt(w, a.cur)
}

// writtenContentAt is writtenContent as the segment idx finds the file.
func (a *analyzer) writtenContentAt(w writtenFile, idx int) (string, bool) {
	if w.path != "" && idx > w.at && a.changedBetween(w.path, w.at+1, idx) {
		return "", false
	}
	if w.known {
		return w.text, true
	}
	if w.from == "" || a.changedBefore(w.from, w.fromIdx) {
		return "", false
	}
	if _, ok := a.written[w.from]; ok {
		return "", false // a copy of a file written later in the command than the copy was made
	}
	f := a.readRunnerFile(w.from)
	return f.text, f.state == fileOK
}

// runWritten judges running a file written earlier in the command. It
// reports false when the file was not written by the command or is not a
// shell script.
func (a *analyzer) runWritten(p string, asShell bool, idx int) bool {
	w, ok := a.written[p]
	if !ok {
		return false
	}
	text, known := a.writtenContentAt(w, idx)
	if !known {
		return false
	}
	if !asShell && !shellScript(text, a.r) {
		return false
	}
	a.nestedScript(text, OriginScript, idx)
	return true
}

// shellScript reports whether a file run directly is run by a shell: it
// has no "#!" line (the shell runs it), or the line names a shell.
func shellScript(text string, r *rules) bool {
	line, _, _ := strings.Cut(text, "\n")
	if !strings.HasPrefix(line, "#!") {
		return true
	}
	f := strings.Fields(line[2:])
	if len(f) == 0 {
		return true
	}
	prog := progName(f[0])
	if prog == "env" && len(f) > 1 {
		// #!/usr/bin/env bash, #!/usr/bin/env -S bash -e: the first word
		// that is not an option or an assignment.
		prog = ""
		for _, w := range f[1:] {
			if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
				prog = progName(w)
				break
			}
		}
	}
	return r.shells.has(prog)
}

// redirects judges the redirections of a statement whose command is the
// segment idx (or -1).
func (a *analyzer) redirects(rs []*syntax.Redirect, idx int) {
	for _, r := range rs {
		if r == nil || r.Word == nil {
			continue
		}
		a.selfRedirect(r) // selfapprove.go: /dev/tcp to the daemon
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
			syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
		case syntax.DplOut:
			v, dyn, _, _ := a.resolve(r.Word)
			if !dyn && (v == "-" || isDigits(v)) {
				continue
			}
		case syntax.RdrIn:
			if v, dyn, _, _ := a.resolve(r.Word); !dyn {
				p, _ := a.abs(v)
				if a.r.secret(p) && idx >= 0 {
					a.out.Segments[idx].flags |= fSecret
				}
				if idx >= 0 {
					a.out.Segments[idx].Stdin = p
				}
				a.candidate(arg{val: v}, inRead, false) // cat < FILE and $(< FILE) read FILE
			}
			continue
		default:
			continue
		}
		v, dyn, glob, pat := a.resolve(r.Word)
		x := arg{val: v, dyn: dyn}
		if dyn {
			x.val = a.text(r.Word)
		}
		a.writeTarget(x, "redirects output to")
		if glob && !dyn {
			a.globWrites(pat) // bash writes the one file a pattern matches
		}
		if idx >= 0 && !dyn && (r.N == nil || r.N.Value == "1") {
			seg := &a.out.Segments[idx]
			switch {
			case seg.flags&fDownload != 0:
				a.markDownloaded(v)
			case seg.flags&fText != 0:
				a.markWritten(v, seg.text, r.Op == syntax.AppOut || r.Op == syntax.AppAll)
			default:
				a.markWritten(v, "", false) // content not known
			}
		}
	}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// stdin describes what a command reads on standard input from its
// redirections.
type stdin struct {
	kind byte // 0 none, 'd' a document (here-doc or here-string), 'f' a file
	text string
	dyn  bool
	sub  [2]int
	file arg
}

func (a *analyzer) stdinOf(rs []*syntax.Redirect) stdin {
	var in stdin
	for _, r := range rs {
		if r == nil || r.Word == nil || r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			quoted := false
			for _, p := range r.Word.Parts {
				switch p := p.(type) {
				case *syntax.SglQuoted, *syntax.DblQuoted:
					quoted = true
				case *syntax.Lit:
					if strings.Contains(p.Value, `\`) {
						quoted = true
					}
				}
			}
			t, ok := a.doc(r.Hdoc, quoted)
			in = stdin{kind: 'd', text: t, dyn: !ok}
		case syntax.WordHdoc:
			v, dyn, _, _ := a.resolve(r.Word)
			in = stdin{kind: 'd', text: v + "\n", dyn: dyn, sub: a.subRange(r.Word)}
		case syntax.RdrIn:
			v, dyn, _, _ := a.resolve(r.Word)
			x := arg{val: v, dyn: dyn, sub: a.subRange(r.Word)}
			if dyn {
				x.val = a.text(r.Word)
			}
			in = stdin{kind: 'f', file: x, dyn: dyn, sub: x.sub}
		}
	}
	return in
}

// subRange finds the segments that came from substitutions inside a
// redirection's word, judged when the statement was entered.
func (a *analyzer) subRange(w *syntax.Word) [2]int {
	for _, r := range a.redirSubs {
		if r.w == w {
			return r.sub
		}
	}
	return [2]int{}
}

// describeArgs formats a command for a message.
func describeArgs(name string, args []arg) string {
	var b strings.Builder
	b.WriteString(name)
	for i, x := range args {
		if i == 8 {
			fmt.Fprintf(&b, " … (%d more)", len(args)-i)
			break
		}
		b.WriteByte(' ')
		b.WriteString(x.val)
	}
	return b.String()
}
