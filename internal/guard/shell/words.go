package shell

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// arg is one word of a simple command after static expansion: quote
// removal, ~ and known variables expanded, braces expanded.
type arg struct {
	val  string // the value; the source text when dyn
	dyn  bool   // not known statically
	glob bool   // has an unquoted glob character
	pat  string // the glob pattern, quoted glob characters escaped (when glob)
	sub  [2]int // Segments[sub[0]:sub[1]] came from substitutions in the word
	find bool   // the {} of find -exec: a path find produces
	// decoded is true when the value came out of a decoder (base64 -d …)
	// inside a command substitution.
	decoded bool
	// code is the static text of a process substitution given as the
	// argument (source <(echo …)), or nil.
	code *textIn
}

// words resolves the words of a simple command, judging the substitutions
// inside them first (as the shell runs them first).
func (a *analyzer) words(ws []*syntax.Word, origin Origin) []arg {
	args := make([]arg, 0, len(ws))
	for _, w := range ws {
		if w == nil || len(w.Parts) == 0 {
			continue
		}
		start := len(a.out.Segments)
		a.substs(w, origin)
		sub := [2]int{start, len(a.out.Segments)}
		if syntax.SplitBraces(w) {
			n := 0
			for bw, err := range expand.BracesSeq(nil, w) {
				if err != nil || n >= maxBraces {
					args = append(args, arg{val: a.text(w), dyn: true, sub: sub})
					break
				}
				args = a.appendWord(args, bw, w, sub)
				n++
			}
			continue
		}
		args = a.appendWord(args, w, w, sub)
	}
	return args
}

func (a *analyzer) appendWord(args []arg, w, orig *syntax.Word, sub [2]int) []arg {
	// A lone unquoted variable or command substitution with a known value
	// is split into fields, so that CMD="rm -rf /"; $CMD is seen as
	// rm -rf /; "$@" and "${a[@]}" give one field per element.
	if len(w.Parts) == 1 {
		var fields []string
		known, decoded := false, false
		switch p := w.Parts[0].(type) {
		case *syntax.ParamExp:
			fs, _, ok := a.paramValues(p)
			if ok {
				for _, f := range fs {
					split, ok2 := a.splitFields(f)
					if !ok2 {
						ok = false
						break
					}
					fields = append(fields, split...)
				}
			}
			known = ok
		case *syntax.CmdSubst:
			if t, ok := a.substOut[p]; ok {
				fields, known = a.splitFields(strings.TrimRight(t.text, "\n"))
				decoded = t.decoded
			}
		case *syntax.DblQuoted:
			if len(p.Parts) == 1 {
				if pe, ok := p.Parts[0].(*syntax.ParamExp); ok {
					if fs, multi, ok := a.paramValues(pe); ok && multi {
						for _, f := range fs {
							args = append(args, arg{val: f, pat: globQuote(f), sub: sub})
						}
						return args
					}
				}
			}
		case *syntax.ProcSubst:
			if t, ok := a.substOut[p]; ok {
				return append(args, arg{val: a.text(orig), dyn: true, sub: sub, code: &t})
			}
		}
		if known {
			for _, f := range fields {
				args = append(args, arg{val: f, glob: hasGlobMeta(f), pat: f, sub: sub, decoded: decoded})
			}
			return args
		}
	}
	r := wordResolver{a: a, split: true}
	v, dyn, glob, pat := a.resolveWith(&r, w)
	if dyn {
		v = a.text(orig)
	} else if len(r.fields) > 0 {
		// An unquoted expansion inside the word split it into fields
		// (rm${IFS}-rf${IFS}/).
		for _, f := range r.fields {
			args = append(args, arg{val: f.val, glob: f.glob && hasGlobMeta(f.pat), pat: f.pat, sub: sub, decoded: r.decoded})
		}
		if v == "" {
			return args
		}
	}
	return append(args, arg{val: v, dyn: dyn, glob: glob && !dyn, pat: pat, sub: sub, decoded: r.decoded})
}

// text returns the source text of w in the string being walked.
func (a *analyzer) text(w *syntax.Word) string {
	if w == nil || len(w.Parts) == 0 {
		return ""
	}
	s, e := w.Pos(), w.End()
	if s.IsValid() && e.IsValid() && !s.IsRecovered() && !e.IsRecovered() {
		so, eo := s.Offset(), e.Offset()
		if so <= eo && eo <= uint(len(a.src)) {
			return a.src[so:eo]
		}
	}
	return "<dynamic>"
}

