package shell

import (
	"path"
	"strconv"
	"strings"
)

// A static reading of GNU make's makefiles, enough to know which recipe
// lines "make [targets]" runs: rules with tab-indented recipes, the default
// goal, prerequisites followed recursively, pattern rules, variables
// (recursive "=", simple ":=", "?=", "+=", "!=", define … endef, command-line
// assignments), automatic variables and the common text functions. What
// cannot be known statically (a variable make gets from the environment,
// $(shell …), $(call …), $(eval …), values that differ between branches of a
// conditional) expands to a shell parameter (${NAME}) and marks the line
// unresolved. Nothing is run: $(shell …) and "!=" commands are returned to be
// judged as commands make runs while reading the makefile.

// Bounds of the reading.
const (
	maxMakeTargets  = 512     // targets followed from the goals
	maxMakeJobs     = 512     // recipe lines returned
	maxMakeIncludes = 16      // included makefiles
	maxMakeExpand   = 1 << 16 // bytes one expansion may produce
	maxMakeSteps    = 1 << 14 // variable and function references one reading may expand
	maxMakePattern  = 2       // instances of one pattern rule's recipe judged
)

// mkVar is a make variable.
type mkVar struct {
	val    string
	simple bool // expanded when it was defined (":=")
	dyn    bool // its value is not known statically
	cmd    bool // given on the command line: the makefile cannot change it
}

// mkLine is one line of a recipe, as written (prefix characters included).
type mkLine struct {
	text string
	file string
	line int
}

// mkRule is a rule of a makefile.
type mkRule struct {
	targets []string
	prereqs []string
	order   []string // order-only prerequisites
	recipe  []mkLine
	pattern bool // a pattern rule (a target has a %)
	double  bool // a double-colon rule
	used    int  // instances judged (pattern rules)
}

// mkJob is a recipe line make would run, expanded.
type mkJob struct {
	text       string
	unresolved bool   // parts of it could not be expanded statically
	where      string // "Makefile:12 (target build)"
	plus       bool   // runs even with -n ("+" prefix or $(MAKE))
}

// makefile is what was read of one or more makefiles.
type makefile struct {
	vars      map[string]*mkVar
	rules     []*mkRule
	explicit  map[string][]*mkRule
	patterns  []*mkRule
	firstGoal string
	oneShell  bool
	hasEval   bool
	defines   []mkLine // lines of define … endef bodies (judged when $(eval) is used)
	parseCmds []mkJob  // commands make runs while reading: $(shell …), "!="
	problems  []string // why the reading is incomplete (the runner needs a person)
	includes  int
	steps     int
	// read returns the text of an included makefile (a path relative to
	// make's directory or absolute); ok is false when it does not exist.
	read func(name string) (text string, ok bool, problem string)
	// exists reports whether a file exists (pattern rule prerequisites).
	exists func(name string) bool
}

// newMakefile returns an empty makefile with make's built-in variables.
// dir is make's working directory.
func newMakefile(dir string) *makefile {
	m := &makefile{vars: map[string]*mkVar{}, explicit: map[string][]*mkRule{}}
	for k, v := range map[string]string{
		"CC": "cc", "CXX": "g++", "CPP": "$(CC) -E", "FC": "f77", "AR": "ar", "AS": "as", "LD": "ld",
		"RM": "rm -f", "MAKE": "make", "SHELL": "/bin/sh", "ARFLAGS": "rv", "LEX": "lex", "YACC": "yacc",
		"CFLAGS": "", "CXXFLAGS": "", "CPPFLAGS": "", "LDFLAGS": "", "LDLIBS": "", "ASFLAGS": "",
		"MAKEFLAGS": "", "MFLAGS": "", "MAKECMDGOALS": "", "TARGET_ARCH": "", "OUTPUT_OPTION": "-o $@",
		"COMPILE.c": "$(CC) $(CFLAGS) $(CPPFLAGS) $(TARGET_ARCH) -c", "LINK.o": "$(CC) $(LDFLAGS) $(TARGET_ARCH)",
	} {
		m.vars[k] = &mkVar{val: v}
	}
	if dir != "" {
		m.vars["CURDIR"] = &mkVar{val: dir, simple: true}
	}
	return m
}

