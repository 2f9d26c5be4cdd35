package shell

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
)

// Limits that keep analysis bounded. Exceeding one is a finding at approve.
const (
	maxInput    = 1 << 20 // bytes of command text
	maxDepth    = 6       // nested re-parses (sh -c inside eval inside …)
	maxNest     = 256     // nested syntax (subshells, blocks, substitutions)
	maxSegments = 1024    // simple commands
	maxBraces   = 64      // words one brace expansion may produce

	// previewBudget is the number of file system entries the previews of
	// one analysis may visit.
	previewBudget = 5000
)

var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// varState is what is known about a shell variable assigned in the command.
type varState struct {
	val   string
	dyn   bool     // assigned more than one value, or a value not known statically
	arr   []string // the elements of an array (isArr)
	isArr bool
}

// classAcc accumulates the soft classification of segments that share a
// check, so that "ls | grep | sort" gives one read-only finding.
type classAcc struct {
	check string
	level action.Level
	names []string
}

// analyzer holds the state of one analysis.
type analyzer struct {
	r   *rules
	env Env
	out *Analysis

	src        string // the source text being walked (for dynamic argument text)
	depth      int    // re-parse depth
	nest       int    // syntax nesting depth
	cwd        string // working directory at this point of the command
	cwdKnown   bool
	pipeIn     bool     // standard input comes from a pipe
	wrapCtx    []string // wrappers of the command whose string is being re-parsed
	cur        int      // index of the segment findings are about, or -1
	vars       map[string]varState
	funcs      map[string]bool
	classes    []classAcc
	ops        []string // scratch buffer for operands
	budget     int      // file system entries previews may still visit
	limited    bool     // a limit finding was added
	fsys       fs.FS
	redirSubs  []redirSub
	downloaded map[string]bool        // files downloaded earlier in the command
	written    map[string]writtenFile // files written earlier in the command
	// gitMoved names an earlier git command of this command that moved a
	// branch, a tag, HEAD or the index (gitrestore.go): the repository
	// read from disk is not the one a later restore reads.
	gitMoved string
	// readSpent is the time spent reading archives and repositories for
	// this command (maxReadSpent bounds it).
	readSpent time.Duration
	// ovCopies are files the command copied Overseer's binaries to, and
	// which command each is ("overseer", "overseer-hook").
	ovCopies    map[string]string
	certState             // static values followed through the command (static.go)
	prov        provState // files runners execute, read once (provenance.go)
	envState              // environment variables the command sets (envvars.go)
	effectFacts int       // path facts added by the effect scan
	plantDepth  int       // analyses of planted text this one is inside (planted.go)
	// bins are the programs of a package's own (node_modules/.bin, its
	// dependencies) when the command is one of its scripts (laterrun.go):
	// not unknown programs, as for npm run.
	bins func(string) bool
	// filtered are the files JSON filters of the command read (and only
	// read: jsonfilter.go).
	filtered map[string]bool
}

// redirSub remembers the segments that came from substitutions inside a
// redirection's word.
type redirSub struct {
	w   *syntax.Word
	sub [2]int
}

func analyze(r *rules, command string, env Env) (out Analysis) {
	return analyzeDepth(r, command, env, 0)
}

// analyzeDepth is analyze inside depth analyses of planted text.
func analyzeDepth(r *rules, command string, env Env, depth int) (out Analysis) {
	return analyzeBins(r, command, env, depth, nil)
}

