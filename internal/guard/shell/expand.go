package shell

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// This file expands parameters statically: the operators of ${…} applied
// to values the guard knows (a variable assigned earlier in the command,
// $HOME, the positional parameters set by "set --" or a function call),
// arrays, and the field splitting $IFS controls. What is not known stays
// unknown: the guard never guesses a value.

// paramFields returns the fields of a parameter before its operator: one
// for a scalar, the elements for "a[@]", "a[*]", "$@" and "$*". set is
// false when the parameter is known to be unset; ok is false when its
// value is not known.
func (a *analyzer) paramFields(pe *syntax.ParamExp) (fields []string, set, multi, ok bool) {
	name := pe.Param.Value
	idx, hasIdx := "", pe.Index != nil
	if hasIdx {
		w, isWord := pe.Index.(*syntax.Word)
		if !isWord {
			return nil, false, false, false
		}
		v, dyn, _, _ := a.resolve(w)
		if dyn {
			return nil, false, false, false
		}
		idx = v
	}
	switch {
	case name == "@" || name == "*":
		if !a.posKnown || hasIdx {
			return nil, false, false, false
		}
		for _, p := range a.pos {
			if p.dyn {
				return nil, false, false, false
			}
			fields = append(fields, p.val)
		}
		return fields, true, true, true
	case name == "#":
		if !a.posKnown {
			return nil, false, false, false
		}
		return []string{strconv.Itoa(len(a.pos))}, true, false, true
	case isDigits(name) && name != "0":
		if !a.posKnown {
			return nil, false, false, false
		}
		n, err := strconv.Atoi(name)
		if err != nil || n > len(a.pos) {
			return nil, false, false, err == nil
		}
		p := a.pos[n-1]
		return []string{p.val}, true, false, !p.dyn
	}
	st, assigned := a.vars[name]
	if !assigned {
		if hasIdx && idx != "0" {
			return nil, false, false, false
		}
		switch name {
		case "HOME":
			return []string{a.env.Home}, true, false, a.env.Home != ""
		case "PWD":
			return []string{a.cwd}, true, false, a.cwdKnown
		case "IFS":
			// A shell does not take IFS from its environment.
			return []string{" \t\n"}, true, false, true
		}
		if v, ok := a.env.Vars[name]; ok && v != "" {
			return []string{v}, true, false, true
		}
		return nil, false, false, false
	}
	if st.dyn {
		return nil, false, false, false
	}
	elems := st.arr
	if !st.isArr {
		elems = []string{st.val}
	}
	switch {
	case !hasIdx:
		if len(elems) == 0 {
			return nil, false, false, true
		}
		return elems[:1], true, false, true
	case idx == "@" || idx == "*":
		return elems, true, true, true
	}
	n, err := strconv.Atoi(idx)
	if err != nil || n < 0 {
		return nil, false, false, false
	}
	if n >= len(elems) {
		return nil, false, false, true
	}
	return elems[n : n+1], true, false, true
}

