package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/lazyre"
)

// This file reads the inline code of interpreters (python -c, perl -e,
// ruby -e, node -e, awk programs, PowerShell -Command) the way a person
// skimming it would: the guard does not parse these languages, but a
// deletion API called with a string literal that names the root, a system
// directory or the home directory is certain, the strings handed to
// system(), exec() or subprocess are shell commands it can judge, and a
// fork in an endless loop is a fork bomb.

// deleteAPI finds calls of deletion functions in the languages the guard
// knows; the argument list starts after the match.
var deleteAPI = lazyre.New(`(?:\bshutil\s*\.\s*rmtree|\bos\s*\.\s*(?:remove|unlink|rmdir|removedirs)|\b(?:rmtree|remove_tree|rm_rf|rm_r|rm_f|remove_dir|remove_entry(?:_secure)?|rmSync|rmdirSync|unlinkSync|removeSync|emptyDirSync|rimraf(?:\.sync)?|unlink|rmdir|Remove-Item|delete_tree)|\bFileUtils\s*\.\s*rm\b|\bfs(?:\.promises)?\s*\.\s*(?:rm|rmdir|unlink)|\bfs\s*\.\s*remove)\s*(?:\(|\s)`)

// execAPI finds calls that run a shell command string or a program with
// arguments.
var execAPI = lazyre.New(`(?:\bos\s*\.\s*(?:system|popen|exec[lv]p?e?|spawn[lv]p?e?)|\bsubprocess\s*\.\s*(?:run|call|check_call|check_output|Popen|getoutput|getstatusoutput)|\bpty\s*\.\s*spawn|\b(?:system|exec|execSync|execFileSync|spawnSync|spawn|execFile|shell_exec|passthru|popen|proc_open)|\bIO\s*\.\s*popen|\bOpen3\s*\.\s*\w+|\bos\s*\.\s*execute|\bio\s*\.\s*popen|\bRuntime\s*\.\s*getRuntime\s*\(\s*\)\s*\.\s*exec)\s*(?:\(|\s)`)

// homeExpr finds expressions that are the home directory.
var homeExpr = lazyre.New(`expanduser\s*\(\s*['"]~['"/]|Path\s*\.\s*home\s*\(|\bDir\s*\.\s*home\b|\bhomedir\s*\(|environ\s*\[\s*['"]HOME['"]\s*\]|environ\s*\.\s*get\s*\(\s*['"]HOME['"]|getenv\s*\(\s*['"]HOME['"]|\$ENV\s*\{\s*['"]?HOME['"]?\s*\}|\bENV\s*\[\s*['"]HOME['"]\s*\]|process\s*\.\s*env\s*\.\s*HOME|\$env:(?:USERPROFILE|HOME)|\$HOME\b|File::HomeDir`)

// forkLoop finds a fork in an endless loop: Python, Perl, Ruby, PHP, C-like.
var forkLoop = lazyre.New(`(?s)\bwhile\s*\(?\s*(?:True|1|true)\s*\)?\s*[:{]?\s*(?:\w+\s*[.:]\s*)*fork\s*\(|\bfork\s+while\s+(?:fork|1|true)\b|\b1\s+while\s+fork\b|\bwhile\s*\(\s*fork\s*\(?|\bloop\s*(?:do|\{)\s*(?:\w+\s*[.:]\s*)*fork\b|\bfor\s*\(\s*;\s*;\s*\)\s*\{?\s*(?:\w+\s*[.:]\s*)*fork\s*\(`)

// literal is a string literal of inline code and where it ends.
type literal struct {
	val        string
	start, end int
	double     bool
}

// literals returns the string literals of code: '…', "…" and `…`, with
// backslash escapes removed. Python's triple quotes read as empty strings
// around the text, which is good enough here.
func literals(code string) []literal {
	var out []literal
	for i := 0; i < len(code) && len(out) < 256; i++ {
		q := code[i]
		if q != '\'' && q != '"' && q != '`' {
			continue
		}
		var b strings.Builder
		j := i + 1
		for j < len(code) && code[j] != q {
			if code[j] == '\\' && j+1 < len(code) {
				j++
				switch code[j] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case '0':
					b.WriteByte(0)
				default:
					if code[j] == 'x' && j+2 < len(code) && isHex(code[j+1]) && isHex(code[j+2]) {
						b.WriteString(ansiC(code[j-1 : j+3]))
						j += 2
					} else {
						if q == '\'' && code[j] != '\'' && code[j] != '\\' {
							b.WriteByte('\\')
						}
						b.WriteByte(code[j])
					}
				}
				j++
				continue
			}
			b.WriteByte(code[j])
			j++
		}
		if j >= len(code) {
			break
		}
		out = append(out, literal{val: b.String(), start: i, end: j + 1, double: q == '"'})
		i = j
	}
	return out
}