// staticWord resolves w without any context: no variables, no ~.
func staticWord(w *syntax.Word) (val string, dyn, glob bool, pat string) {
	var a *analyzer
	return a.resolve(w)
}

// resolve returns the value of w after quote removal and the expansions
// that can be done statically. a may be nil (no variables, no ~).
func (a *analyzer) resolve(w *syntax.Word) (val string, dyn, glob bool, pat string) {
	if w == nil || len(w.Parts) == 0 {
		return "", false, false, ""
	}
	if len(w.Parts) == 1 {
		switch p := w.Parts[0].(type) {
		case *syntax.Lit:
			v := p.Value
			if !strings.Contains(v, `\`) && !strings.HasPrefix(v, "~") {
				return v, false, hasGlobMeta(v), v
			}
		case *syntax.SglQuoted:
			if !p.Dollar {
				return p.Value, false, false, globQuote(p.Value)
			}
		}
	}
	r := wordResolver{a: a}
	return a.resolveWith(&r, w)
}

// resolveWith resolves w with r, which records whether decoded text went
// into it.
func (a *analyzer) resolveWith(r *wordResolver, w *syntax.Word) (val string, dyn, glob bool, pat string) {
	if w == nil || len(w.Parts) == 0 {
		return "", false, false, ""
	}
	r.parts(w.Parts, false, true)
	pat = r.pat.String()
	return r.val.String(), r.dyn, r.glob && hasGlobMeta(pat), pat
}

// hasGlobMeta reports whether a pattern (with backslash escapes) has a
// wildcard the shell expands: * or ? unescaped, or a bracket expression
// that is closed. A lone "[" (the test command) is not one.
func hasGlobMeta(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '*', '?':
			return true
		case '[':
			if j := strings.IndexByte(p[i+1:], ']'); j > 0 {
				return true
			}
		}
	}
	return false
}

// globQuote escapes the glob characters of s.
func globQuote(s string) string {
	if !strings.ContainsAny(s, `*?[\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

type wordResolver struct {
	a        *analyzer
	val, pat strings.Builder
	dyn      bool
	glob     bool
	decoded  bool // a command substitution's decoded output went in
	split    bool // unquoted expansions are split into fields (else they make the word dynamic)
	fields   []splitField
}

// splitField is a field completed by field splitting.
type splitField struct {
	val, pat string
	glob     bool
}

// splitValue adds the value of an unquoted expansion, splitting it into
// fields at the characters of sep.
func (r *wordResolver) splitValue(v, sep string) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if strings.IndexByte(sep, c) < 0 {
			r.unquotedValue(v[i : i+1])
			continue
		}
		if strings.IndexByte(" \t\n", c) >= 0 && r.val.Len() == 0 {
			continue
		}
		r.fields = append(r.fields, splitField{val: r.val.String(), pat: r.pat.String(), glob: r.glob})
		r.val.Reset()
		r.pat.Reset()
		r.glob = false
		if len(r.fields) > maxBraces {
			r.dyn = true
			return
		}
	}
}

// expansion adds the value of an unquoted expansion.
func (r *wordResolver) expansion(v string) {
	if r.a.splitsOn(v) {
		if sep, ok := r.a.ifs(); ok && r.split {
			r.splitValue(v, sep)
			return
		}
		r.dyn = true
	}
	r.unquotedValue(v)
}

func (r *wordResolver) parts(parts []syntax.WordPart, quoted, top bool) {
	for i, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v := p.Value
			if !quoted && top && i == 0 && strings.HasPrefix(v, "~") {
				end := strings.IndexByte(v, '/')
				if end < 0 {
					end = len(v)
				}
				home, ok := r.tilde(v[:end])
				if !ok {
					r.dyn = true
					continue
				}
				// The expanded directory is not subject to globbing.
				r.quoted(home)
				v = v[end:]
			}
			if quoted {
				r.dqLit(v)
			} else {
				r.lit(v)
			}
		case *syntax.SglQuoted:
			v := p.Value
			if p.Dollar {
				v = ansiC(v)
			}
			r.quoted(v)
		case *syntax.DblQuoted:
			r.parts(p.Parts, true, false)
		case *syntax.ParamExp:
			v, ok := r.a.param(p)
			switch {
			case !ok:
				r.dyn = true
			case quoted:
				r.quoted(v)
			default:
				// Unquoted: split into fields and globbed by the shell.
				r.expansion(v)
			}
		case *syntax.CmdSubst:
			t, ok := r.a.substOutput(p)
			if !ok {
				r.dyn = true
				continue
			}
			v := strings.TrimRight(t.text, "\n")
			r.decoded = r.decoded || t.decoded
			if quoted {
				r.quoted(v)
				continue
			}
			r.expansion(v)
		default:
			// Command, process and arithmetic substitutions, extended
			// globs: known only at run time.
			r.dyn = true
		}
	}
}

// lit adds an unquoted literal: backslash escapes are removed, and glob
// characters that are not escaped make the word a pattern.
func (r *wordResolver) lit(v string) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			if i+1 >= len(v) {
				continue
			}
			i++
			c = v[i]
			if c == '\n' {
				continue
			}
			r.val.WriteByte(c)
			if strings.IndexByte(`*?[\`, c) >= 0 {
				r.pat.WriteByte('\\')
			}
			r.pat.WriteByte(c)
		case c == '*' || c == '?' || c == '[':
			r.glob = true
			r.val.WriteByte(c)
			r.pat.WriteByte(c)
		default:
			r.val.WriteByte(c)
			r.pat.WriteByte(c)
		}
	}
}

// unquotedValue adds the value of an unquoted variable: globbed, but its
// backslashes are not escapes.
func (r *wordResolver) unquotedValue(v string) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch c {
		case '*', '?', '[':
			r.glob = true
		case '\\':
			r.pat.WriteByte('\\')
		}
		r.val.WriteByte(c)
		r.pat.WriteByte(c)
	}
}

// dqLit adds a literal inside double quotes (or an unquoted here-document).
func (r *wordResolver) dqLit(v string) {
	if !strings.Contains(v, `\`) {
		r.quoted(v)
		return
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' && i+1 < len(v) && strings.IndexByte("$`\"\\\n", v[i+1]) >= 0 {
			i++
			if v[i] == '\n' {
				continue
			}
			c = v[i]
		}
		b.WriteByte(c)
	}
	r.quoted(b.String())
}