// paramValues applies the operator of a parameter expansion to the
// parameter's fields. ok is false when the result is not known.
func (a *analyzer) paramValues(pe *syntax.ParamExp) (fields []string, multi, ok bool) {
	if a == nil || pe == nil || pe.Param == nil || pe.Width || pe.IsSet || pe.Names != 0 ||
		pe.Flags != nil || pe.NestedParam != nil || len(pe.Modifiers) > 0 ||
		pe.Split != syntax.OptUnset || pe.GlobSubst != syntax.OptUnset || pe.RcExpand != syntax.OptUnset {
		return nil, false, false
	}
	if pe.Excl {
		// ${!name}: the variable whose name is name's value.
		if pe.Index != nil || pe.Exp != nil || pe.Slice != nil || pe.Repl != nil || pe.Length {
			return nil, false, false
		}
		fs, set, _, ok := a.paramFields(pe)
		if !ok || !set || len(fs) != 1 || !validName(fs[0], false) && !isDigits(fs[0]) {
			return nil, false, false
		}
		ref := *pe
		ref.Excl = false
		ref.Param = &syntax.Lit{Value: fs[0]}
		return a.paramValues(&ref)
	}
	fs, set, multi, ok := a.paramFields(pe)
	if pe.Length {
		if !ok {
			return nil, false, false
		}
		if multi {
			return []string{strconv.Itoa(len(fs))}, false, true
		}
		return []string{strconv.Itoa(utf8.RuneCountInString(strings.Join(fs, "")))}, false, true
	}
	joined := strings.Join(fs, " ")
	switch {
	case pe.Exp != nil:
		e := pe.Exp
		switch e.Op {
		case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull,
			syntax.AlternateUnset, syntax.AlternateUnsetOrNull, syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
			if !ok && (e.Op == syntax.DefaultUnset || e.Op == syntax.DefaultUnsetOrNull) && a.fromEnvironment(pe) {
				// ${X:-default} of a variable the command does not set: the
				// default is the reading to judge (an agent's environment
				// rarely sets XDG_CONFIG_HOME or TMPDIR).
				v, dyn, _, _ := a.resolve(e.Word)
				if dyn {
					return nil, false, false
				}
				return []string{v}, false, true
			}
			if !ok {
				return nil, false, false
			}
			null := e.Op == syntax.DefaultUnsetOrNull || e.Op == syntax.AssignUnsetOrNull ||
				e.Op == syntax.AlternateUnsetOrNull || e.Op == syntax.ErrorUnsetOrNull
			present := set && (!null || joined != "")
			word := func() ([]string, bool, bool) {
				v, dyn, _, _ := a.resolve(e.Word)
				if dyn {
					return nil, false, false
				}
				return []string{v}, false, true
			}
			switch e.Op {
			case syntax.AlternateUnset, syntax.AlternateUnsetOrNull:
				if present {
					return word()
				}
				return []string{""}, false, true
			case syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
				// The shell stops when the parameter is missing: what runs
				// uses its value.
				if present {
					return fs, multi, true
				}
				return nil, false, false
			default:
				if present {
					return fs, multi, true
				}
				return word()
			}
		case syntax.RemSmallSuffix, syntax.RemLargeSuffix, syntax.RemSmallPrefix, syntax.RemLargePrefix:
			if !ok {
				return nil, false, false
			}
			re, ok := a.patternRegexp(e.Word)
			if !ok {
				return nil, false, false
			}
			out := make([]string, len(fs))
			for i, f := range fs {
				out[i] = trimPattern(f, re, e.Op)
			}
			return out, multi, true
		case syntax.UpperAll, syntax.LowerAll, syntax.UpperFirst, syntax.LowerFirst:
			if !ok || e.Word != nil && len(e.Word.Parts) > 0 {
				return nil, false, false
			}
			out := make([]string, len(fs))
			for i, f := range fs {
				switch e.Op {
				case syntax.UpperAll:
					out[i] = strings.ToUpper(f)
				case syntax.LowerAll:
					out[i] = strings.ToLower(f)
				case syntax.UpperFirst, syntax.LowerFirst:
					r, n := utf8.DecodeRuneInString(f)
					if n == 0 {
						out[i] = f
						continue
					}
					c := string(r)
					if e.Op == syntax.UpperFirst {
						c = strings.ToUpper(c)
					} else {
						c = strings.ToLower(c)
					}
					out[i] = c + f[n:]
				}
			}
			return out, multi, true
		}
		return nil, false, false
	case pe.Slice != nil:
		if !ok || multi {
			return nil, false, false
		}
		off, okOff := arithLit(pe.Slice.Offset)
		if !okOff {
			return nil, false, false
		}
		r := []rune(joined)
		if off < 0 {
			off += len(r)
		}
		if off < 0 || off > len(r) {
			return []string{""}, false, true
		}
		end := len(r)
		if pe.Slice.Length != nil {
			n, okLen := arithLit(pe.Slice.Length)
			if !okLen {
				return nil, false, false
			}
			if n < 0 {
				end = len(r) + n
			} else {
				end = off + n
			}
			end = min(max(end, off), len(r))
		}
		return []string{string(r[off:end])}, false, true
	case pe.Repl != nil:
		if !ok || pe.Repl.Orig == nil {
			return nil, false, false
		}
		mode := byte(0)
		orig := pe.Repl.Orig
		if l, isLit := firstLit(orig); isLit && (strings.HasPrefix(l, "#") || strings.HasPrefix(l, "%")) {
			mode = l[0]
			cp := *orig
			cp.Parts = append([]syntax.WordPart{&syntax.Lit{Value: l[1:]}}, orig.Parts[1:]...)
			orig = &cp
		}
		re, okRe := a.patternRegexp(orig)
		if !okRe {
			return nil, false, false
		}
		with := ""
		if pe.Repl.With != nil {
			v, dyn, _, _ := a.resolve(pe.Repl.With)
			if dyn {
				return nil, false, false
			}
			with = v
		}
		out := make([]string, len(fs))
		for i, f := range fs {
			out[i] = replacePattern(f, re, with, pe.Repl.All, mode)
		}
		return out, multi, true
	}
	if !ok {
		return nil, false, false
	}
	if !set {
		return []string{""}, false, true
	}
	return fs, multi, true
}