// callArgs returns the text of the arguments of a call whose argument list
// starts at i: up to the matching parenthesis, or to the end of the
// statement when the call has no parentheses (perl's system "…").
func callArgs(code string, i int) (int, int) {
	j := i
	for j < len(code) && (code[j] == ' ' || code[j] == '\t') {
		j++
	}
	if j < len(code) && code[j] == '(' || i > 0 && code[i-1] == '(' {
		if j < len(code) && code[j] == '(' {
			j++
		}
		depth := 1
		var q byte
		k := j
		for ; k < len(code); k++ {
			c := code[k]
			switch {
			case q != 0:
				if c == '\\' {
					k++
				} else if c == q {
					q = 0
				}
			case c == '\'' || c == '"' || c == '`':
				q = c
			case c == '(' || c == '[' || c == '{':
				depth++
			case c == ')' || c == ']' || c == '}':
				depth--
				if depth == 0 {
					return j, k
				}
			}
		}
		return j, len(code)
	}
	k := j
	var q byte
	for ; k < len(code); k++ {
		c := code[k]
		switch {
		case q != 0:
			if c == '\\' {
				k++
			} else if c == q {
				q = 0
			}
		case c == '\'' || c == '"' || c == '`':
			q = c
		case c == ';' || c == '\n' || c == '}':
			return j, k
		}
	}
	return j, len(code)
}

// literalsIn returns the literals inside code[from:to].
func literalsIn(lits []literal, from, to int) []literal {
	var out []literal
	for _, l := range lits {
		if l.start >= from && l.end <= to {
			out = append(out, l)
		}
	}
	return out
}

// inlineCode judges the inline code of an interpreter (see the file
// comment). lang is the interpreter's name.
func (a *analyzer) inlineCode(lang, code string, idx int) {
	if len(code) > maxStaticText {
		return
	}
	if forkLoop.MatchString(code) {
		a.add(guard.Finding{Check: "shell.fork-bomb", Level: action.Block, Hard: true,
			Message: lang + " starts copies of itself in an endless loop: a fork bomb"})
	}
	lits := literals(code)
	// Perl's and Ruby's backticks and qx run shell commands.
	if lang != "node" && lang != "nodejs" && lang != "deno" && lang != "bun" {
		for _, l := range lits {
			if code[l.start] == '`' && l.val != "" {
				a.inlineShell(l.val, idx)
			}
		}
	}
	for _, m := range deleteAPI.FindAllStringIndex(code, 32) {
		from, to := callArgs(code, m[1])
		if m[1] > 0 && code[m[1]-1] == '(' {
			from = m[1]
		}
		args := code[from:to]
		in := literalsIn(lits, from, to)
		target, ok := "", false
		if homeArg(code, from, to, in) {
			// rmtree(os.environ['HOME']), rmSync(require("os").homedir()):
			// the first argument is the home itself.
			in = nil
		}
		if len(in) > 0 {
			target, ok = in[0].val, true
			if strings.HasPrefix(target, "~") && (homeExpr.MatchString(args) || lang == "pwsh" || lang == "powershell") {
				target = "~" + strings.TrimPrefix(target, "~")
			} else if strings.HasPrefix(target, "~") {
				ok = false // a file named ~ in the working directory
			}
			if in[0].double && strings.Contains(target, "$") {
				if h := homeExpr.FindStringIndex(target); h != nil && h[0] == 0 {
					target = "~" + target[h[1]:]
				}
			}
		} else if homeExpr.MatchString(args) {
			target, ok = "~", true
		}
		if !ok {
			continue
		}
		if strings.HasPrefix(target, "~") && a.env.Home != "" {
			target = a.env.Home + target[1:]
		}
		p, _ := a.abs(target)
		if d := a.danger(p); d != dangerNone {
			a.add(guard.Finding{Check: "shell.rm-" + d.check(), Level: action.Block, Hard: true,
				Message: lang + " code removes " + d.describe(p) + ": " + clip(strings.TrimSpace(code[m[0]:min(to+1, len(code))]), 120)})
		}
	}
	for _, m := range execAPI.FindAllStringIndex(code, 32) {
		from, to := callArgs(code, m[1])
		if m[1] > 0 && code[m[1]-1] == '(' {
			from = m[1]
		}
		in := literalsIn(lits, from, to)
		if len(in) == 0 {
			continue
		}
		args := strings.TrimSpace(code[from:to])
		list := strings.HasPrefix(args, "[") || len(in) > 1 && !strings.Contains(code[m[0]:m[1]], "popen")
		if list {
			words := make([]arg, 0, len(in))
			for _, l := range in {
				words = append(words, arg{val: l.val, pat: globQuote(l.val)})
			}
			if len(words) >= 3 && (words[1].val == "-c" || words[1].val == "/c") && a.r.shells.has(progName(words[0].val)) {
				a.inlineShell(words[2].val, idx)
				continue
			}
			cur := a.cur
			a.nestedCommand(words, cmdCtx{origin: OriginInline}, idx)
			a.cur = cur
			continue
		}
		a.inlineShell(in[0].val, idx)
	}
}

