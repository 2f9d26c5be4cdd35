package shell

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
)

// This file follows static text through a command: what echo, printf and
// cat <<EOF print, what base64 -d, xxd -r -p, rev and tr make of it, into
// pipes, command and process substitutions, here-strings and xargs. Code
// that arrives this way is judged as the command it is, however it was
// encoded.

// maxStaticText bounds the static text followed through a command.
const maxStaticText = 64 << 10

// textIn is static text a command reads or prints.
type textIn struct {
	text    string
	decoded bool // it was decoded from an encoding on the way (base64, hex)
}

// stmtsOutput returns what a list of statements prints, when it is known.
func (a *analyzer) stmtsOutput(stmts []*syntax.Stmt) (textIn, bool) {
	var t textIn
	if len(stmts) == 0 {
		return t, false
	}
	for _, st := range stmts {
		o, ok := a.stmtOutput(st)
		if !ok {
			return textIn{}, false
		}
		t.text += o.text
		t.decoded = t.decoded || o.decoded
		if len(t.text) > maxStaticText {
			return textIn{}, false
		}
	}
	return t, true
}

// stmtOutput returns what a statement prints on its standard output, when
// it is known: the text of the segment it ran (echo, printf, a decoder fed
// static text), the last stage of a pipeline, a block's statements.
func (a *analyzer) stmtOutput(st *syntax.Stmt) (textIn, bool) {
	if st == nil || st.Background || st.Coprocess || st.Negated {
		return textIn{}, false
	}
	for _, r := range st.Redirs {
		if r == nil {
			continue
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.DplOut, syntax.RdrInOut:
			if r.N == nil || r.N.Value == "1" {
				return textIn{}, false
			}
		case syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
			return textIn{}, false
		}
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		idx, ok := a.callSeg[c]
		if !ok || idx < 0 || idx >= len(a.out.Segments) {
			return textIn{}, false
		}
		s := &a.out.Segments[idx]
		if s.flags&fText == 0 {
			return textIn{}, false
		}
		return textIn{text: s.text, decoded: s.flags&fDecoded != 0}, true
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.Pipe:
			return a.stmtOutput(c.Y)
		case syntax.AndStmt:
			return a.stmtsOutput([]*syntax.Stmt{c.X, c.Y})
		}
	case *syntax.Block:
		return a.stmtsOutput(c.Stmts)
	case *syntax.Subshell:
		return a.stmtsOutput(c.Stmts)
	}
	return textIn{}, false
}

// inputText returns the static text a command reads on its standard input:
// a here-document or here-string, or the static output of the pipe stage
// before it.
func (a *analyzer) inputText(s *segCtx) (textIn, bool) {
	in := a.stdinOf(s.c.redirs)
	switch in.kind {
	case 'd':
		if in.dyn {
			return textIn{}, false
		}
		return textIn{text: in.text}, true
	case 'f':
		return textIn{}, false
	}
	if s.c.in != nil {
		return *s.c.in, true
	}
	return textIn{}, false
}

// setDecoded records the static text a decoder prints.
func (a *analyzer) setDecoded(idx int, t string) {
	a.setText(idx, t)
	a.out.Segments[idx].flags |= fDecoded
}

// passText records that a filter prints a transformation of its static
// input.
func (a *analyzer) passText(s *segCtx, f func(string) (string, bool)) {
	in, ok := a.inputText(s)
	if !ok {
		return
	}
	t, ok := f(in.text)
	if !ok {
		return
	}
	a.setText(s.idx, t)
	if in.decoded {
		a.out.Segments[s.idx].flags |= fDecoded
	}
}

