package shell

import (
	"path"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// Shown files: which files a shell command prints to the agent, and which
// of their lines. The kernel remembers such a file as read by the session
// (the stale-read check, see docs/grants.md) when the lines shown cover the
// whole file: agents without a read tool (Codex) read files with
// `cat f`, `sed -n '1,200p' f` or `nl -ba f | sed -n '1,200p'`.
//
// The recognised forms are few and plain, on purpose: a file counts as
// shown only where the command's standard output is the agent's (no
// redirection of it, no pipe into anything but a line range, no
// substitution), its words are static, and the program and every option
// are known. Anything else shows nothing — which only leaves the file as
// not read (the check then asks the agent to read it again).

// Shown is a file a command prints to the agent: its lines First..Last
// (1-based; Last 0: to the end), or, when Tail > 0, its last Tail lines.
type Shown struct {
	Path  string
	First int
	Last  int
	Tail  int
}

// Covers reports whether the lines shown are all of a file of lines lines.
func (s Shown) Covers(lines int) bool {
	if s.Tail > 0 {
		return s.Tail >= lines
	}
	return s.First <= 1 && (s.Last == 0 || s.Last >= lines)
}

// maxShownDepth bounds the unwrapping of `bash -lc '…'`.
const maxShownDepth = 3

// ShownFiles returns the files command prints to the agent, resolved
// against cwd (an absolute directory; relative paths are dropped without
// one). It never runs anything and never reads the file system.
func ShownFiles(command, cwd string) []Shown {
	if len(command) > 1<<16 {
		return nil
	}
	w := shownWalk{cwd: cwd}
	w.script(command, 0)
	return w.out
}

type shownWalk struct {
	cwd  string
	out  []Shown
	stop bool
}

func (w *shownWalk) script(src string, depth int) {
	if depth > maxShownDepth {
		w.stop = true
		return
	}
	p := parsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	parsers.Put(p)
	if err != nil {
		w.stop = true
		return
	}
	// `bash -lc 'script'`, as Codex runs every command: the script is
	// what runs.
	if len(f.Stmts) == 1 && plainStmt(f.Stmts[0]) {
		if c, ok := f.Stmts[0].Cmd.(*syntax.CallExpr); ok && len(c.Assigns) == 0 {
			if words, ok := shownWords(c.Args); ok {
				if inner, ok := shownShellScript(words); ok {
					w.script(inner, depth+1)
					return
				}
			}
		}
	}
	w.stmts(f.Stmts)
}

func (w *shownWalk) stmts(list []*syntax.Stmt) {
	for _, s := range list {
		if w.stop {
			return
		}
		w.stmt(s)
	}
}

// plainStmt reports whether s runs in the foreground with its standard
// output unchanged (only standard error may be redirected).
func plainStmt(s *syntax.Stmt) bool {
	if s == nil || s.Negated || s.Background || s.Coprocess {
		return false
	}
	for _, r := range s.Redirs {
		if r.N == nil || r.N.Value != "2" {
			return false
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.DplOut, syntax.RdrClob:
		default:
			return false
		}
	}
	return true
}

func (w *shownWalk) stmt(s *syntax.Stmt) {
	if s == nil {
		return
	}
	switch c := s.Cmd.(type) {
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt, syntax.OrStmt:
			if !plainStmt(s) {
				// (a && b) > out: nothing of it is shown, and what it
				// does to the working directory is not followed.
				w.stop = true
				return
			}
			w.stmt(c.X)
			if w.stop {
				return
			}
			// What runs after && runs only when what came before
			// succeeded: followed after cd alone (cd d && cat f shows d/f
			// or nothing). What runs after || may not run: a cd there
			// leaves the working directory unknown.
			if c.Op == syntax.AndStmt && onlyCd(c.X) {
				w.stmt(c.Y)
				return
			}
			if changesDir(c.Y) {
				w.stop = true
			}
		case syntax.Pipe:
			if plainStmt(s) && plainStmt(c.X) && plainStmt(c.Y) {
				w.pipe(c.X, c.Y)
			}
			// A pipeline runs in subshells: the working directory is
			// unchanged after it.
		default:
			w.stop = true
		}
	case *syntax.CallExpr:
		words, ok := shownWords(c.Args)
		if !ok || len(c.Assigns) > 0 {
			// A command computed at run time (or with assignments) may be
			// anything, a cd included: stop following.
			w.stop = true
			return
		}
		if len(words) == 0 {
			return
		}
		name := progName(words[0])
		switch name {
		case "cd":
			if len(words) != 2 || strings.HasPrefix(words[1], "-") || strings.HasPrefix(words[1], "~") {
				w.stop = true
				return
			}
			d, ok := w.abs(words[1])
			if !ok {
				w.stop = true
				return
			}
			w.cwd = d
			return
		case "pushd", "popd", "source", ".", "eval", "exec", "builtin", "command", "alias", "unalias",
			"shopt", "set", "enable", "function", "trap", "hash", "exit", "return", "logout", "kill", "wait":
			w.stop = true
			return
		}
		if !plainStmt(s) {
			return
		}
		w.out = append(w.out, w.display(name, words[1:])...)
	default:
		// Subshells, blocks, loops, functions: not followed.
		w.stop = true
	}
}