// analyzeBins is analyzeDepth for a package's script, whose own programs
// bins reports (nil for none).
func analyzeBins(r *rules, command string, env Env, depth int, bins func(string) bool) (out Analysis) {
	a := &analyzer{r: r, env: env, out: &out, cur: -1, budget: previewBudget, plantDepth: depth, bins: bins}
	if env.Home != "" {
		a.env.Home = path.Clean(env.Home)
	}
	if env.Cwd != "" && path.IsAbs(env.Cwd) {
		a.cwd, a.cwdKnown = path.Clean(env.Cwd), true
	}
	a.env.Cwd = a.cwd
	defer func() {
		if p := recover(); p != nil {
			// A bug in the analysis must not let the command through.
			a.cur = -1
			a.add(guard.Finding{Check: "shell.internal-error", Level: action.Approve, Hard: true,
				Message: fmt.Sprintf("the command could not be analysed (%v)", p)})
			a.finish()
		}
	}()
	if len(command) > maxInput {
		a.add(guard.Finding{Check: "shell.too-complex", Level: action.Approve, Hard: true,
			Message: fmt.Sprintf("the command is %d bytes long, more than the %d that are analysed", len(command), maxInput)})
		a.finish()
		return out
	}
	a.script(command, OriginList)
	a.plantedWrites()
	a.finish()
	return out
}

// finish emits the accumulated classes and computes the level.
func (a *analyzer) finish() {
	if a.bins != nil {
		a.packageBins()
	}
	for _, c := range a.classes {
		a.out.Findings = append(a.out.Findings, guard.Finding{
			Check: "shell." + c.check, Level: c.level, Message: classMessage(c),
		})
	}
	a.classes = nil
	if len(a.out.Findings) == 0 {
		a.out.Findings = append(a.out.Findings, guard.Finding{Check: "shell.empty", Level: action.Auto,
			Message: "the command runs nothing"})
	}
	var l action.Level
	for _, f := range a.out.Findings {
		l = max(l, f.Level)
	}
	a.out.Level = l
}

// packageBins moves the unknown programs that are the package's own
// (bins) to the programs of the working tree, as npm run judges them.
func (a *analyzer) packageBins() {
	var own []string
	for i := range a.classes {
		c := &a.classes[i]
		if c.check != "unknown-command" {
			continue
		}
		kept := c.names[:0]
		for _, n := range c.names {
			if a.bins(n) {
				own = append(own, n)
			} else {
				kept = append(kept, n)
			}
		}
		c.names = kept
	}
	a.classes = slices.DeleteFunc(a.classes, func(c classAcc) bool { return len(c.names) == 0 })
	for _, n := range own {
		a.class("project-program", action.Notify, n)
	}
}

func classMessage(c classAcc) string {
	var what string
	switch c.check {
	case "readonly":
		what = "read-only"
	case "dev":
		what = "development commands"
	case "unknown-command":
		what = "commands not known to the shell guard"
	case "project-program":
		what = "programs from the working tree"
	case "function":
		what = "functions defined in the command"
	case "write":
		what = "writes files"
	case "dev-db":
		what = "the project's local database"
	case "dev-cluster":
		what = "a cluster on this machine"
	case "find-caches":
		what = "caches made again when gone"
	default:
		what = c.check
	}
	return what + ": " + strings.Join(c.names, ", ")
}

// class records a soft classification of the current segment.
func (a *analyzer) class(check string, level action.Level, name string) {
	a.bump(level)
	for i := range a.classes {
		c := &a.classes[i]
		if c.check == check && c.level == level {
			if !slices.Contains(c.names, name) && len(c.names) < 12 {
				c.names = append(c.names, name)
			}
			return
		}
	}
	a.classes = append(a.classes, classAcc{check: check, level: level, names: []string{name}})
}

// add records a finding about the current segment. Identical findings are
// kept once.
func (a *analyzer) add(f guard.Finding) {
	a.bump(f.Level)
	for i := range a.out.Findings {
		g := &a.out.Findings[i]
		if g.Check == f.Check && g.Message == f.Message && g.Level == f.Level && g.Hard == f.Hard {
			if g.Preview == nil {
				g.Preview = f.Preview
			}
			return
		}
	}
	a.out.Findings = append(a.out.Findings, f)
}

func (a *analyzer) bump(l action.Level) {
	if a.cur >= 0 && a.cur < len(a.out.Segments) && a.out.Segments[a.cur].Level < l {
		a.out.Segments[a.cur].Level = l
	}
}