// homeArg reports whether the first argument of a call, code[from:to]
// with the literals in, is an expression of the home directory and
// nothing else: its literals are the keys of the expression
// (environ['HOME']) or module names (require("os")).
func homeArg(code string, from, to int, in []literal) bool {
	end := to
	depth := 0
	var q byte
	for k := from; k < to; k++ {
		c := code[k]
		switch {
		case q != 0:
			if c == '\\' {
				k++
			} else if c == q {
				q = 0
			}
		case c == '\'' || c == '"' || c == '`':
			q = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			end = k
		}
		if end != to {
			break
		}
	}
	first := code[from:end]
	ms := homeExpr.FindAllStringIndex(first, 4)
	if len(ms) == 0 || strings.ContainsAny(first, "+/") || strings.Contains(first, "join") {
		return false
	}
	for _, l := range in {
		if l.start >= end {
			break
		}
		inside := false
		for _, m := range ms {
			if l.start >= from+m[0]-1 && l.end <= from+m[1]+1 {
				inside = true
			}
		}
		before := strings.TrimRight(code[from:l.start], " \t")
		if !inside && !strings.HasSuffix(before, "require(") && !strings.HasSuffix(before, "import(") {
			return false
		}
	}
	return true
}

// inlineShell judges a shell command found in inline code.
func (a *analyzer) inlineShell(src string, idx int) {
	p := parsers.Get().(*syntax.Parser)
	_, err := p.Parse(strings.NewReader(src), "")
	parsers.Put(p)
	if err != nil {
		return // not shell: the inline-code finding stands
	}
	cur := a.cur
	a.nestedScript(src, OriginInline, idx)
	a.cur = cur
}

// endless reports whether a loop condition is always true (":", "true",
// "[ 1 ]") or, for until, always false.
func endless(cond []*syntax.Stmt, until bool) bool {
	if len(cond) != 1 || cond[0] == nil {
		return false
	}
	switch c := cond[0].Cmd.(type) {
	case *syntax.CallExpr:
		if len(c.Args) == 0 {
			return false
		}
		v, dyn, _, _ := staticWord(c.Args[0])
		if dyn {
			return false
		}
		if until {
			return v == "false" && len(c.Args) == 1
		}
		return (v == ":" || v == "true") && len(c.Args) == 1
	case *syntax.ArithmCmd:
		if w, ok := c.X.(*syntax.Word); ok && !until {
			return w.Lit() == "1"
		}
	}
	return false
}

// loopBomb blocks an endless loop that starts background processes and
// never waits: the processes pile up until the system cannot start more.
func (a *analyzer) loopBomb(w *syntax.WhileClause) {
	if !endless(w.Cond, w.Until) {
		return
	}
	bg, calm := false, false
	for _, st := range w.Do {
		if st != nil && st.Background {
			bg = true
			continue
		}
		syntax.Walk(st, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Stmt:
				if n.Background {
					bg = true
					return false
				}
			case *syntax.CallExpr:
				if len(n.Args) > 0 {
					v, _, _, _ := staticWord(n.Args[0])
					switch v {
					case "sleep", "wait", "read", "break", "exit", "return", "timeout":
						calm = true
					}
				}
			}
			return !calm
		})
	}
	if bg && !calm {
		cur := a.cur
		a.cur = -1
		a.add(guard.Finding{Check: "shell.fork-bomb", Level: action.Block, Hard: true,
			Message: "an endless loop starts background processes without waiting: a fork bomb"})
		a.cur = cur
	}
}