// onlyCd reports whether s is `cd DIR` or a chain of them joined by &&.
func onlyCd(s *syntax.Stmt) bool {
	if s == nil || !plainStmt(s) {
		return false
	}
	switch c := s.Cmd.(type) {
	case *syntax.BinaryCmd:
		return c.Op == syntax.AndStmt && onlyCd(c.X) && onlyCd(c.Y)
	case *syntax.CallExpr:
		words, ok := shownWords(c.Args)
		return ok && len(words) > 0 && progName(words[0]) == "cd"
	}
	return false
}

// changesDir reports whether s may change the working directory or stop
// the script: anything but simple commands of static words other than cd
// and the like.
func changesDir(s *syntax.Stmt) bool {
	probe := shownWalk{cwd: "/"}
	probe.stmt(s)
	return probe.stop || probe.cwd != "/"
}

// pipe handles `cat -n F | sed -n 'A,Bp'` and `nl -ba F | head -n N`: a
// whole single file numbered or not, cut to a range of lines.
func (w *shownWalk) pipe(x, y *syntax.Stmt) {
	cx, ok1 := x.Cmd.(*syntax.CallExpr)
	cy, ok2 := y.Cmd.(*syntax.CallExpr)
	if !ok1 || !ok2 || len(cx.Assigns) > 0 || len(cy.Assigns) > 0 {
		return
	}
	wx, ok1 := shownWords(cx.Args)
	wy, ok2 := shownWords(cy.Args)
	if !ok1 || !ok2 || len(wx) == 0 || len(wy) == 0 {
		return
	}
	var file string
	switch progName(wx[0]) {
	case "cat":
		opts, ops, ok := splitOpts(wx[1:], nil)
		if !ok || len(ops) != 1 || !allIn(opts, "-n", "--number") {
			return
		}
		file = ops[0]
	case "nl":
		opts, ops, ok := splitOpts(wx[1:], nil)
		if !ok || len(ops) != 1 || !allIn(opts, "-ba") {
			return
		}
		file = ops[0]
	default:
		return
	}
	ranged := w.display(progName(wy[0]), append(wy[1:], file))
	if len(ranged) == 1 {
		w.out = append(w.out, ranged[0])
	}
}

// display returns what `name args…` prints of files.
func (w *shownWalk) display(name string, args []string) []Shown {
	var spans []Shown
	var files []string
	switch name {
	case "cat":
		opts, ops, ok := splitOpts(args, nil)
		if !ok || !allIn(opts, "-n", "-b", "-A", "-E", "-T", "-v", "-e", "-t", "-u", "-s", "-nA", "-An",
			"--number", "--number-nonblank", "--show-all", "--show-ends", "--show-tabs", "--show-nonprinting", "--squeeze-blank") {
			return nil
		}
		files = ops
		spans = []Shown{{First: 1}}
	case "nl":
		opts, ops, ok := splitOpts(args, nil)
		if !ok || !allIn(opts, "-ba") {
			return nil
		}
		files = ops
		spans = []Shown{{First: 1}}
	case "head", "tail":
		opts, ops, ok := splitOpts(args, map[string]bool{"-n": true, "--lines": true})
		if !ok {
			return nil
		}
		n, from := 10, 0
		for _, o := range opts {
			v, ok := shownOptValue(o, "-n", "--lines")
			if !ok {
				if len(o) > 1 && isDigits(o[1:]) {
					v = o[1:] // head -20
				} else if o == "-q" || o == "--quiet" {
					continue
				} else {
					return nil
				}
			}
			switch {
			case name == "tail" && strings.HasPrefix(v, "+") && isDigits(v[1:]) && len(v) < 10:
				from, _ = strconv.Atoi(v[1:])
				n = 0
			case isDigits(v) && len(v) < 10:
				n, _ = strconv.Atoi(v)
				from = 0
			default:
				return nil
			}
		}
		if len(ops) > 1 && n > 0 && name == "tail" {
			return nil
		}
		files = ops
		switch {
		case name == "head":
			if n == 0 {
				return nil
			}
			spans = []Shown{{First: 1, Last: n}}
		case from > 0:
			spans = []Shown{{First: from}}
		default:
			if n == 0 {
				return nil
			}
			spans = []Shown{{Tail: n}}
		}
	case "sed":
		// sed -n 'A,Bp' FILE (one file: sed numbers the lines of several
		// files as one stream).
		opts, ops, ok := splitOpts(args, map[string]bool{"-e": true, "--expression": true})
		if !ok {
			return nil
		}
		quiet := false
		var script []string
		for _, o := range opts {
			if o == "-n" || o == "--quiet" || o == "--silent" {
				quiet = true
				continue
			}
			if v, ok := shownOptValue(o, "-e", "--expression"); ok {
				script = append(script, v)
				continue
			}
			return nil
		}
		if len(script) == 0 {
			if len(ops) == 0 {
				return nil
			}
			script, ops = ops[:1], ops[1:]
		}
		if !quiet || len(script) != 1 || len(ops) != 1 {
			return nil
		}
		sp, ok := sedRange(script[0])
		if !ok {
			return nil
		}
		files = ops
		spans = []Shown{sp}
	default:
		return nil
	}
	var out []Shown
	for _, f := range files {
		if f == "-" || f == "" {
			continue
		}
		p, ok := w.abs(f)
		if !ok {
			continue
		}
		s := spans[0]
		s.Path = p
		out = append(out, s)
	}
	return out
}