// limit records that a bound was exceeded; the command needs an approval.
func (a *analyzer) limit(msg string) {
	if a.limited {
		return
	}
	a.limited = true
	cur := a.cur
	a.cur = -1
	a.add(guard.Finding{Check: "shell.too-complex", Level: action.Approve, Hard: true, Message: msg})
	a.cur = cur
}

// script parses src and walks it. Parse errors are findings at approve; the
// part that did parse is still judged, so a block is not lost.
func (a *analyzer) script(src string, origin Origin) {
	if a.depth >= maxDepth {
		a.limit(fmt.Sprintf("commands nested more than %d levels deep (sh -c, eval, …) are not analysed", maxDepth))
		return
	}
	p := parsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	parsers.Put(p)
	if err != nil {
		if !a.out.ParseFailed {
			a.out.ParseFailed = true
			a.out.ParseError = err.Error()
		}
		cur := a.cur
		a.cur = -1
		where := "the command"
		if a.depth > 0 {
			where = "a command string inside the command (" + string(origin) + ")"
		}
		a.add(guard.Finding{Check: "shell.unparseable", Level: action.Approve, Hard: true,
			Message: where + " is not valid shell and cannot be judged: " + err.Error()})
		a.cur = cur
	}
	if f == nil {
		return
	}
	prevSrc := a.src
	a.src = src
	a.depth++
	a.stmts(f.Stmts, origin)
	a.depth--
	a.src = prevSrc
}

func (a *analyzer) stmts(list []*syntax.Stmt, origin Origin) {
	for _, s := range list {
		a.stmt(s, origin)
	}
}

func (a *analyzer) enter() bool {
	a.nest++
	if a.nest > maxNest {
		a.limit(fmt.Sprintf("the command is nested more than %d levels deep", maxNest))
		return false
	}
	return true
}

func (a *analyzer) leave() { a.nest-- }

func (a *analyzer) stmt(s *syntax.Stmt, origin Origin) {
	if s == nil {
		return
	}
	if !a.enter() {
		a.leave()
		return
	}
	defer a.leave()
	// Only the simple command of a pipe stage reads the stage's input.
	pipeText := a.pipeText
	a.pipeText = nil
	for _, r := range s.Redirs {
		if r != nil {
			start := len(a.out.Segments)
			a.substs(r.Word, origin)
			a.substs(r.Hdoc, origin)
			if end := len(a.out.Segments); end > start {
				a.redirSubs = append(a.redirSubs, redirSub{w: r.Word, sub: [2]int{start, end}})
			}
		}
	}
	switch c := s.Cmd.(type) {
	case nil:
		// Only redirections: "> file" truncates the file.
		a.cur = -1
		a.redirects(s.Redirs, -1)
	case *syntax.CallExpr:
		a.call(c, s.Redirs, origin, pipeText)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.Pipe, syntax.PipeAll:
			a.pipeline(c, origin)
		default:
			a.stmt(c.X, origin)
			a.stmt(c.Y, origin)
		}
		a.redirectsOnly(s.Redirs)
	case *syntax.Subshell:
		cwd, known := a.cwd, a.cwdKnown
		a.stmts(c.Stmts, origin)
		a.cwd, a.cwdKnown = cwd, known
		a.redirectsOnly(s.Redirs)
	case *syntax.Block:
		a.stmts(c.Stmts, origin)
		a.redirectsOnly(s.Redirs)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			a.stmts(ic.Cond, origin)
			a.stmts(ic.Then, origin)
		}
		a.redirectsOnly(s.Redirs)
	case *syntax.WhileClause:
		a.loopBomb(c) // inline.go
		a.stmts(c.Cond, origin)
		a.stmts(c.Do, origin)
		a.redirectsOnly(s.Redirs)
	case *syntax.ForClause:
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			for _, w := range l.Items {
				a.substs(w, origin)
			}
			if l.Name != nil {
				if vals, ok := a.loopValues(l.Items); ok && len(vals) > 0 {
					// A loop over static words runs its body once per word:
					// judge it so (for f in ~/.ssh/id_*; do cat "$f"; done).
					for _, v := range vals {
						a.setVar(l.Name.Value, v, false)
						a.stmts(c.Do, origin)
					}
					a.setVar(l.Name.Value, "", true)
					a.redirectsOnly(s.Redirs)
					return
				}
				a.setVar(l.Name.Value, "", true)
			}
		case *syntax.CStyleLoop:
			a.arith(l.Init, origin)
			a.arith(l.Cond, origin)
			a.arith(l.Post, origin)
		}
		a.stmts(c.Do, origin)
		a.redirectsOnly(s.Redirs)
	case *syntax.CaseClause:
		a.substs(c.Word, origin)
		for _, it := range c.Items {
			if it == nil {
				continue
			}
			for _, w := range it.Patterns {
				a.substs(w, origin)
			}
			a.stmts(it.Stmts, origin)
		}
		a.redirectsOnly(s.Redirs)
	case *syntax.FuncDecl:
		a.funcDecl(c)
	case *syntax.ArithmCmd:
		a.arith(c.X, origin)
	case *syntax.LetClause:
		for _, e := range c.Exprs {
			a.arith(e, origin)
		}
	case *syntax.TestClause:
		a.walkSubsts(c.X, origin)
		a.redirectsOnly(s.Redirs)
	case *syntax.DeclClause:
		a.decl(c, s.Redirs, origin)
	case *syntax.TimeClause:
		a.stmt(c.Stmt, origin)
	case *syntax.CoprocClause:
		a.stmt(c.Stmt, origin)
	case *syntax.TestDecl:
		a.stmt(c.Body, origin)
	default:
		a.cur = -1
		a.add(guard.Finding{Check: "shell.unsupported", Level: action.Approve, Hard: true,
			Message: fmt.Sprintf("the command uses shell syntax the guard does not judge (%T)", c)})
	}
}