// decodeCmd judges base64, base32, basenc, xxd and openssl: fed static
// text, what they decode is static text too.
func (a *analyzer) decodeCmd(s *segCtx) bool {
	handled := false
	if s.name != "openssl" {
		handled = a.readCmd(s)
	}
	in, ok := a.inputText(s)
	if !ok {
		return handled
	}
	var out []byte
	var err error
	decode := func(enc string, text string) {
		clean := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
				return -1
			}
			return r
		}, text)
		switch enc {
		case "base64":
			out, err = base64.StdEncoding.DecodeString(clean)
			if err != nil {
				out, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(clean, "="))
			}
		case "base64url":
			out, err = base64.URLEncoding.DecodeString(clean)
			if err != nil {
				out, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(clean, "="))
			}
		case "base32":
			out, err = base32.StdEncoding.DecodeString(clean)
		case "hex":
			out, err = hex.DecodeString(clean)
		default:
			err = strconv.ErrSyntax
		}
	}
	dec := anyFlag(s.args, "-d", "--decode") || hasFlag(s.args, "-D")
	enc := ""
	switch s.name {
	case "base64":
		enc = "base64"
	case "base32":
		enc = "base32"
	case "basenc":
		switch {
		case hasFlag(s.args, "--base64"):
			enc = "base64"
		case hasFlag(s.args, "--base64url"):
			enc = "base64url"
		case hasFlag(s.args, "--base32"):
			enc = "base32"
		case hasFlag(s.args, "--base16"):
			enc = "hex"
		}
	case "xxd":
		dec = hasFlag(s.args, "-r") || hasFlag(s.args, "-revert")
		if anyFlag(s.args, "-p", "-ps", "-plain", "-postscript") || hasFlag(s.args, "-rp") {
			enc = "hex"
		}
	case "openssl":
		ops := operandsOf(s.args)
		if len(ops) == 0 || anyFlag(s.args, "-in") {
			return false
		}
		switch ops[0].val {
		case "base64":
			enc = "base64"
		case "enc":
			if anyFlag(s.args, "-base64", "-a") {
				enc = "base64"
			}
		}
	}
	if !dec || enc == "" {
		return handled
	}
	for _, x := range operandsOf(s.args) {
		if x.val != "-" && s.name != "openssl" {
			return handled // decodes a file
		}
	}
	decode(enc, in.text)
	if err != nil || len(out) > maxStaticText {
		return handled
	}
	a.setDecoded(s.idx, string(out))
	return handled
}

// revCmd records what rev prints of static text.
func (a *analyzer) revCmd(s *segCtx) bool {
	if len(operandsOf(s.args)) > 0 {
		return false
	}
	a.passText(s, func(t string) (string, bool) {
		lines := strings.SplitAfter(t, "\n")
		var b strings.Builder
		for _, l := range lines {
			body := strings.TrimSuffix(l, "\n")
			r := []rune(body)
			for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
				r[i], r[j] = r[j], r[i]
			}
			b.WriteString(string(r))
			if len(body) < len(l) {
				b.WriteByte('\n')
			}
		}
		return b.String(), true
	})
	return false
}

// trCmd records what tr prints of static text, for plain translations and
// deletions of byte sets.
func (a *analyzer) trCmd(s *segCtx) bool {
	del := false
	var sets []string
	for _, x := range s.args {
		switch {
		case x.dyn:
			return false
		case x.val == "-d" || x.val == "--delete":
			del = true
		case strings.HasPrefix(x.val, "-") && len(x.val) > 1:
			return false // squeeze, complement, truncate: not followed
		default:
			sets = append(sets, x.val)
		}
	}
	from, ok := trSet(sets, 0)
	if !ok {
		return false
	}
	switch {
	case del && len(sets) == 1:
		a.passText(s, func(t string) (string, bool) {
			return strings.Map(func(r rune) rune {
				if r < 256 && strings.IndexByte(from, byte(r)) >= 0 {
					return -1
				}
				return r
			}, t), true
		})
	case !del && len(sets) == 2:
		to, ok := trSet(sets, 1)
		if !ok || to == "" {
			return false
		}
		for len(to) < len(from) {
			to += to[len(to)-1:]
		}
		a.passText(s, func(t string) (string, bool) {
			b := []byte(t)
			for i, c := range b {
				if k := strings.IndexByte(from, c); k >= 0 {
					b[i] = to[k]
				}
			}
			return string(b), true
		})
	}
	return false
}

// trSet expands a tr set with ranges and escapes; classes are not
// followed.
func trSet(sets []string, i int) (string, bool) {
	if i >= len(sets) {
		return "", false
	}
	v := ansiC(sets[i])
	if strings.Contains(v, "[:") || strings.Contains(v, "[=") || strings.Contains(v, "*]") {
		return "", false
	}
	var b strings.Builder
	for k := 0; k < len(v); k++ {
		if k+2 < len(v) && v[k+1] == '-' && v[k] <= v[k+2] {
			for c := int(v[k]); c <= int(v[k+2]); c++ {
				b.WriteByte(byte(c))
			}
			k += 2
			continue
		}
		b.WriteByte(v[k])
	}
	return b.String(), b.Len() <= 256
}