// sedRangeRe matches a sed script that prints one range of lines: `p`,
// `5p`, `1,200p`, `10,$p`, with an optional `;` or `q` after.
var sedRangeRe = lazyre.New(`^\s*(?:([0-9]{1,9})(?:\s*,\s*([0-9]{1,9}|\$))?)?\s*p\s*;?\s*$`)

func sedRange(s string) (Shown, bool) {
	m := sedRangeRe.FindStringSubmatch(s)
	if m == nil {
		return Shown{}, false
	}
	if m[1] == "" {
		return Shown{First: 1}, true
	}
	a, _ := strconv.Atoi(m[1])
	switch m[2] {
	case "":
		return Shown{First: a, Last: a}, true
	case "$":
		return Shown{First: a}, true
	}
	b, _ := strconv.Atoi(m[2])
	if b < a {
		return Shown{First: a, Last: a}, true
	}
	return Shown{First: a, Last: b}, true
}

// splitOpts separates options (joined with their values, "-n 5" as "-n5"
// for short ones and "--lines=5" for long ones, when valued lists them)
// from operands; "--" ends the options.
func splitOpts(args []string, valued map[string]bool) (opts, ops []string, ok bool) {
	for i := 0; i < len(args); i++ {
		x := args[i]
		switch {
		case x == "--":
			return opts, append(ops, args[i+1:]...), true
		case strings.HasPrefix(x, "-") && x != "-":
			if valued[x] {
				if i+1 >= len(args) {
					return nil, nil, false
				}
				if strings.HasPrefix(x, "--") {
					opts = append(opts, x+"="+args[i+1])
				} else {
					opts = append(opts, x+args[i+1])
				}
				i++
				continue
			}
			opts = append(opts, x)
		default:
			ops = append(ops, x)
		}
	}
	return opts, ops, true
}

// shownOptValue returns the value of an option joined by splitOpts.
func shownOptValue(o, short, long string) (string, bool) {
	switch {
	case strings.HasPrefix(o, long+"="):
		return o[len(long)+1:], true
	case strings.HasPrefix(o, short) && len(o) > len(short) && !strings.HasPrefix(o, "--"):
		return o[len(short):], true
	}
	return "", false
}

func allIn(opts []string, known ...string) bool {
	for _, o := range opts {
		ok := false
		for _, k := range known {
			if o == k {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// shownShellScript returns the script of `bash|sh|zsh|dash [-l…] -c SCRIPT`.
func shownShellScript(words []string) (string, bool) {
	switch progName(words[0]) {
	case "bash", "sh", "zsh", "dash":
	default:
		return "", false
	}
	for i := 1; i < len(words); i++ {
		x := words[i]
		switch {
		case x == "--login" || x == "-l":
		case strings.HasPrefix(x, "-") && !strings.HasPrefix(x, "--") && strings.Trim(x[1:], "lec") == "" && strings.Contains(x, "c"):
			if i+2 != len(words) {
				return "", false // positional parameters: $1 would be dynamic anyway
			}
			return words[i+1], true
		default:
			return "", false
		}
	}
	return "", false
}

// shownWords returns the words as the shell passes them, when none is
// computed at run time or a pattern.
func shownWords(ws []*syntax.Word) ([]string, bool) {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		s, ok := shownWord(w)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func shownWord(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[{~\\") {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || strings.ContainsAny(l.Value, "\\") {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// abs resolves p against the walk's working directory.
func (w *shownWalk) abs(p string) (string, bool) {
	if path.IsAbs(p) {
		return path.Clean(p), true
	}
	if w.cwd == "" || !path.IsAbs(w.cwd) {
		return "", false
	}
	return path.Join(w.cwd, p), true
}

// CommandOf returns the command of a shell action's arguments (a string,
// or an argv list joined as the shell guard judges it).
func CommandOf(args map[string]any) (string, bool) {
	c, why := commandOf(args)
	return c, why == ""
}