// redirectsOnly judges the redirections of a compound command.
func (a *analyzer) redirectsOnly(rs []*syntax.Redirect) {
	if len(rs) > 0 {
		a.cur = -1
		a.redirects(rs, -1)
	}
}

// pipeline judges each stage, then what flows between them: a download or
// an unknown output piped into a shell, a secret piped into the network.
func (a *analyzer) pipeline(b *syntax.BinaryCmd, origin Origin) {
	var stages []*syntax.Stmt
	var flatten func(s *syntax.Stmt)
	flatten = func(s *syntax.Stmt) {
		if s == nil {
			return
		}
		if bc, ok := s.Cmd.(*syntax.BinaryCmd); ok && (bc.Op == syntax.Pipe || bc.Op == syntax.PipeAll) && len(s.Redirs) == 0 && !s.Negated {
			flatten(bc.X)
			flatten(bc.Y)
			return
		}
		stages = append(stages, s)
	}
	flatten(b.X)
	flatten(b.Y)
	o := origin
	if o == OriginList {
		o = OriginPipe
	}
	cwd, known := a.cwd, a.cwdKnown
	pipeIn := a.pipeIn
	upStart := len(a.out.Segments)
	prevStart, prevEnd := -1, -1
	for i, st := range stages {
		start := len(a.out.Segments)
		a.pipeIn = pipeIn || i > 0
		a.pipeText = nil
		if i > 0 {
			if t, ok := a.stmtOutput(stages[i-1]); ok {
				a.pipeText = &t
			}
		}
		a.stmt(st, o)
		a.pipeText = nil
		a.cwd, a.cwdKnown = cwd, known // each stage runs in a subshell
		end := len(a.out.Segments)
		if i > 0 {
			a.pipeFlow(upStart, start, prevStart, prevEnd, start, end)
		}
		prevStart, prevEnd = start, end
	}
	a.pipeIn = pipeIn
}