// quoted adds text that is not subject to globbing.
func (r *wordResolver) quoted(v string) {
	r.val.WriteString(v)
	r.pat.WriteString(globQuote(v))
}

// tilde expands a tilde prefix ("~", "~bob", "~+").
func (r *wordResolver) tilde(prefix string) (string, bool) {
	user := prefix[1:]
	switch {
	case r.a == nil:
		return prefix, true
	case user == "":
		if r.a.env.Home == "" {
			return prefix, true // left as "~": path checks treat it as the home
		}
		return r.a.env.Home, true
	case user == "+":
		return r.a.cwd, r.a.cwdKnown
	case user == "-":
		return "", false
	case validName(user, true):
		if user == "root" {
			return "/root", true
		}
		return "/home/" + user, true
	}
	return prefix, true
}

// validName reports whether s is a shell variable name (or, with user, a
// user name).
func validName(s string, user bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		case user && (c == '-' || c == '.') && i > 0:
		default:
			return false
		}
	}
	return true
}

// param returns the value of a parameter expansion when it is known: a
// variable assigned a single static value earlier in the command, $HOME,
// $PWD or a positional parameter, with the operators of ${…} applied
// (see expand.go). The elements of an array are joined with blanks.
func (a *analyzer) param(pe *syntax.ParamExp) (string, bool) {
	fs, _, ok := a.paramValues(pe)
	if !ok {
		return "", false
	}
	return strings.Join(fs, " "), true
}

// substOutput returns the static output of a command substitution judged
// earlier.
func (a *analyzer) substOutput(cs *syntax.CmdSubst) (textIn, bool) {
	if a == nil {
		return textIn{}, false
	}
	t, ok := a.substOut[cs]
	return t, ok
}