// setCmdVar records a command-line assignment (make VAR=value), which
// overrides the makefile's.
func (m *makefile) setCmdVar(name, val string, dyn bool) {
	m.vars[name] = &mkVar{val: val, simple: true, dyn: dyn, cmd: true}
}

// parse reads the text of one makefile named file.
func (m *makefile) parse(file, text string) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var cur []*mkRule // the rules whose recipe follows
	cond := 0         // depth of conditionals
	for i := 0; i < len(lines); i++ {
		ln := i + 1
		raw := lines[i]
		if strings.HasPrefix(raw, "\t") && cur != nil {
			// A recipe line; a backslash-newline continues it, and make
			// removes the tab that starts the continuation line.
			t := raw[1:]
			for strings.HasSuffix(t, `\`) && !strings.HasSuffix(t, `\\`) && i+1 < len(lines) {
				i++
				t += "\n" + strings.TrimPrefix(lines[i], "\t")
			}
			for _, r := range cur {
				r.recipe = append(r.recipe, mkLine{text: t, file: file, line: ln})
			}
			continue
		}
		// A logical line: backslash-newline joins with a space.
		l := raw
		for strings.HasSuffix(l, `\`) && !strings.HasSuffix(l, `\\`) && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, `\`) + " " + strings.TrimLeft(lines[i], " \t")
		}
		l = strings.TrimSpace(stripMakeComment(l))
		if l == "" {
			continue
		}
		word, rest := firstWord(l)
		switch word {
		case "ifeq", "ifneq", "ifdef", "ifndef":
			cond++
			continue
		case "else":
			continue
		case "endif":
			if cond > 0 {
				cond--
			}
			continue
		case "define":
			name := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(rest), ":=+?!"))
			var body []string
			depth := 1
			for i+1 < len(lines) {
				i++
				w, _ := firstWord(strings.TrimSpace(lines[i]))
				if w == "define" {
					depth++
				}
				if w == "endef" {
					depth--
					if depth == 0 {
						break
					}
				}
				body = append(body, lines[i])
				if strings.HasPrefix(lines[i], "\t") {
					m.defines = append(m.defines, mkLine{text: lines[i][1:], file: file, line: i + 1})
				}
			}
			m.assign(name, "=", strings.Join(body, "\n"), cond > 0)
			cur = nil
			continue
		case "include", "-include", "sinclude":
			m.include(m.expand(rest, nil).text, word == "include")
			cur = nil
			continue
		case "export", "unexport", "override", "private", "undefine", "vpath":
			if word == "undefine" || word == "vpath" || word == "unexport" {
				cur = nil
				continue
			}
			if !strings.ContainsAny(rest, "=:") {
				continue // "export NAME": no assignment
			}
			l = strings.TrimSpace(rest)
		}
		if strings.Contains(l, "$(eval") || strings.Contains(l, "${eval") {
			m.hasEval = true
		}
		kind, at, opLen := splitMakeLine(l)
		switch kind {
		case '=':
			name := strings.TrimSpace(l[:at])
			op := l[at : at+opLen]
			val := strings.TrimLeft(l[at+opLen:], " \t")
			if strings.ContainsAny(name, "$") {
				name = m.expand(name, nil).text
			}
			m.assign(name, op, val, cond > 0)
			cur = nil
		case ':':
			cur = m.rule(l, at, opLen, file, ln, cond > 0)
		default:
			// A line make does not understand as a rule or an assignment
			// ($(eval …) at top level, a function call): make expands it
			// first, so the $(shell …) calls in it run.
			if strings.Contains(l, "$") {
				m.expand(l, nil)
			}
			cur = nil
		}
	}
}

// stripMakeComment removes a "#" comment that is not escaped.
func stripMakeComment(l string) string {
	for i := 0; i < len(l); i++ {
		if l[i] == '#' && (i == 0 || l[i-1] != '\\') {
			return l[:i]
		}
	}
	return l
}

func firstWord(l string) (string, string) {
	i := strings.IndexAny(l, " \t")
	if i < 0 {
		return l, ""
	}
	return l[:i], l[i+1:]
}

// splitMakeLine finds the operator of a makefile line outside references:
// '=' for an assignment (at is where the operator starts, n its length) or
// ':' for a rule.
func splitMakeLine(l string) (kind byte, at, n int) {
	depth := 0
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c == '$' && i+1 < len(l) && (l[i+1] == '(' || l[i+1] == '{'):
			depth++
			i++
		case (c == ')' || c == '}') && depth > 0:
			depth--
		case depth > 0:
		case c == '=':
			if i > 0 && strings.IndexByte("?+!", l[i-1]) >= 0 {
				return '=', i - 1, 2
			}
			return '=', i, 1
		case c == ':':
			// ":=", "::=", ":::=" are assignments; "::" a double-colon rule.
			j := i
			for j < len(l) && l[j] == ':' {
				j++
			}
			if j < len(l) && l[j] == '=' {
				return '=', i, j - i + 1
			}
			// A drive letter ("C:/x") is not a rule separator.
			if i == 1 && isLetter(l[0]) && j < len(l) && (l[j] == '/' || l[j] == '\\') {
				i = j - 1
				continue
			}
			return ':', i, j - i
		}
	}
	return 0, 0, 0
}

// assign records an assignment. Inside a conditional, a second different
// value makes the variable unknown: the guard does not evaluate conditions.
func (m *makefile) assign(name, op, val string, conditional bool) {
	if name == "" {
		return
	}
	old := m.vars[name]
	if old != nil && old.cmd {
		return
	}
	var nv mkVar
	switch op {
	case "=":
		nv = mkVar{val: val}
	case ":=", "::=", ":::=":
		e := m.expand(val, nil)
		nv = mkVar{val: e.text, simple: true, dyn: e.unresolved}
	case "?=":
		if old != nil {
			return
		}
		nv = mkVar{val: val}
	case "+=":
		switch {
		case old == nil:
			nv = mkVar{val: val}
		case old.simple:
			e := m.expand(val, nil)
			nv = mkVar{val: strings.TrimSpace(old.val + " " + e.text), simple: true, dyn: old.dyn || e.unresolved}
		default:
			nv = mkVar{val: strings.TrimSpace(old.val + " " + val), dyn: old.dyn}
		}
	case "!=":
		e := m.expand(val, nil)
		m.parseCmds = append(m.parseCmds, mkJob{text: e.text, unresolved: e.unresolved, where: name + " != …"})
		nv = mkVar{simple: true, dyn: true}
	default:
		return
	}
	if name == ".ONESHELL" {
		m.oneShell = true
	}
	if conditional && old != nil && (old.val != nv.val || old.dyn != nv.dyn || old.simple != nv.simple) {
		nv = mkVar{dyn: true, simple: true}
	}
	m.vars[name] = &nv
}

// include reads the makefiles an include directive names.
func (m *makefile) include(names string, required bool) {
	for _, n := range strings.Fields(names) {
		if strings.Contains(n, "${") || hasGlobMeta(n) {
			if required {
				m.problems = append(m.problems, "it includes "+n+", a name computed at run time")
			}
			continue
		}
		if m.includes >= maxMakeIncludes {
			m.problems = append(m.problems, "it includes more than "+strconv.Itoa(maxMakeIncludes)+" makefiles")
			return
		}
		m.includes++
		if m.read == nil {
			continue
		}
		text, ok, problem := m.read(n)
		switch {
		case problem != "":
			m.problems = append(m.problems, "its include "+n+" "+problem)
		case ok:
			m.parse(n, text)
		}
	}
}

// rule records a rule line: targets, prerequisites and an inline recipe
// after ";". A target-specific assignment ("t: VAR = x") makes VAR
// unknown. It returns the rules whose recipe follows.
func (m *makefile) rule(l string, at, n int, file string, ln int, conditional bool) []*mkRule {
	targetText := l[:at]
	double := n == 2
	grouped := strings.HasSuffix(targetText, "&")
	targetText = strings.TrimSuffix(targetText, "&")
	rest := l[at+n:]
	var inline string
	hasInline := false
	if k := indexTop(rest, ';'); k >= 0 {
		inline, hasInline = strings.TrimLeft(rest[k+1:], " \t"), true
		rest = rest[:k]
	}
	if kind, at2, n2 := splitMakeLine(rest); kind == '=' {
		// Target-specific variable: its value differs by target.
		name := strings.TrimSpace(rest[:at2])
		for _, w := range []string{"override", "export", "private"} {
			name = strings.TrimSpace(strings.TrimPrefix(name, w+" "))
		}
		if name != "" {
			if old := m.vars[name]; old == nil || !old.cmd {
				m.vars[name] = &mkVar{dyn: true, simple: true}
			}
		}
		_ = n2
		return nil
	}
	targets := strings.Fields(m.expand(targetText, nil).text)
	pre, order, _ := strings.Cut(m.expand(rest, nil).text, "|")
	r := &mkRule{targets: targets, prereqs: strings.Fields(pre), order: strings.Fields(order), double: double}
	_ = grouped
	for _, t := range targets {
		if strings.Contains(t, "%") {
			r.pattern = true
		}
	}
	// Old-fashioned suffix rules (".c.o:") are pattern rules.
	if len(targets) == 1 && len(r.prereqs) == 0 && isSuffixRule(targets[0]) {
		from, to := splitSuffixRule(targets[0])
		r.targets, r.prereqs, r.pattern = []string{"%" + to}, []string{"%" + from}, true
	}
	if hasInline {
		r.recipe = append(r.recipe, mkLine{text: inline, file: file, line: ln})
	}
	m.rules = append(m.rules, r)
	if r.pattern {
		m.patterns = append(m.patterns, r)
		return []*mkRule{r}
	}
	for _, t := range targets {
		if t == ".ONESHELL" {
			m.oneShell = true
		}
		m.explicit[t] = append(m.explicit[t], r)
		if m.firstGoal == "" && !conditional && (!strings.HasPrefix(t, ".") || strings.Contains(t, "/")) {
			m.firstGoal = t
		}
	}
	if m.firstGoal == "" && conditional {
		for _, t := range targets {
			if !strings.HasPrefix(t, ".") || strings.Contains(t, "/") {
				m.firstGoal = t
				break
			}
		}
	}
	return []*mkRule{r}
}

var knownSuffixes = []string{".c", ".o", ".cc", ".cpp", ".C", ".s", ".S", ".f", ".y", ".l", ".p", ".r", ".sh", ".a", ".h", ".out", ".ln", ".mod", ".sym", ".def", ".texinfo", ".info", ".dvi", ".tex", ".web", ".w", ".ch"}

func isSuffixRule(t string) bool {
	from, to := splitSuffixRule(t)
	return from != "" && to != ""
}

func splitSuffixRule(t string) (string, string) {
	for _, s := range knownSuffixes {
		if strings.HasPrefix(t, s) && len(t) > len(s) {
			rest := t[len(s):]
			for _, u := range knownSuffixes {
				if rest == u {
					return s, u
				}
			}
		}
	}
	return "", ""
}

// indexTop returns the index of c in s outside references, or -1.
func indexTop(s string, c byte) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '$' && i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '{'):
			depth++
			i++
		case (s[i] == ')' || s[i] == '}') && depth > 0:
			depth--
		case depth == 0 && s[i] == c:
			return i
		}
	}
	return -1
}

// expansion is the result of expanding text.
type expansion struct {
	text       string
	unresolved bool
}

// mkExp expands references in one context (a recipe's automatic
// variables).
type mkExp struct {
	m          *makefile
	auto       map[string]string
	active     map[string]bool // variables being expanded (self reference)
	unresolved bool
	depth      int
}

// expand expands text with the automatic variables auto (nil outside a
// recipe).
func (m *makefile) expand(text string, auto map[string]string) expansion {
	e := &mkExp{m: m, auto: auto, active: map[string]bool{}}
	out := e.expand(text)
	return expansion{text: out, unresolved: e.unresolved}
}

func (e *mkExp) unknown(name string) string {
	e.unresolved = true
	if validName(name, false) {
		return "${" + name + "}"
	}
	return "${MAKE_UNRESOLVED}"
}

func (e *mkExp) expand(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	if e.depth > 32 {
		return e.unknown("")
	}
	e.depth++
	defer func() { e.depth-- }()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			break
		}
		n := s[i+1]
		switch n {
		case '$':
			b.WriteByte('$')
			i++
		case '(', '{':
			j := matchClose(s, i+2, n)
			if j < 0 {
				e.unresolved = true
				b.WriteString("${MAKE_UNRESOLVED}")
				i = len(s)
				continue
			}
			b.WriteString(e.ref(s[i+2 : j]))
			i = j
		default:
			b.WriteString(e.ref(string(n)))
			i++
		}
		if b.Len() > maxMakeExpand {
			e.unresolved = true
			return b.String()[:maxMakeExpand]
		}
	}
	return b.String()
}

// matchClose returns the index of the parenthesis or brace that closes the
// one opened just before from, or -1.
func matchClose(s string, from int, open byte) int {
	closer := byte(')')
	if open == '{' {
		closer = '}'
	}
	depth := 1
	for i := from; i < len(s); i++ {
		switch s[i] {
		case open:
			depth++
		case closer:
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

var makeFuncs = map[string]bool{
	"subst": true, "patsubst": true, "strip": true, "findstring": true, "filter": true, "filter-out": true,
	"sort": true, "word": true, "wordlist": true, "words": true, "firstword": true, "lastword": true,
	"dir": true, "notdir": true, "suffix": true, "basename": true, "addsuffix": true, "addprefix": true,
	"join": true, "wildcard": true, "realpath": true, "abspath": true, "error": true, "warning": true,
	"info": true, "shell": true, "origin": true, "flavor": true, "foreach": true, "if": true, "or": true,
	"and": true, "intcmp": true, "call": true, "eval": true, "file": true, "value": true, "let": true, "guile": true,
}

// ref expands the inside of $(…).
func (e *mkExp) ref(inner string) string {
	e.m.steps++
	if e.m.steps > maxMakeSteps {
		return e.unknown("")
	}
	if i := strings.IndexAny(inner, " \t"); i > 0 && makeFuncs[inner[:i]] {
		return e.call(inner[:i], strings.TrimLeft(inner[i+1:], " \t"))
	}
	name := inner
	// A substitution reference: $(VAR:.c=.o).
	var from, to string
	subst := false
	if k := indexTop(inner, ':'); k > 0 {
		if eq := strings.IndexByte(inner[k:], '='); eq > 0 {
			name, from, to, subst = inner[:k], inner[k+1:k+eq], inner[k+eq+1:], true
		}
	}
	if strings.Contains(name, "$") {
		name = e.expand(name)
	}
	v := e.variable(name)
	if subst {
		from, to = e.expand(from), e.expand(to)
		if !strings.Contains(from, "%") {
			from, to = "%"+from, "%"+to
		}
		words := strings.Fields(v)
		for i, w := range words {
			words[i] = patsubst(from, to, w)
		}
		v = strings.Join(words, " ")
	}
	return v
}

// variable returns the value of a variable or an automatic variable.
func (e *mkExp) variable(name string) string {
	if e.auto != nil {
		if v, ok := e.auto[name]; ok {
			return v
		}
		if len(name) == 2 && (name[1] == 'D' || name[1] == 'F') {
			if v, ok := e.auto[name[:1]]; ok {
				words := strings.Fields(v)
				for i, w := range words {
					if name[1] == 'D' {
						words[i] = path.Dir(w)
					} else {
						words[i] = path.Base(w)
					}
				}
				return strings.Join(words, " ")
			}
		}
	}
	v := e.m.vars[name]
	switch {
	case v == nil:
		if e.auto == nil && len(name) == 1 && strings.Contains("@<^+?*|%", name) {
			return e.unknown("")
		}
		return e.unknown(name)
	case v.dyn:
		return e.unknown(name)
	case v.simple:
		return v.val
	case e.active[name]:
		return e.unknown(name)
	}
	e.active[name] = true
	out := e.expand(v.val)
	delete(e.active, name)
	return out
}

// call expands a function.
func (e *mkExp) call(fn, argText string) string {
	args := splitTopCommas(argText)
	arg := func(i int) string {
		if i < len(args) {
			return e.expand(args[i])
		}
		return ""
	}
	switch fn {
	case "subst":
		from, to, text := arg(0), arg(1), arg(2)
		if from == "" {
			return text
		}
		return strings.ReplaceAll(text, from, to)
	case "patsubst":
		from, to := arg(0), arg(1)
		words := strings.Fields(arg(2))
		for i, w := range words {
			words[i] = patsubst(from, to, w)
		}
		return strings.Join(words, " ")
	case "strip":
		return strings.Join(strings.Fields(arg(0)), " ")
	case "findstring":
		if strings.Contains(arg(1), arg(0)) {
			return arg(0)
		}
		return ""
	case "filter", "filter-out":
		pats := strings.Fields(arg(0))
		var out []string
		for _, w := range strings.Fields(arg(1)) {
			match := false
			for _, p := range pats {
				if patMatch(p, w) {
					match = true
					break
				}
			}
			if match == (fn == "filter") {
				out = append(out, w)
			}
		}
		return strings.Join(out, " ")
	case "sort":
		words := strings.Fields(arg(0))
		sortUnique(&words)
		return strings.Join(words, " ")
	case "word":
		n, err := strconv.Atoi(strings.TrimSpace(arg(0)))
		words := strings.Fields(arg(1))
		if err != nil || n < 1 {
			return e.unknown("")
		}
		if n <= len(words) {
			return words[n-1]
		}
		return ""
	case "words":
		return strconv.Itoa(len(strings.Fields(arg(0))))
	case "firstword", "lastword":
		words := strings.Fields(arg(0))
		if len(words) == 0 {
			return ""
		}
		if fn == "firstword" {
			return words[0]
		}
		return words[len(words)-1]
	case "dir", "notdir", "suffix", "basename":
		words := strings.Fields(arg(0))
		for i, w := range words {
			switch fn {
			case "dir":
				if k := strings.LastIndexByte(w, '/'); k >= 0 {
					words[i] = w[:k+1]
				} else {
					words[i] = "./"
				}
			case "notdir":
				words[i] = w[strings.LastIndexByte(w, '/')+1:]
			case "suffix":
				words[i] = path.Ext(w)
			case "basename":
				words[i] = strings.TrimSuffix(w, path.Ext(w))
			}
		}
		return strings.Join(words, " ")
	case "addsuffix", "addprefix":
		x := arg(0)
		words := strings.Fields(arg(1))
		for i, w := range words {
			if fn == "addsuffix" {
				words[i] = w + x
			} else {
				words[i] = x + w
			}
		}
		return strings.Join(words, " ")
	case "join":
		a, b := strings.Fields(arg(0)), strings.Fields(arg(1))
		out := make([]string, max(len(a), len(b)))
		for i := range out {
			if i < len(a) {
				out[i] = a[i]
			}
			if i < len(b) {
				out[i] += b[i]
			}
		}
		return strings.Join(out, " ")
	case "info", "warning":
		arg(0)
		return ""
	case "error":
		// make stops here; what it names cannot be known.
		arg(0)
		return e.unknown("")
	case "if":
		c := e.expand(strings.TrimSpace(firstArg(args)))
		if e.unresolved && strings.Contains(c, "${") {
			arg(1)
			arg(2)
			return e.unknown("")
		}
		if strings.TrimSpace(c) != "" {
			return arg(1)
		}
		return arg(2)
	case "or":
		for i := range args {
			if v := arg(i); strings.TrimSpace(v) != "" {
				return v
			}
		}
		return ""
	case "and":
		v := ""
		for i := range args {
			if v = arg(i); strings.TrimSpace(v) == "" {
				return ""
			}
		}
		return v
	case "value":
		if v := e.m.vars[strings.TrimSpace(arg(0))]; v != nil && !v.dyn {
			return v.val
		}
		return e.unknown("")
	case "shell":
		cmd := e.expand(argText)
		e.m.parseCmds = append(e.m.parseCmds, mkJob{text: cmd, unresolved: e.unresolved, where: "$(shell …)"})
		return e.unknown("")
	case "eval":
		e.m.hasEval = true
		return e.unknown("")
	}
	// wildcard, realpath, abspath, origin, flavor, foreach, call, file,
	// let, guile, intcmp, wordlist: not evaluated.
	return e.unknown("")
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// splitTopCommas splits function arguments at commas outside references.
func splitTopCommas(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '(' || s[i] == '{':
			depth++
		case (s[i] == ')' || s[i] == '}') && depth > 0:
			depth--
		case s[i] == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// patMatch reports whether w matches a make pattern with at most one %.
func patMatch(p, w string) bool {
	_, ok := stem(p, w)
	return ok
}

// stem returns the part of w that the % of pattern p matches.
func stem(p, w string) (string, bool) {
	pre, suf, ok := strings.Cut(p, "%")
	if !ok {
		return "", p == w
	}
	if len(w) < len(pre)+len(suf) || !strings.HasPrefix(w, pre) || !strings.HasSuffix(w, suf) {
		return "", false
	}
	return w[len(pre) : len(w)-len(suf)], true
}

func patsubst(from, to, w string) string {
	s, ok := stem(from, w)
	if !ok {
		return w
	}
	return strings.Replace(to, "%", s, 1)
}

func sortUnique(words *[]string) {
	w := *words
	for i := 1; i < len(w); i++ {
		for j := i; j > 0 && w[j] < w[j-1]; j-- {
			w[j], w[j-1] = w[j-1], w[j]
		}
	}
	out := w[:0]
	for i, x := range w {
		if i == 0 || x != w[i-1] {
			out = append(out, x)
		}
	}
	*words = out
}

// jobs returns the recipe lines make runs to build goals (the default goal
// when there is none), prerequisites first. all means the goal is not known
// statically: every rule's recipe is returned, as unresolved.
func (m *makefile) jobs(goals []string, all bool) ([]mkJob, bool) {
	w := &mkWalk{m: m, seen: map[string]bool{}}
	if all {
		for _, r := range m.rules {
			t := ""
			if len(r.targets) > 0 {
				t = r.targets[0]
			}
			w.recipe(r, t, "", true)
		}
		return w.out, w.truncated
	}
	if len(goals) == 0 {
		g := m.firstGoal
		if v := m.vars[".DEFAULT_GOAL"]; v != nil {
			e := m.expand(v.val, nil)
			if v.simple {
				e = expansion{text: v.val, unresolved: v.dyn}
			}
			if f := strings.Fields(e.text); len(f) > 0 && !e.unresolved {
				g = f[0]
			}
		}
		if g == "" {
			return nil, false
		}
		goals = []string{g}
	}
	for _, g := range goals {
		w.visit(g, 0)
	}
	return w.out, w.truncated
}

// mkWalk follows targets.
type mkWalk struct {
	m         *makefile
	seen      map[string]bool
	out       []mkJob
	targets   int
	truncated bool
}

func (w *mkWalk) visit(t string, depth int) {
	if w.seen[t] || w.truncated {
		return
	}
	w.seen[t] = true
	w.targets++
	if w.targets > maxMakeTargets || depth > 64 {
		w.truncated = true
		return
	}
	rules := w.m.explicit[t]
	var prereqs []string
	var withRecipe []*mkRule
	for _, r := range rules {
		prereqs = append(prereqs, r.prereqs...)
		prereqs = append(prereqs, r.order...)
		if len(r.recipe) > 0 {
			if r.double {
				withRecipe = append(withRecipe, r)
			} else {
				withRecipe = []*mkRule{r} // the last single-colon recipe wins
			}
		}
	}
	var pr *mkRule
	st := ""
	if len(withRecipe) == 0 {
		pr, st = w.m.pattern(t)
		if pr == nil {
			if d := w.m.explicit[".DEFAULT"]; len(d) > 0 && len(rules) == 0 && (w.m.exists == nil || !w.m.exists(t)) {
				withRecipe = d
			}
		}
	}
	for _, p := range prereqs {
		w.visit(p, depth+1)
	}
	if pr != nil {
		for _, p := range pr.prereqs {
			w.visit(strings.ReplaceAll(p, "%", st), depth+1)
		}
		if pr.used < maxMakePattern {
			pr.used++
			w.recipe(pr, t, st, false)
		}
		return
	}
	for _, r := range withRecipe {
		w.recipe(r, t, "", false)
	}
}

// pattern finds the pattern rule that builds t: its target pattern matches
// and its prerequisites exist or are targets.
func (m *makefile) pattern(t string) (*mkRule, string) {
	for _, r := range m.patterns {
		if len(r.recipe) == 0 {
			continue
		}
		for _, tp := range r.targets {
			st, ok := stem(tp, t)
			if !ok {
				continue
			}
			good := true
			for _, p := range r.prereqs {
				name := strings.ReplaceAll(p, "%", st)
				if len(m.explicit[name]) == 0 && (m.exists == nil || !m.exists(name)) {
					good = false
					break
				}
			}
			if good {
				return r, st
			}
		}
	}
	return nil, ""
}

// recipe expands the recipe of rule r building target t.
func (w *mkWalk) recipe(r *mkRule, t, st string, unresolved bool) {
	if len(r.recipe) == 0 {
		return
	}
	pre := r.prereqs
	if r.pattern {
		pre = make([]string, len(r.prereqs))
		for i, p := range r.prereqs {
			pre[i] = strings.ReplaceAll(p, "%", st)
		}
	}
	uniq := append([]string(nil), pre...)
	uniqWords(&uniq)
	auto := map[string]string{"@": t, "^": strings.Join(uniq, " "), "+": strings.Join(pre, " "),
		"?": strings.Join(uniq, " "), "|": strings.Join(r.order, " "), "%": ""}
	if len(pre) > 0 {
		auto["<"] = pre[0]
	} else {
		auto["<"] = ""
	}
	if r.pattern {
		auto["*"] = st
	}
	where := func(l mkLine) string {
		return l.file + ":" + strconv.Itoa(l.line) + " (target " + clip(t, 60) + ")"
	}
	if w.m.oneShell {
		var b strings.Builder
		plus, un := false, unresolved
		for i, l := range r.recipe {
			text, p, u := w.line(l, auto)
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(text)
			plus, un = plus || p, un || u
		}
		w.add(mkJob{text: b.String(), unresolved: un, where: where(r.recipe[0]), plus: plus})
		return
	}
	for _, l := range r.recipe {
		text, plus, u := w.line(l, auto)
		if strings.TrimSpace(text) == "" {
			continue
		}
		w.add(mkJob{text: text, unresolved: u || unresolved, where: where(l), plus: plus})
	}
}

func (w *mkWalk) add(j mkJob) {
	for _, o := range w.out {
		if o.text == j.text && o.unresolved == j.unresolved {
			return
		}
	}
	if len(w.out) >= maxMakeJobs {
		w.truncated = true
		return
	}
	w.out = append(w.out, j)
}

// line expands one recipe line and removes its prefix characters (before
// and after expansion, as make does for "$(Q)cmd").
func (w *mkWalk) line(l mkLine, auto map[string]string) (text string, plus, unresolved bool) {
	raw := l.text
	raw, plus = stripRecipePrefix(raw)
	usesMake := strings.Contains(raw, "$(MAKE)") || strings.Contains(raw, "${MAKE}")
	e := w.m.expand(raw, auto)
	text, p2 := stripRecipePrefix(e.text)
	return text, plus || p2 || usesMake, e.unresolved
}

func stripRecipePrefix(s string) (string, bool) {
	plus := false
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" || strings.IndexByte("@-+", s[0]) < 0 {
			return s, plus
		}
		plus = plus || s[0] == '+'
		s = s[1:]
	}
}

func uniqWords(ws *[]string) {
	seen := map[string]bool{}
	out := (*ws)[:0]
	for _, w := range *ws {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	*ws = out
}

// shellProblem reports why the recipes cannot be read as shell code: SHELL
// or .SHELLFLAGS set to something the guard does not analyse.
func (m *makefile) shellProblem(isShell func(string) bool) string {
	if v := m.vars["SHELL"]; v != nil {
		val := v.val
		if !v.simple {
			e := m.expand(val, nil)
			val = e.text
			if e.unresolved {
				return "SHELL is computed at run time"
			}
		}
		if v.dyn {
			return "SHELL is computed at run time"
		}
		f := strings.Fields(val)
		if len(f) == 0 {
			return "SHELL is empty"
		}
		prog := progName(f[0])
		if prog == "env" && len(f) > 1 {
			prog = progName(f[len(f)-1])
		}
		if len(f) > 1 && prog != "env" && progName(f[0]) != "env" || !isShell(prog) {
			return "SHELL is " + clip(val, 60) + ", which is not a shell the guard reads"
		}
	}
	if v := m.vars[".SHELLFLAGS"]; v != nil {
		if v.dyn {
			return ".SHELLFLAGS is computed at run time"
		}
		for _, f := range strings.Fields(v.val) {
			switch f {
			case "pipefail", "errexit", "nounset", "xtrace", "posix":
				continue
			}
			if !strings.HasPrefix(f, "-") || strings.ContainsAny(f, "'\"$;|&") {
				return ".SHELLFLAGS is " + clip(v.val, 60)
			}
		}
	}
	return ""
}