// pipeFlow judges what the stage segs[start:end] does with what the stages
// segs[upStart:upEnd] before it produce (the last of them is
// segs[prevStart:prevEnd]).
func (a *analyzer) pipeFlow(upStart, upEnd, prevStart, prevEnd, start, end int) {
	segs := a.out.Segments
	var up segFlags
	var upNames []string
	for i := upStart; i < upEnd; i++ {
		up |= segs[i].flags
		if segs[i].Name != "" && len(upNames) < 4 && !slices.Contains(upNames, segs[i].Name) {
			upNames = append(upNames, segs[i].Name)
		}
	}
	for i := start; i < end; i++ {
		s := &segs[i]
		a.cur = i
		if s.flags&fExecStdin != 0 {
			a.execFromPipe(s, up, upNames, prevStart, prevEnd)
		}
		if s.flags&fNetSend != 0 {
			s.PipedFiles = a.pipedFiles(upStart, upEnd, s.PipedFiles)
		}
		if s.flags&fNetSend != 0 && a.secretIn(upStart, upEnd) {
			a.add(guard.Finding{Check: "shell.secret-exfil", Level: action.Approve, Hard: true,
				Message: fmt.Sprintf("a secret file is piped into %s, which sends it over the network", s.Name)})
		}
	}
	a.cur = -1
}

// pipedFiles adds to fs the files that segs[from:to] read, or have as
// their standard input.
func (a *analyzer) pipedFiles(from, to int, fs []string) []string {
	for i := max(from, 0); i < to && i < len(a.out.Segments); i++ {
		u := &a.out.Segments[i]
		add := func(p string) {
			if p != "" && len(fs) < maxSegmentReads && !slices.Contains(fs, p) {
				fs = append(fs, p)
			}
		}
		for _, p := range u.reads {
			add(p)
		}
		add(u.Stdin)
	}
	return fs
}

// execFromPipe judges a shell or interpreter that runs code from a pipe.
func (a *analyzer) execFromPipe(s *Segment, up segFlags, upNames []string, prevStart, prevEnd int) {
	names := strings.Join(upNames, ", ")
	switch {
	case up&fDownload != 0:
		a.add(guard.Finding{Check: "shell.download-exec", Level: action.Approve, Hard: true,
			Message: fmt.Sprintf("downloaded content (%s) is piped into %s and runs unseen", names, s.Name)})
		return
	case up&fDecode != 0:
		a.add(guard.Finding{Check: "shell.obfuscated", Level: action.Approve, Hard: true,
			Message: fmt.Sprintf("decoded content (%s) is piped into %s and runs unseen", names, s.Name)})
		return
	}
	// A single static producer (echo, printf, cat <<EOF): judge its text.
	if prevEnd-prevStart >= 1 {
		p := &a.out.Segments[prevStart]
		if p.flags&fText != 0 && prevEnd-prevStart == 1 {
			if a.r.shells.has(s.Name) || s.Name == "at" || s.Name == "batch" {
				cur := a.cur
				a.cur = -1
				a.script(p.text, OriginStdin)
				a.cur = cur
			} else {
				a.add(guard.Finding{Check: "shell.inline-code", Level: action.Confirm,
					Message: fmt.Sprintf("%s runs code piped into it", s.Name)})
			}
			return
		}
	}
	a.add(guard.Finding{Check: "shell.obfuscated", Level: action.Approve, Hard: true,
		Message: fmt.Sprintf("the output of %s is piped into %s and runs as code that cannot be seen", orUnknown(names), s.Name)})
}

func orUnknown(s string) string {
	if s == "" {
		return "a command"
	}
	return s
}

// secretIn reports whether a segment in segs[from:to] reads a secret file.
// What is found is remembered in the segments' flags.
func (a *analyzer) secretIn(from, to int) bool {
	for i := max(from, 0); i < to && i < len(a.out.Segments); i++ {
		s := &a.out.Segments[i]
		if s.flags&fSecretChecked == 0 {
			s.flags |= fSecretChecked
			if s.Name != "echo" && s.Name != "printf" {
				for _, arg := range s.Args {
					if a.isSecretArg(arg) {
						s.flags |= fSecret
						break
					}
				}
			}
		}
		if s.flags&fSecret != 0 {
			return true
		}
	}
	return false
}