// doc returns the text of a here-document body. quotedDelim says whether
// its delimiter was quoted (then the body is literal).
func (a *analyzer) doc(w *syntax.Word, quotedDelim bool) (string, bool) {
	if w == nil {
		return "", true
	}
	if quotedDelim {
		var b strings.Builder
		for _, p := range w.Parts {
			if l, ok := p.(*syntax.Lit); ok {
				b.WriteString(l.Value)
			} else {
				return "", false
			}
		}
		return b.String(), true
	}
	r := wordResolver{a: a}
	r.parts(w.Parts, true, false)
	return r.val.String(), !r.dyn
}

// substs judges the command and process substitutions inside w.
func (a *analyzer) substs(w *syntax.Word, origin Origin) {
	if w == nil {
		return
	}
	for _, p := range w.Parts {
		switch p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		default:
			a.walkSubsts(w, origin)
			return
		}
	}
}

// walkSubsts judges the substitutions anywhere inside n.
func (a *analyzer) walkSubsts(n syntax.Node, origin Origin) {
	if n == nil {
		return
	}
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			a.subst(n, n.Stmts, OriginSubst)
			return false
		case *syntax.ProcSubst:
			a.subst(n, n.Stmts, OriginProcSubst)
			return false
		}
		return true
	})
}

// subst judges the statements of a substitution, which run in a subshell,
// and remembers their output when it is static.
func (a *analyzer) subst(n syntax.Node, stmts []*syntax.Stmt, origin Origin) {
	cwd, known, cur := a.cwd, a.cwdKnown, a.cur
	pipeText := a.pipeText
	a.pipeText = nil
	a.stmts(stmts, origin)
	if t, ok := a.stmtsOutput(stmts); ok {
		if a.substOut == nil {
			a.substOut = map[syntax.Node]textIn{}
		}
		a.substOut[n] = t
	}
	a.cwd, a.cwdKnown, a.cur = cwd, known, cur
	a.pipeText = pipeText
}

// arith judges the substitutions in an arithmetic expression and forgets
// the variables it assigns.
func (a *analyzer) arith(x syntax.ArithmExpr, origin Origin) {
	if x == nil {
		return
	}
	syntax.Walk(x, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			a.subst(n, n.Stmts, OriginSubst)
			return false
		case *syntax.ProcSubst:
			a.subst(n, n.Stmts, OriginProcSubst)
			return false
		case *syntax.BinaryArithm:
			switch n.Op {
			case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
				syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn,
				syntax.ShrAssgn, syntax.AndBoolAssgn, syntax.OrBoolAssgn, syntax.XorBoolAssgn, syntax.PowAssgn:
				a.forgetArith(n.X)
			}
		case *syntax.UnaryArithm:
			if n.Op == syntax.Inc || n.Op == syntax.Dec {
				a.forgetArith(n.X)
			}
		}
		return true
	})
}

func (a *analyzer) forgetArith(x syntax.ArithmExpr) {
	if w, ok := x.(*syntax.Word); ok && w != nil {
		if l := w.Lit(); l != "" {
			a.setVar(l, "", true)
		}
	}
}

// assignSubsts judges the substitutions in an assignment.
func (a *analyzer) assignSubsts(as *syntax.Assign, origin Origin) {
	if as == nil {
		return
	}
	a.substs(as.Value, origin)
	if as.Index != nil {
		a.arith(as.Index, origin)
	}
	if as.Array != nil {
		for _, e := range as.Array.Elems {
			if e == nil {
				continue
			}
			a.substs(e.Value, origin)
			if e.Index != nil {
				a.arith(e.Index, origin)
			}
		}
	}
}

// ansiC decodes the escapes of a $'…' string.
func ansiC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			}
		case 'x', 'u', 'U':
			maxDigits := 2
			switch e {
			case 'u':
				maxDigits = 4
			case 'U':
				maxDigits = 8
			}
			j := i + 1
			for j < len(s) && j-i-1 < maxDigits && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if e == 'x' {
				b.WriteByte(byte(n))
			} else if n <= utf8.MaxRune {
				b.WriteRune(rune(n))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(n))
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// optionValue is the value of the option word x, args[*j]: what follows its
// "=" (val, when eq), or else the next word, which *j then moves to (false
// when there is none).
func optionValue(args []arg, j *int, x arg, val string, eq bool) (arg, bool) {
	if eq {
		return arg{val: val, dyn: x.dyn}, true
	}
	if *j+1 < len(args) {
		*j++
		return args[*j], true
	}
	return arg{}, false
}
