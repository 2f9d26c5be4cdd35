package firewall

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/policy"
)

// LearnedPrefix starts the name of every rule made from an accepted
// proposal.
const LearnedPrefix = "learned-"

// Candidate is a rule the learned-trust layer may propose to a person: the
// narrowest rule that covers a run of a person's approvals of one kind of
// call. It is only a proposal; nothing is saved until a person accepts it.
type Candidate struct {
	// ID is stable for one kind of call (see Key), whatever approvals are
	// added later.
	ID string `json:"id"`
	// Key names the kind of call: agent, tool, working directory, program
	// and subcommand.
	Key string `json:"key"`
	// Title describes the calls the rule covers, for a person.
	Title string      `json:"title"`
	Rule  policy.Rule `json:"rule"`
	// Approvals are the approved calls the rule is made from (its match
	// examples); Refusals are the refused calls of the same program (its
	// not_match examples).
	Approvals []PastAction `json:"-"`
	Refusals  []PastAction `json:"-"`
}

// maxExamples bounds the examples a proposed rule carries.
const maxExamples = 10

// Propose finds the kinds of shell calls a person approved at least after
// times and refused none of, and derives for each the narrowest rule that
// covers those approvals from the shell guard's facts: the program, its
// subcommand (the leading operands every approval shares), the options
// seen, the shapes of the other operands (package-like words when several
// were seen, else the literal values), the paths touched (under their
// common directory, with the intents seen), and the working directory,
// agent and tool. It never proposes a bare program name: without a shared
// subcommand the operands must be literal or paths under a directory. The
// approved calls become the rule's match examples and the person's refusals
// of the same program its not_match examples; a rule that would match any
// refusal is not proposed. past is the audit trail, oldest first. The
// result is sorted by ID.
func Propose(past []PastAction, after int) []Candidate {
	if after <= 0 {
		return nil
	}
	groups := map[string][]callShape{}
	var refusals []callShape
	for i := range past {
		p := &past[i]
		if !p.Approved() && !p.Refused() {
			continue
		}
		s, ok := shapeOf(p)
		if !ok {
			continue
		}
		if p.Refused() {
			refusals = append(refusals, s)
			continue
		}
		groups[s.key()] = append(groups[s.key()], s)
	}
	var out []Candidate
	for key, calls := range groups {
		if len(calls) < after {
			continue
		}
		c, ok := derive(key, calls, refusals)
		if ok {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Candidate) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// ProposalID is the stable id of the proposal for one kind of call.
func ProposalID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "prp_" + hex.EncodeToString(sum[:6])
}

// callShape is a single shell command as the shell guard saw it.
type callShape struct {
	p       *PastAction
	argKey  string // "command" or "cmd": where the command line is
	cmd     action.Command
	flags   []string // arguments that start with '-'
	ops     []string // the other arguments, in order
	pathOps map[string]bool
}

// shapeOf reads the shape of a past shell call: one simple command, fully
// static, written as the program's own name (no wrapper such as sudo or
// env, no assignments, no path to the program), so that a rule can ask for
// exactly that.
func shapeOf(p *PastAction) (callShape, bool) {
	a := &p.Action
	if a.Kind != action.KindShell || len(a.Facts.Commands) != 1 {
		return callShape{}, false
	}
	c := a.Facts.Commands[0]
	if c.Dynamic || c.Name == "" || strings.ContainsAny(c.Name, "/ \t\n\"'\\") {
		return callShape{}, false
	}
	s := callShape{p: p, cmd: c, pathOps: map[string]bool{}}
	for _, k := range []string{"command", "cmd"} {
		if v, ok := a.Args[k].(string); ok {
			if line := strings.TrimSpace(v); line == c.Name || strings.HasPrefix(line, c.Name+" ") {
				s.argKey = k
			}
			break
		}
	}
	if s.argKey == "" {
		return callShape{}, false
	}
	paths := map[string]bool{}
	for _, f := range a.Facts.Paths {
		paths[f.Path] = true
	}
	for _, x := range c.Args {
		if len(x) > 1 && x[0] == '-' {
			s.flags = append(s.flags, x)
			continue
		}
		s.ops = append(s.ops, x)
		if paths[action.ResolvePath(a.Cwd, x)] {
			s.pathOps[x] = true
		}
	}
	return s, true
}

// key groups calls of one kind: agent, tool, working directory, program
// and the first operand (or "<path>" when it is a path the call touches).
func (s callShape) key() string {
	first := ""
	if len(s.ops) > 0 {
		first = s.ops[0]
		if s.pathOps[first] {
			first = "<path>"
		}
	}
	a := &s.p.Action
	return strings.Join([]string{a.Agent, a.Tool, a.Cwd, s.cmd.Name, first}, "\x00")
}

// family is what refusals are compared by: agent, tool, working directory
// and program.
func (s callShape) family() string {
	a := &s.p.Action
	return strings.Join([]string{a.Agent, a.Tool, a.Cwd, s.cmd.Name}, "\x00")
}

// Operand shapes, from the narrowest. A value that fits none is kept
// literally.
var operandClasses = []struct {
	name, title string
	re          *regexp.Regexp
}{
	{"word", "<name>", regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.+-]*$`)},
	{"scoped", "<@scope/name>", regexp.MustCompile(`^@[A-Za-z0-9_][A-Za-z0-9_.-]*/[A-Za-z0-9_][A-Za-z0-9_.+-]*$`)},
	{"versioned", "<name@version>", regexp.MustCompile(`^(@[A-Za-z0-9_][A-Za-z0-9_.-]*/)?[A-Za-z0-9_][A-Za-z0-9_.+-]*@[A-Za-z0-9_.^~*+-]+$`)},
}

// pathOperand is the shape of an operand that names a path; where the path
// is, is the rule's condition on facts.paths.
const pathOperand = `^[A-Za-z0-9_./][A-Za-z0-9_./+-]*$`

func derive(key string, calls []callShape, refusals []callShape) (Candidate, bool) {
	first := calls[0]
	a0 := &first.p.Action
	for _, c := range calls {
		if c.argKey != first.argKey {
			return Candidate{}, false
		}
	}
	// The subcommand: the leading operands every approval shares, up to
	// the first path.
	prefix := slices.Clone(first.ops)
	for _, c := range calls[1:] {
		n := 0
		for n < len(prefix) && n < len(c.ops) && prefix[n] == c.ops[n] {
			n++
		}
		prefix = prefix[:n]
	}
	for i, x := range prefix {
		if first.pathOps[x] {
			prefix = prefix[:i]
			break
		}
	}
	// The rest: flags seen, operand shapes.
	var opLits []string // operand values kept literally
	var flags []string
	minOps := -1
	values := map[string]bool{}
	hasPath := false
	for _, c := range calls {
		flags = append(flags, c.flags...)
		rest := c.ops[len(prefix):]
		if minOps < 0 || len(rest) < minOps {
			minOps = len(rest)
		}
		for _, x := range rest {
			if c.pathOps[x] {
				hasPath = true
				continue
			}
			values[x] = true
		}
	}
	slices.Sort(flags)
	flags = slices.Compact(flags)
	// Options every approval had are required; the others are allowed.
	var required []string
	for _, f := range flags {
		all := true
		for _, c := range calls {
			all = all && slices.Contains(c.flags, f)
		}
		if all {
			required = append(required, f)
		}
	}
	classes := map[int]bool{}
	var titles []string
	if len(values) >= 2 {
		// Several different values were approved: the person approves the
		// shape, not one value. Values of no known shape stay literal.
		for v := range values {
			placed := false
			for i, cl := range operandClasses {
				if cl.re.MatchString(v) {
					classes[i] = true
					placed = true
					break
				}
			}
			if !placed {
				opLits = append(opLits, v)
			}
		}
	} else {
		for v := range values {
			opLits = append(opLits, v)
		}
	}
	slices.Sort(opLits)
	if len(prefix) == 0 && len(classes) > 0 {
		// No subcommand and operands of a shape: that is the bare program.
		return Candidate{}, false
	}
	for i, cl := range operandClasses {
		if classes[i] {
			titles = append(titles, cl.title)
		}
	}

	// Paths: every path the approvals touched lies under one directory.
	var dirs []string
	intents := map[action.PathIntent]bool{}
	var urls []string
	for _, c := range calls {
		for _, f := range c.p.Action.Facts.Paths {
			dirs = append(dirs, filepath.Dir(f.Path))
			intents[f.Intent] = true
		}
		urls = append(urls, c.p.Action.Facts.URLs...)
	}
	slices.Sort(urls)
	urls = slices.Compact(urls)
	dir := commonDir(dirs)
	if len(dirs) > 0 && !narrowDir(dir) {
		return Candidate{}, false
	}
	if hasPath {
		titles = append(titles, "<path under "+dir+">")
	}

	// The condition.
	name := first.cmd.Name
	var conds []string
	conds = append(conds, "cwd == "+strconv.Quote(a0.Cwd))
	arg := "args." + first.argKey
	conds = append(conds, fmt.Sprintf("has(%s) && (%s.trim() == %s || %s.trim().startsWith(%s))",
		arg, arg, strconv.Quote(name), arg, strconv.Quote(name+" ")))
	conds = append(conds, "size(facts.commands) == 1")
	var inner []string
	inner = append(inner, "c.name == "+strconv.Quote(name), "!c.dynamic")
	positional := `c.args.filter(x, !x.startsWith("-"))`
	if need := len(prefix) + minOps; need > 0 {
		inner = append(inner, fmt.Sprintf("size(%s) >= %d", positional, need))
	}
	for i, x := range prefix {
		inner = append(inner, fmt.Sprintf("%s[%d] == %s", positional, i, strconv.Quote(x)))
	}
	for _, f := range required {
		inner = append(inner, strconv.Quote(f)+" in c.args")
	}
	var allowed []string
	if lits := slices.Concat(prefix, opLits, flags); len(lits) > 0 {
		slices.Sort(lits)
		lits = slices.Compact(lits)
		allowed = append(allowed, "x in "+quoteList(lits))
	}
	if len(classes) > 0 {
		var alts []string
		for i, cl := range operandClasses {
			if classes[i] {
				alts = append(alts, strings.TrimSuffix(strings.TrimPrefix(cl.re.String(), "^"), "$"))
			}
		}
		allowed = append(allowed, fmt.Sprintf("x.matches(%s)", strconv.Quote("^(?:"+strings.Join(alts, "|")+")$")))
	}
	if hasPath {
		allowed = append(allowed, fmt.Sprintf(`(x.matches(%s) && !x.contains(".."))`, strconv.Quote(pathOperand)))
	}
	if len(allowed) == 0 {
		inner = append(inner, "size(c.args) == 0")
	} else {
		inner = append(inner, fmt.Sprintf("c.args.all(x, %s)", strings.Join(allowed, " || ")))
	}
	conds = append(conds, "facts.commands.exists(c, "+strings.Join(inner, " && ")+")")
	if len(dirs) == 0 {
		conds = append(conds, "size(facts.paths) == 0")
	} else {
		var ins []string
		for in := range intents {
			ins = append(ins, string(in))
		}
		slices.Sort(ins)
		conds = append(conds, fmt.Sprintf("facts.paths.all(p, p.intent in %s && (p.path == %s || p.path.startsWith(%s)))",
			quoteList(ins), strconv.Quote(dir), strconv.Quote(strings.TrimSuffix(dir, "/")+"/")))
	}
	if len(urls) == 0 {
		conds = append(conds, "size(facts.urls) == 0")
	} else {
		conds = append(conds, "facts.urls.all(u, u in "+quoteList(urls)+")")
	}

	id := ProposalID(key)
	title := strings.Join(append([]string{name}, prefix...), " ")
	if alts := slices.Concat(titles, opLits); len(alts) > 0 {
		title += " " + strings.Join(alts, " | ")
	}
	if len(flags) > 0 {
		title += " [" + strings.Join(flags, " ") + "]"
	}
	where := a0.Cwd
	if where == "" {
		where = "any directory"
	}
	title += " in " + where
	r := policy.Rule{
		Name:    LearnedPrefix + strings.TrimPrefix(id, "prp_"),
		Kind:    []action.Kind{action.KindShell},
		Tool:    []string{globEscape(a0.Tool)},
		When:    strings.Join(conds, " && "),
		Level:   action.Auto,
		Message: fmt.Sprintf("Learned trust: %s (proposed after %d approvals, accepted by a person).", title, len(calls)),
	}
	if a0.Agent != "" {
		r.Agent = []string{globEscape(a0.Agent)}
	}
	compiled, err := policy.CompileRules(policy.LayerUser, []policy.Rule{r}, policy.Options{SkipExamples: true})
	if err != nil {
		return Candidate{}, false
	}
	c := compiled[0]
	var fam []callShape
	for _, rf := range refusals {
		ok, err := c.Matches(&rf.p.Action)
		if err != nil || ok {
			// The person refused a call like these: no proposal.
			return Candidate{}, false
		}
		if rf.family() == first.family() {
			fam = append(fam, rf)
		}
	}
	cand := Candidate{ID: id, Key: key, Title: title}
	// The examples: the most recent approvals and refusals.
	for i := len(calls) - 1; i >= 0 && len(r.Match) < maxExamples; i-- {
		ok, err := c.Matches(&calls[i].p.Action)
		if err != nil || !ok {
			return Candidate{}, false
		}
		r.Match = append(r.Match, exampleOf(&calls[i].p.Action))
		cand.Approvals = append(cand.Approvals, *calls[i].p)
	}
	for i := len(fam) - 1; i >= 0 && len(r.NotMatch) < maxExamples; i-- {
		r.NotMatch = append(r.NotMatch, exampleOf(&fam[i].p.Action))
		cand.Refusals = append(cand.Refusals, *fam[i].p)
	}
	cand.Rule = r
	return cand, true
}

// exampleOf is a rule example standing for a past call.
func exampleOf(a *action.Action) policy.Example {
	return policy.Example{Tool: a.Tool, Kind: a.Kind, Agent: a.Agent, Cwd: a.Cwd, Args: a.Args}
}

// commonDir is the deepest directory holding every one of dirs.
func commonDir(dirs []string) string {
	if len(dirs) == 0 {
		return ""
	}
	d := filepath.Clean(dirs[0])
	for _, x := range dirs[1:] {
		x = filepath.Clean(x)
		for !action.Within(d, x) {
			parent := filepath.Dir(d)
			if parent == d {
				return "/"
			}
			d = parent
		}
	}
	return d
}

// narrowDir reports whether rules may be scoped to dir: not the root, not a
// top-level directory, not a home directory itself.
func narrowDir(dir string) bool {
	if !filepath.IsAbs(dir) {
		return false
	}
	parts := strings.Split(strings.Trim(dir, "/"), "/")
	if dir == "/" || len(parts) < 2 {
		return false
	}
	if len(parts) == 2 && (parts[0] == "home" || parts[0] == "Users") {
		return false
	}
	return true
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