// funcDecl records a function, looks for a fork bomb, and judges the body
// as if it ran.
func (a *analyzer) funcDecl(f *syntax.FuncDecl) {
	var names []string
	if f.Name != nil {
		names = append(names, f.Name.Value)
	}
	for _, n := range f.Names {
		if n != nil {
			names = append(names, n.Value)
		}
	}
	if a.funcs == nil {
		a.funcs = map[string]bool{}
	}
	for _, n := range names {
		a.funcs[strings.ToLower(n)] = true
		a.defineFunction(n, f.Body)
		if f.Body != nil && forkBomb(f.Body, n) {
			a.cur = -1
			a.add(guard.Finding{Check: "shell.fork-bomb", Level: action.Block, Hard: true,
				Message: fmt.Sprintf("function %q starts copies of itself in a pipe or in the background: a fork bomb", n)})
		}
	}
	a.stmt(f.Body, OriginFunction)
}

// forkBomb reports whether body calls name from a pipeline or a background
// statement. It walks the body once.
func forkBomb(body *syntax.Stmt, name string) bool {
	var stack []bool // for each node being walked: is it a pipe or a background statement
	inside, found := 0, false
	syntax.Walk(body, func(n syntax.Node) bool {
		if n == nil {
			if stack[len(stack)-1] {
				inside--
			}
			stack = stack[:len(stack)-1]
			return true
		}
		mark := false
		switch n := n.(type) {
		case *syntax.Stmt:
			mark = n.Background
		case *syntax.BinaryCmd:
			mark = n.Op == syntax.Pipe || n.Op == syntax.PipeAll
		case *syntax.CallExpr:
			if inside > 0 && len(n.Args) > 0 && n.Args[0] != nil {
				if v, dyn, _, _ := staticWord(n.Args[0]); !dyn && v == name {
					found = true
				}
			}
		}
		if found {
			return false
		}
		stack = append(stack, mark)
		if mark {
			inside++
		}
		return true
	})
	return found
}

// call judges a simple command.
func (a *analyzer) call(c *syntax.CallExpr, redirs []*syntax.Redirect, origin Origin, in *textIn) {
	for _, as := range c.Assigns {
		a.assignSubsts(as, origin)
	}
	if len(c.Args) == 0 {
		// Assignments only: they set shell variables (and the environment
		// when the variable is exported, as PATH, HOME and EDITOR are).
		a.envAssigns(c.Assigns, true) // envvars.go
		for _, as := range c.Assigns {
			a.assign(as)
		}
		a.cur = -1
		a.redirects(redirs, -1)
		return
	}
	prefix := a.envAssigns(c.Assigns, false) // envvars.go: GIT_EDITOR=… git commit
	args := a.words(c.Args, origin)
	// Prefix assignments (VAR=x cmd) are the program's environment: they
	// hold while it is judged (CDPATH for cd, variables a nested shell
	// expands), and the shell's own variables come back afterwards.
	restore := a.prefixVars(c.Assigns)
	saved := a.cmdEnv
	if len(prefix) > 0 {
		a.cmdEnv = a.commandEnv(prefix)
	}
	idx := a.command(args, cmdCtx{origin: origin, redirs: redirs, in: in})
	a.cmdEnv = saved
	restore()
	if a.callSeg == nil {
		a.callSeg = map[*syntax.CallExpr]int{}
	}
	a.callSeg[c] = idx
	a.cur = idx
	a.redirects(redirs, idx)
	a.cur = -1
}

// decl judges export, declare, local, readonly and typeset.
func (a *analyzer) decl(d *syntax.DeclClause, redirs []*syntax.Redirect, origin Origin) {
	for _, as := range d.Args {
		a.assignSubsts(as, origin)
	}
	name := "declare"
	if d.Variant != nil {
		name = d.Variant.Value
	}
	a.envAssigns(d.Args, true) // envvars.go: export GIT_EDITOR=…
	for _, as := range d.Args {
		if as == nil {
			continue
		}
		if as.Name != nil && !as.Naked {
			a.assign(as)
		} else if as.Name != nil && (name == "export" || name == "readonly") {
			// "export x" keeps x's value.
			continue
		} else if as.Name != nil {
			// "local x" without a value, or "declare -n x": unknown.
			a.setVar(as.Name.Value, "", true)
		}
	}
	idx := a.newSegment(Segment{Name: name, Path: name, Origin: origin})
	a.cur = idx
	a.class("readonly", action.Auto, name)
	a.redirects(redirs, idx)
	a.cur = -1
}