func firstLit(w *syntax.Word) (string, bool) {
	if w == nil || len(w.Parts) == 0 {
		return "", false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if !ok {
		return "", false
	}
	return l.Value, true
}

// arithLit evaluates an arithmetic expression that is an integer literal,
// possibly negated.
func arithLit(x syntax.ArithmExpr) (int, bool) {
	switch x := x.(type) {
	case *syntax.Word:
		n, err := strconv.Atoi(strings.TrimSpace(x.Lit()))
		return n, err == nil
	case *syntax.UnaryArithm:
		if x.Op == syntax.Minus && !x.Post {
			n, ok := arithLit(x.X)
			return -n, ok
		}
		if x.Op == syntax.Plus && !x.Post {
			return arithLit(x.X)
		}
	case *syntax.ParenArithm:
		return arithLit(x.X)
	}
	return 0, false
}

// patternRegexp compiles a shell pattern (the word of ${x%pat} or
// ${x/pat/rep}) into an anchored regular expression.
func (a *analyzer) patternRegexp(w *syntax.Word) (*regexp.Regexp, bool) {
	if w == nil || len(w.Parts) == 0 {
		return regexp.MustCompile(`^$`), true
	}
	_, dyn, _, pat := a.resolve(w)
	if dyn || len(pat) > 256 {
		return nil, false
	}
	re, err := regexp.Compile(`(?s)^` + globRegexp(pat) + `$`)
	if err != nil {
		return nil, false
	}
	return re, true
}

// globRegexp translates a shell pattern whose literal glob characters are
// escaped with backslashes into a regular expression (without anchors).
// "*" matches any string, "/" included, as in parameter expansions.
func globRegexp(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '\\':
			if i+1 < len(p) {
				i++
				b.WriteString(regexp.QuoteMeta(p[i : i+1]))
			}
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := strings.IndexByte(p[i+1:], ']')
			if j <= 0 && !(j == 0 && strings.IndexByte(p[i+2:], ']') >= 0) {
				b.WriteString(`\[`)
				continue
			}
			end := i + 1 + j
			if j == 0 {
				end = i + 2 + strings.IndexByte(p[i+2:], ']')
			}
			class := p[i+1 : end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			class = strings.ReplaceAll(class, `\`, `\\`)
			if _, err := regexp.Compile("[" + class + "]"); err != nil {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString("[" + class + "]")
			i = end
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// trimPattern removes the shortest or longest prefix or suffix of s that
// re matches.
func trimPattern(s string, re *regexp.Regexp, op syntax.ParExpOperator) string {
	switch op {
	case syntax.RemSmallSuffix:
		for i := len(s); i >= 0; i-- {
			if re.MatchString(s[i:]) {
				return s[:i]
			}
		}
	case syntax.RemLargeSuffix:
		for i := 0; i <= len(s); i++ {
			if re.MatchString(s[i:]) {
				return s[:i]
			}
		}
	case syntax.RemSmallPrefix:
		for i := 0; i <= len(s); i++ {
			if re.MatchString(s[:i]) {
				return s[i:]
			}
		}
	case syntax.RemLargePrefix:
		for i := len(s); i >= 0; i-- {
			if re.MatchString(s[:i]) {
				return s[i:]
			}
		}
	}
	return s
}

// replacePattern replaces the longest match of re in s (every match with
// all; at the start or the end with mode '#' or '%').
func replacePattern(s string, re *regexp.Regexp, with string, all bool, mode byte) string {
	if len(s) > 4096 {
		return s
	}
	switch mode {
	case '#':
		for j := len(s); j >= 0; j-- {
			if re.MatchString(s[:j]) {
				return with + s[j:]
			}
		}
		return s
	case '%':
		for i := 0; i <= len(s); i++ {
			if re.MatchString(s[i:]) {
				return s[:i] + with
			}
		}
		return s
	}
	var b strings.Builder
	replaced := false
	for i := 0; i < len(s); {
		if all || !replaced {
			found := -1
			for j := len(s); j > i; j-- {
				if re.MatchString(s[i:j]) {
					found = j
					break
				}
			}
			if found >= 0 {
				b.WriteString(with)
				i, replaced = found, true
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// ifs returns the field separators: $IFS when it was assigned a static
// value, else blank, tab and newline. ok is false when IFS is not known.
func (a *analyzer) ifs() (string, bool) {
	if a == nil {
		return " \t\n", true
	}
	st, ok := a.vars["IFS"]
	if !ok {
		return " \t\n", true
	}
	if st.dyn {
		return "", false
	}
	return st.val, true
}

// splitFields splits the value of an unquoted expansion into fields the
// way the shell does with IFS. ok is false when IFS is not known.
func (a *analyzer) splitFields(v string) ([]string, bool) {
	sep, ok := a.ifs()
	if !ok {
		return nil, false
	}
	if sep == "" {
		if v == "" {
			return nil, true
		}
		return []string{v}, true
	}
	var white, other strings.Builder
	for i := 0; i < len(sep); i++ {
		if strings.IndexByte(" \t\n", sep[i]) >= 0 {
			white.WriteByte(sep[i])
		} else {
			other.WriteByte(sep[i])
		}
	}
	ws, os := white.String(), other.String()
	v = strings.Trim(v, ws)
	var out []string
	var cur strings.Builder
	inField := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case strings.IndexByte(os, c) >= 0:
			out = append(out, cur.String())
			cur.Reset()
			inField = false
			// Blanks around a separator belong to it.
			for i+1 < len(v) && strings.IndexByte(ws, v[i+1]) >= 0 {
				i++
			}
		case strings.IndexByte(ws, c) >= 0:
			for i+1 < len(v) && strings.IndexByte(ws, v[i+1]) >= 0 {
				i++
			}
			if i+1 < len(v) && strings.IndexByte(os, v[i+1]) >= 0 {
				continue
			}
			out = append(out, cur.String())
			cur.Reset()
			inField = false
		default:
			cur.WriteByte(c)
			inField = true
		}
	}
	if inField || cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out, true
}

// splitsOn reports whether an unquoted value would be split into fields.
func (a *analyzer) splitsOn(v string) bool {
	sep, ok := a.ifs()
	return !ok || strings.ContainsAny(v, sep)
}

// fromEnvironment reports whether pe names a plain variable that the
// command does not assign (so its value comes from the environment).
func (a *analyzer) fromEnvironment(pe *syntax.ParamExp) bool {
	if pe == nil || pe.Param == nil || pe.Index != nil || pe.Excl {
		return false
	}
	name := pe.Param.Value
	if !validName(name, false) {
		return false
	}
	_, assigned := a.vars[name]
	return !assigned
}