// printfText formats a printf command statically: %s, %b, %c, %d, %i,
// %u, %x, %o and %% with no width or precision, the format reused while
// arguments remain.
func printfText(format string, args []string) (string, bool) {
	var b strings.Builder
	ai := 0
	for pass := 0; pass < 64; pass++ {
		used := false
		for i := 0; i < len(format); i++ {
			c := format[i]
			if c == '\\' {
				j := i + 1
				for j < len(format) && j-i < 4 && (format[j] >= '0' && format[j] <= '7') {
					j++
				}
				if j > i+1 {
					n, _ := strconv.ParseUint(format[i+1:j], 8, 16)
					b.WriteByte(byte(n))
					i = j - 1
					continue
				}
				k := i + 2
				if i+1 < len(format) && (format[i+1] == 'x' || format[i+1] == 'u' || format[i+1] == 'U') {
					for k < len(format) && k-i-2 < 8 && isHex(format[k]) {
						k++
					}
				}
				b.WriteString(ansiC(format[i:min(k, len(format))]))
				i = min(k, len(format)) - 1
				continue
			}
			if c != '%' {
				b.WriteByte(c)
				continue
			}
			if i+1 >= len(format) {
				return "", false
			}
			i++
			verb := format[i]
			if verb == '%' {
				b.WriteByte('%')
				continue
			}
			next := ""
			if ai < len(args) {
				next = args[ai]
				ai++
				used = true
			}
			switch verb {
			case 's':
				b.WriteString(next)
			case 'b':
				b.WriteString(ansiC(next))
			case 'c':
				if next != "" {
					_, n := utf8.DecodeRuneInString(next)
					b.WriteString(next[:n])
				}
			case 'd', 'i', 'u', 'x', 'X', 'o':
				n := int64(0)
				if next != "" {
					var err error
					n, err = strconv.ParseInt(next, 0, 64)
					if err != nil {
						return "", false
					}
				}
				base := 10
				switch verb {
				case 'x', 'X':
					base = 16
				case 'o':
					base = 8
				}
				v := strconv.FormatInt(n, base)
				if verb == 'X' {
					v = strings.ToUpper(v)
				}
				b.WriteString(v)
			default:
				return "", false
			}
			if b.Len() > maxStaticText {
				return "", false
			}
		}
		if !used || ai >= len(args) {
			return b.String(), true
		}
	}
	return "", false
}

// xargsItems splits static input the way xargs does: blanks and newlines
// separate items, quotes and backslashes group them (lines with -I or -L,
// NUL bytes with -0, a delimiter with -d).
func xargsItems(t string, lines bool, delim string) ([]string, bool) {
	var out []string
	switch {
	case delim != "":
		out = strings.Split(strings.TrimSuffix(t, delim), delim)
	case lines:
		for _, l := range strings.Split(t, "\n") {
			if l = strings.TrimLeft(l, " \t"); l != "" {
				out = append(out, l)
			}
		}
	default:
		var cur strings.Builder
		in, quote, esc := false, byte(0), false
		for i := 0; i < len(t); i++ {
			c := t[i]
			switch {
			case esc:
				cur.WriteByte(c)
				esc = false
			case quote != 0:
				if c == quote {
					quote = 0
				} else {
					cur.WriteByte(c)
				}
			case c == '\\':
				esc, in = true, true
			case c == '\'' || c == '"':
				quote, in = c, true
			case c == ' ' || c == '\t' || c == '\n':
				if in {
					out = append(out, cur.String())
					cur.Reset()
					in = false
				}
			default:
				cur.WriteByte(c)
				in = true
			}
		}
		if quote != 0 {
			return nil, false
		}
		if in {
			out = append(out, cur.String())
		}
	}
	return out, len(out) <= 64
}

// decodedRuns records that code decoded from an encoding runs: the guard
// has judged the decoded text, and still asks a person about the
// obfuscation unless what it found already blocks.
func (a *analyzer) decodedRuns(name, text string) {
	a.add(guard.Finding{Check: "shell.obfuscated", Level: action.Approve, Hard: true,
		Message: name + " runs encoded content; decoded, it reads: " + clip(strings.TrimSpace(text), 200)})
}

// certState is what the analysis follows to prove what a command does:
// static output, positional parameters, functions and links.
type certState struct {
	callSeg   map[*syntax.CallExpr]int // the segment each simple command became
	substOut  map[syntax.Node]textIn   // the static output of substitutions
	pipeText  *textIn                  // the static output of the pipe stage before the statement being walked
	pos       []arg                    // the positional parameters, when posKnown
	posKnown  bool
	funcBody  map[string]*syntax.Stmt // the bodies of functions defined in the command
	funcCalls int                     // function bodies judged with their arguments
	inFunc    map[string]bool         // functions whose body is being judged
	links     map[string]string       // symbolic links created earlier in the command
	container *containerCtx           // the container the command being judged runs in (foreign.go)
}

// assignArray records an array assignment: static elements without
// indices are known; anything else makes the array unknown.
func (a *analyzer) assignArray(name string, arr *syntax.ArrayExpr) {
	var elems []string
	for _, e := range arr.Elems {
		if e == nil || e.Index != nil || e.Value == nil {
			a.setVar(name, "", true)
			return
		}
		for _, x := range a.appendWord(nil, e.Value, e.Value, [2]int{}) {
			if x.dyn || x.glob {
				a.setVar(name, "", true)
				return
			}
			elems = append(elems, x.val)
		}
	}
	if a.vars == nil {
		a.vars = map[string]varState{}
	}
	if _, seen := a.vars[name]; seen {
		a.vars[name] = varState{dyn: true}
		return
	}
	a.vars[name] = varState{arr: elems, isArr: true}
}