// assign records a variable assignment.
func (a *analyzer) assign(as *syntax.Assign) {
	if as == nil || as.Name == nil {
		return
	}
	switch {
	case as.Array != nil && as.Index == nil && !as.Append:
		a.assignArray(as.Name.Value, as.Array)
		return
	case as.Array != nil || as.Index != nil || as.Append:
		a.setVar(as.Name.Value, "", true)
		return
	case as.Value == nil:
		a.setVar(as.Name.Value, "", false)
		return
	}
	v, dyn, _, _ := a.resolve(as.Value)
	a.setVar(as.Name.Value, v, dyn)
}

// setVar records a value of a variable. A variable given two different
// values, or a value not known statically, becomes dynamic: the guard does
// not follow control flow, so it cannot tell which value is current.
func (a *analyzer) setVar(name, val string, dyn bool) {
	if a.vars == nil {
		a.vars = map[string]varState{}
	}
	old, seen := a.vars[name]
	switch {
	case dyn, seen && (old.dyn || old.val != val):
		a.vars[name] = varState{dyn: true}
	default:
		a.vars[name] = varState{val: val}
	}
}

// newSegment appends a segment and returns its index, or -1 when there are
// too many segments.
func (a *analyzer) newSegment(s Segment) int {
	if len(a.out.Segments) >= maxSegments {
		a.limit(fmt.Sprintf("the command has more than %d simple commands", maxSegments))
		return -1
	}
	if len(a.wrapCtx) > 0 {
		s.Wrappers = slices.Concat(a.wrapCtx, s.Wrappers)
	}
	a.out.Segments = append(a.out.Segments, s)
	return len(a.out.Segments) - 1
}

// fileSystem returns the file system previews read.
func (a *analyzer) fileSystem() fs.FS {
	if a.fsys == nil {
		a.fsys = a.env.FS
		if a.fsys == nil {
			a.fsys = os.DirFS("/")
		}
	}
	return a.fsys
}

// maxLoopValues bounds how many static words a loop's body is judged for.
const maxLoopValues = 8

// loopValues returns the words a for loop iterates over when every one is
// static (globs expanded against the file system), at most maxLoopValues.
func (a *analyzer) loopValues(items []*syntax.Word) ([]string, bool) {
	var out []string
	for _, w := range items {
		x := a.words([]*syntax.Word{w}, OriginList)
		for _, y := range x {
			if y.dyn {
				return nil, false
			}
			if y.glob {
				p, known := a.abs(y.pat)
				ms, ok := a.globMatches(a.expandHome(p), known)
				if !ok {
					return nil, false
				}
				out = append(out, ms...)
				continue
			}
			out = append(out, y.val)
		}
		if len(out) > maxLoopValues {
			return nil, false
		}
	}
	return out, true
}

// prefixVars sets the static prefix assignments of a command as variables
// and returns a function that restores the variables as they were.
func (a *analyzer) prefixVars(as []*syntax.Assign) func() {
	if len(as) == 0 {
		return func() {}
	}
	type saved struct {
		st  varState
		had bool
	}
	old := map[string]saved{}
	for _, x := range as {
		if x == nil || x.Name == nil || x.Array != nil || x.Index != nil || x.Append {
			continue
		}
		name := x.Name.Value
		if _, done := old[name]; !done {
			st, had := a.vars[name]
			old[name] = saved{st, had}
		}
		a.assign(x)
	}
	return func() {
		for name, sv := range old {
			if sv.had {
				a.vars[name] = sv.st
			} else {
				delete(a.vars, name)
			}
		}
	}
}