// registerStatic adds the handlers of this file.
func registerStatic() {
	for _, n := range []string{"base64", "base32", "basenc", "xxd", "openssl"} {
		handlers[n] = (*analyzer).decodeCmd
	}
	handlers["rev"] = (*analyzer).revCmd
	handlers["tr"] = (*analyzer).trCmd
	handlers["set"] = (*analyzer).setCmd
	handlers["shift"] = (*analyzer).shiftCmd
	registerForeign()
	registerDevLoop()
	registerInfra()
}

// setCmd follows "set -- args" and "set args", which set the positional
// parameters.
func (a *analyzer) setCmd(s *segCtx) bool {
	for j, x := range s.args {
		if x.dyn {
			a.pos, a.posKnown = nil, false
			return false
		}
		switch {
		case x.val == "--" || x.val == "-":
			a.pos, a.posKnown = append([]arg(nil), s.args[j+1:]...), true
			return false
		case strings.HasPrefix(x.val, "-") || strings.HasPrefix(x.val, "+"):
			if x.val == "-o" || x.val == "+o" {
				return false
			}
		default:
			a.pos, a.posKnown = append([]arg(nil), s.args[j:]...), true
			return false
		}
	}
	return false
}

// shiftCmd follows shift.
func (a *analyzer) shiftCmd(s *segCtx) bool {
	n := 1
	if len(s.args) > 0 {
		v, err := strconv.Atoi(s.args[0].val)
		if err != nil || s.args[0].dyn {
			a.pos, a.posKnown = nil, false
			return false
		}
		n = v
	}
	if a.posKnown && n <= len(a.pos) {
		a.pos = a.pos[n:]
	}
	return false
}

// runText judges static code a shell or an interpreter reads on its
// standard input.
func (a *analyzer) runText(s *segCtx, t textIn, isShell bool) {
	a.bump(action.Auto)
	if t.decoded {
		a.decodedRuns(s.name, t.text)
	}
	if isShell {
		a.nestedScript(t.text, OriginStdin, s.idx)
		a.cur = s.idx
		return
	}
	a.add(guard.Finding{Check: "shell.inline-code", Level: action.Confirm,
		Message: s.name + " runs inline code: " + clip(t.text, 160)})
	a.inlineCode(s.name, t.text, s.idx)
}

// xargsStatic judges xargs fed static text: the command runs with the
// items as its arguments. It reports false when the input is not known.
func (a *analyzer) xargsStatic(s *segCtx, opts, inner []arg, replace string) bool {
	if _, ok := optValue(opts, "-a", "--arg-file"); ok {
		return false
	}
	in, ok := a.inputText(s)
	if !ok {
		return false
	}
	delim := ""
	if hasFlag(opts, "-0") || hasFlag(opts, "--null") {
		delim = "\x00"
	} else if d, ok := optValue(opts, "-d", "--delimiter"); ok && !d.dyn {
		delim = ansiC(d.val)
	}
	_, lines := optValue(opts, "-L", "--max-lines")
	lines = lines || replace != "" || hasFlag(opts, "-l")
	items, ok := xargsItems(in.text, lines, delim)
	if !ok {
		return false
	}
	if in.decoded && len(items) > 0 {
		a.decodedRuns("xargs", in.text)
	}
	mk := func(x string) arg { return arg{val: x, glob: false, pat: globQuote(x)} }
	if replace == "" {
		cmd := append(append([]arg(nil), inner...), make([]arg, 0, len(items))...)
		for _, it := range items {
			cmd = append(cmd, mk(it))
		}
		a.nestedCommand(cmd, cmdCtx{origin: OriginXargs}, s.idx)
		return true
	}
	if len(items) > 16 {
		return false
	}
	for _, it := range items {
		cmd := make([]arg, len(inner))
		for k, y := range inner {
			if k > 0 && !y.dyn && strings.Contains(y.val, replace) {
				y = mk(strings.ReplaceAll(y.val, replace, it))
			}
			cmd[k] = y
		}
		a.nestedCommand(cmd, cmdCtx{origin: OriginXargs}, s.idx)
	}
	return true
}

// builtName records that the program's name was printed by a command
// substitution ("$(echo rm) -rf /"): the guard judged the program it
// names, and a person still sees the obfuscation.
func (a *analyzer) builtName(prog arg) {
	if prog.dyn || prog.sub[1] <= prog.sub[0] {
		return
	}
	a.add(guard.Finding{Check: "shell.obfuscated", Level: action.Approve, Hard: true,
		Message: "the command name is printed by a command substitution: " + prog.val})
}
