package shell

import (
	"bytes"
	_ "embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
)

// The effect scan: after a simple command is classified, every static
// argument that may name a path becomes a path fact with the intent its
// program's spec gives it (effects.yaml), or "unknown" when the spec does
// not say. The guards that protect paths (Overseer's home, control files,
// secrets) then judge the effect, whatever the program is called and
// whichever option carries the path: `git log --output=FILE`, `sort -o
// FILE`, `awk 1 FILE` and `date -f FILE` are judged like a write or a
// read of FILE.

//go:embed effects.yaml
var effectsYAML []byte

// intent is what a program does to one of its arguments.
type intent uint8

const (
	inUnknown intent = iota // presumed read and written
	inRead
	inWrite
	inDelete
	inExec
	inMeta // only the name or metadata: no effect recorded
	inText // not a path
)

func parseIntent(s string) (intent, error) {
	switch s {
	case "unknown":
		return inUnknown, nil
	case "read":
		return inRead, nil
	case "write":
		return inWrite, nil
	case "delete":
		return inDelete, nil
	case "exec":
		return inExec, nil
	case "meta":
		return inMeta, nil
	case "text":
		return inText, nil
	}
	return 0, fmt.Errorf("unknown intent %q (want read, write, delete, exec, meta, text or unknown)", s)
}

// pathIntent is the path fact's intent for an argument intent, and false
// when the argument leaves no fact.
func (i intent) pathIntent() (action.PathIntent, bool) {
	switch i {
	case inRead, inExec:
		return action.PathRead, true
	case inWrite:
		return action.PathWrite, true
	case inDelete:
		return action.PathDelete, true
	case inUnknown:
		return action.PathUnknown, true
	}
	return "", false
}

// effectSpecYAML is one program's entry of effects.yaml.
type effectSpecYAML struct {
	Operands    string                     `yaml:"operands"`
	First       string                     `yaml:"first"`
	Last        string                     `yaml:"last"`
	Skip        int                        `yaml:"skip"`
	Options     map[string]string          `yaml:"options"`
	When        map[string]string          `yaml:"when"`
	Recursive   []string                   `yaml:"recursive"`
	Subcommands map[string]*effectSpecYAML `yaml:"subcommands"`
}

// effectSpec is a compiled program spec.
type effectSpec struct {
	operands, first, last intent
	hasOperands           bool
	hasFirst, hasLast     bool
	skip                  int
	options               map[string]intent
	when                  map[string]intent
	recursive             []string
	always                bool // always recursive
	subs                  map[string]*effectSpec
}

// effectSpecs are the compiled program specs of effects.yaml.
var effectSpecs = mustCompileEffects(effectsYAML)

func mustCompileEffects(b []byte) map[string]*effectSpec {
	m, err := compileEffects(b)
	if err != nil {
		// The embedded file is checked by the tests.
		panic(err)
	}
	return m
}

// compileEffects decodes effects.yaml strictly and compiles it.
func compileEffects(b []byte) (map[string]*effectSpec, error) {
	var doc struct {
		Programs map[string]*effectSpecYAML `yaml:"programs"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("effects.yaml: %w", err)
	}
	out := make(map[string]*effectSpec, len(doc.Programs))
	for name, y := range doc.Programs {
		s, err := compileEffect(y)
		if err != nil {
			return nil, fmt.Errorf("effects.yaml: %s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}

func compileEffect(y *effectSpecYAML) (*effectSpec, error) {
	if y == nil {
		return nil, fmt.Errorf("empty spec")
	}
	s := &effectSpec{skip: y.Skip}
	var err error
	if y.Operands != "" {
		if s.operands, err = parseIntent(y.Operands); err != nil {
			return nil, err
		}
		s.hasOperands = true
	}
	if y.First != "" {
		if s.first, err = parseIntent(y.First); err != nil {
			return nil, err
		}
		s.hasFirst = true
	}
	if y.Last != "" {
		if s.last, err = parseIntent(y.Last); err != nil {
			return nil, err
		}
		s.hasLast = true
	}
	if y.Skip < 0 {
		return nil, fmt.Errorf("skip %d is negative", y.Skip)
	}
	for _, set := range []struct {
		in  map[string]string
		out *map[string]intent
	}{{y.Options, &s.options}, {y.When, &s.when}} {
		for opt, v := range set.in {
			if !strings.HasPrefix(opt, "-") {
				return nil, fmt.Errorf("option %q does not start with -", opt)
			}
			i, err := parseIntent(v)
			if err != nil {
				return nil, fmt.Errorf("option %s: %w", opt, err)
			}
			if *set.out == nil {
				*set.out = map[string]intent{}
			}
			(*set.out)[opt] = i
		}
	}
	for _, r := range y.Recursive {
		if r == "always" {
			s.always = true
			continue
		}
		if !strings.HasPrefix(r, "-") {
			return nil, fmt.Errorf("recursive flag %q does not start with -", r)
		}
		s.recursive = append(s.recursive, r)
	}
	for name, sub := range y.Subcommands {
		c, err := compileEffect(sub)
		if err != nil {
			return nil, fmt.Errorf("subcommand %s: %w", name, err)
		}
		if s.subs == nil {
			s.subs = map[string]*effectSpec{}
		}
		s.subs[name] = c
	}
	return s, nil
}

// maxEffectFacts bounds the path facts the effect scan adds to one command.
const maxEffectFacts = 64

// effects records the path effects of the segment s judged just before.
func (a *analyzer) effects(s *segCtx) {
	if s.idx < 0 || s.idx >= len(a.out.Segments) || a.effectFacts >= maxEffectFacts {
		return
	}
	seg := &a.out.Segments[s.idx]
	spec := effectSpecs[s.name]
	args := s.args
	readOnly := seg.Level <= action.Auto
	if spec != nil && spec.subs != nil {
		// The first operand, after the program's global options, names the
		// subcommand.
		gopts := a.r.globalOpts[s.name]
		for j := 0; j < len(args); j++ {
			v := args[j].val
			if args[j].dyn {
				break
			}
			if len(v) > 1 && v[0] == '-' {
				// A global option's value: check it as an unknown effect.
				if n, val, eq := strings.Cut(v, "="); eq {
					a.candidate(arg{val: val}, inUnknown, false)
				} else if gopts.has(n) && j+1 < len(args) {
					j++
					a.candidate(args[j], inMeta, false)
				}
				continue
			}
			if sub := spec.subs[v]; sub != nil {
				spec, args = sub, args[j+1:]
			} else if !spec.hasOperands {
				spec = nil
			}
			break
		}
	}
	base := inUnknown
	switch {
	case spec != nil && spec.hasOperands:
		base = spec.operands
	case readOnly:
		base = inRead
	}
	// Options: values of listed options get their intent; --opt=VALUE and
	// -oVALUE of unlisted options are unknown effects. Operands collect.
	var ops []arg
	recursive := spec != nil && spec.always
	dashdash := false
	for j := 0; j < len(args); j++ {
		x := args[j]
		v := x.val
		if x.dyn || dashdash || len(v) < 2 || v[0] != '-' {
			if !x.dyn || dashdash {
				ops = append(ops, x)
			}
			continue
		}
		if v == "--" {
			dashdash = true
			continue
		}
		name, val, eq := strings.Cut(v, "=")
		short := !strings.HasPrefix(v, "--")
		if spec != nil {
			for f, w := range spec.when {
				if hasAny([]string{f}, v) {
					base = w
				}
			}
			if hasAny(spec.recursive, v) {
				recursive = true
			}
		}
		if eq {
			it, ok := specOption(spec, name)
			if !ok {
				it = inUnknown
			}
			a.candidate(arg{val: val}, it, false)
			continue
		}
		if it, ok := specOption(spec, v); ok {
			if j+1 < len(args) {
				j++
				a.candidate(args[j], it, false)
			}
			continue
		}
		if short && len(v) > 2 {
			if it, ok := specOption(spec, v[:2]); ok {
				a.candidate(arg{val: v[2:]}, it, false) // -oFILE
				continue
			}
			if isLetters(v[1:]) {
				// -xzf FILE: a group of flags whose last one takes a value.
				if it, ok := specOption(spec, "-"+v[len(v)-1:]); ok && j+1 < len(args) {
					j++
					a.candidate(args[j], it, false)
				}
				continue
			}
			if i := strings.IndexAny(v[2:], "/~"); i >= 0 {
				// -o/path of an option the spec does not list.
				a.candidate(arg{val: v[2+i:]}, inUnknown, false)
			}
		}
	}
	if spec != nil && spec.skip > 0 {
		if spec.skip >= len(ops) {
			ops = nil
		} else {
			ops = ops[spec.skip:]
		}
	}
	if a.interpreter(s.name) != nil || s.name == "awk" || s.name == "gawk" {
		for _, x := range args {
			if !x.dyn && strings.ContainsAny(x.val, "'\"`(") {
				a.codeEffects(x.val)
			}
		}
		if in := a.stdinOf(s.c.redirs); in.kind == 'd' && !in.dyn {
			a.codeEffects(in.text)
		}
	}
	for _, x := range args {
		if !x.dyn {
			if f := atFile(x.val); f != "" {
				a.candidate(arg{val: f}, inRead, false)
			}
		}
	}
	if s.c.find != nil && (base == inRead || base == inUnknown) {
		// find STARTS -exec cat {} +: the program reads everything below
		// the starting points.
		for _, x := range args {
			if x.find {
				for _, st := range s.c.find.starts {
					a.candidate(st, inRead, true)
				}
				break
			}
		}
	}
	a.signalEffects(s)
	for k, x := range ops {
		it := base
		switch {
		case spec != nil && spec.hasLast && k == len(ops)-1 && len(ops) > 1:
			it = spec.last
		case spec != nil && spec.hasFirst && k == 0:
			it = spec.first
		}
		a.candidate(x, it, recursive && (it == inRead))
	}
}

func specOption(spec *effectSpec, name string) (intent, bool) {
	if spec == nil {
		return 0, false
	}
	it, ok := spec.options[name]
	return it, ok
}

func hasAny(flags []string, v string) bool {
	for _, f := range flags {
		if hasFlag([]arg{{val: v}}, f) {
			return true
		}
	}
	return false
}

// atFile returns the file of an "@file" or "name=@file" argument (curl -d
// @file, -F f=@file, HTTPie's f@file), or "".
func atFile(v string) string {
	i := strings.IndexByte(v, '@')
	if i < 0 || i+1 >= len(v) || (i > 0 && v[i-1] != '=' && !isWordByte(v[i-1])) {
		return ""
	}
	if i > 0 && strings.ContainsAny(v[:i], "/:") {
		return "" // a URL's user@host
	}
	f := v[i+1:]
	if j := strings.IndexByte(f, ';'); j >= 0 {
		f = f[:j] // -F f=@file;type=text/plain
	}
	if c := strings.IndexByte(f, ':'); c >= 0 && (strings.IndexByte(f, '/') < 0 || c < strings.IndexByte(f, '/')) {
		return "" // user@host:path (scp), not a local file
	}
	if i > 0 && v[i-1] != '=' {
		// HTTPie's field@file: only an explicit path, not a@b.com.
		if !strings.HasPrefix(f, "/") && !strings.HasPrefix(f, "~/") && !strings.HasPrefix(f, "./") && !strings.HasPrefix(f, "../") {
			return ""
		}
	}
	if !strings.ContainsAny(f, "/~.") {
		return ""
	}
	return f
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// literalPaths returns the string literals of inline code that look like
// paths ('/home/u/.ssh/id_rsa', "~/.aws/credentials", '/.netrc').
func literalPaths(code string) []string {
	var out []string
	for i := 0; i < len(code) && len(out) < 32; i++ {
		q := code[i]
		if q != '\'' && q != '"' && q != '`' {
			continue
		}
		j := strings.IndexByte(code[i+1:], q)
		if j < 0 {
			break
		}
		lit := code[i+1 : i+1+j]
		i += j + 1
		if len(lit) < 2 || len(lit) > 512 || strings.ContainsAny(lit, "\n\x00 ") || strings.Contains(lit, "://") {
			continue
		}
		if strings.ContainsAny(lit, "/") || strings.HasPrefix(lit, ".") && len(lit) > 2 && isWordByte(lit[1]) {
			out = append(out, lit)
		}
	}
	return out
}

// codeEffects records the paths named by the string literals of inline
// code (python -c, node -e, a here-document fed to an interpreter): what
// the code does with them is not known, so they are presumed read and
// written. A literal that starts with "/." may be appended to the home
// directory ('os.environ["HOME"] + "/.ssh/id_rsa"'): both are judged.
func (a *analyzer) codeEffects(code string) {
	for _, lit := range literalPaths(code) {
		a.candidate(arg{val: lit}, inUnknown, false)
		if strings.HasPrefix(lit, "/.") && a.env.Home != "" {
			a.candidate(arg{val: path.Join(a.env.Home, lit)}, inUnknown, false)
		}
	}
}

// wrapperEffects records the effects of a wrapper's own options (strace -o
// FILE, env VAR=/path): a value that looks like a path is presumed read
// and written.
func (a *analyzer) wrapperEffects(opts []arg) {
	for _, x := range opts {
		v := x.val
		if x.dyn || v == "" {
			continue
		}
		if _, val, eq := strings.Cut(v, "="); eq {
			v = val
		}
		if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") {
			a.candidate(arg{val: v}, inUnknown, false)
		}
	}
}

// candidate records the effect of one argument that may name a path.
// recursive is true when a directory named by it is read with everything
// below it.
func (a *analyzer) candidate(x arg, it intent, recursive bool) {
	pi, ok := it.pathIntent()
	if !ok || a.effectFacts >= maxEffectFacts {
		return
	}
	if it == inWrite && (x.dyn || !x.glob) {
		// A write the spec names is judged like a redirection: where it
		// lands decides its level (a computed path asks a person).
		a.writeTarget(x, a.writeVerb())
		if x.dyn {
			return
		}
	}
	if x.dyn {
		return
	}
	v := x.val
	if rest, ok := strings.CutPrefix(v, "file://"); ok && it != inText {
		v = rest // file:///home/u/x, as aws and others take it
	}
	if v == "" || v == "-" || len(v) > 1024 || strings.ContainsAny(v, "\n\x00") || strings.Contains(v, "://") {
		return
	}
	if x.glob {
		// A pattern: judge what it matches now, and the directory it is
		// rooted in.
		if p, known := a.abs(x.pat); known {
			if ms, ok := a.globMatches(a.expandHome(p), true); ok {
				for i, m := range ms {
					if i == 16 {
						break
					}
					a.effectFact(m, pi)
				}
			}
		}
		v = globRoot(v)
		if v == "" {
			return
		}
	}
	if _, win := windowsPath(v); win {
		return
	}
	if strings.HasPrefix(v, "~") && !strings.HasPrefix(v, "~/") && v != "~" {
		return // ~user: another user's home
	}
	pathLike := strings.ContainsAny(v, "/~") || strings.HasPrefix(v, ".") ||
		it == inWrite || it == inDelete // a spec says it is a file
	p, known := a.abs(v)
	if !known {
		return
	}
	p = a.expandHome(p)
	if !pathLike && !a.exists(p) {
		// A bare word that names no file here (a branch, a package, a
		// target): not a path.
		return
	}
	a.effectFact(p, pi)
	if recursive && pi == action.PathRead {
		a.secretsBelow(p)
	}
}

// effectFact adds a path fact unless the path already has one.
func (a *analyzer) effectFact(p string, pi action.PathIntent) {
	if !path.IsAbs(p) {
		return
	}
	for _, f := range a.out.Paths {
		if f.Path == p && (f.Intent == pi || f.Intent != action.PathRead) {
			return
		}
	}
	a.effectFacts++
	a.out.Paths = append(a.out.Paths, action.PathFact{Path: p, Intent: pi,
		InCwd: a.env.Cwd != "" && action.Within(a.env.Cwd, p)})
}

// expandHome replaces a leading "~" with the home directory, when known.
func (a *analyzer) expandHome(p string) string {
	if a.env.Home == "" || !strings.HasPrefix(p, "~") {
		return p
	}
	if p == "~" {
		return a.env.Home
	}
	if strings.HasPrefix(p, "~/") {
		return path.Join(a.env.Home, p[2:])
	}
	return p
}

// exists reports whether the absolute path p names something.
func (a *analyzer) exists(p string) bool {
	if !path.IsAbs(p) {
		return false
	}
	rel := strings.TrimPrefix(p, "/")
	if rel == "" {
		return true
	}
	_, err := fs.Stat(a.fileSystem(), rel)
	return err == nil
}

// secretsBelow records a read of every secret location (of the built-in
// home and system secrets) that exists below the directory p: reading a
// directory recursively reads them too (`grep -r KEY ~`).
func (a *analyzer) secretsBelow(p string) {
	for _, s := range a.r.secrets {
		var root string
		switch s.kind {
		case 'd', 's':
			if a.env.Home == "" {
				continue
			}
			root = a.env.Home + s.text
		case 'a', 'A':
			root = s.text
		default:
			continue
		}
		if root == p || !action.Within(p, root) || !a.exists(root) {
			continue
		}
		a.effectFact(root, action.PathRead)
		if a.effectFacts >= maxEffectFacts {
			return
		}
	}
}

// globRoot returns the directory a glob pattern is rooted in ("~/.ssh/*"
// → "~/.ssh"), or "" when the pattern's first component is a pattern.
func globRoot(pat string) string {
	i := strings.IndexAny(pat, "*?[")
	if i < 0 {
		return pat
	}
	d := pat[:i]
	j := strings.LastIndexByte(d, '/')
	if j < 0 {
		return ""
	}
	if j == 0 {
		return "/"
	}
	return d[:j]
}

// writeVerb says how the current segment writes, for messages.
func (a *analyzer) writeVerb() string {
	if a.cur >= 0 && a.cur < len(a.out.Segments) && a.out.Segments[a.cur].Name != "" {
		return a.out.Segments[a.cur].Name + " writes"
	}
	return "writes"
}

// signalEffects blocks signalling Overseer's own processes or stopping its
// service: pkill/killall/skill of a name with "overseer" in it, kill of
// the processes a pgrep or pidof of it found earlier in the command, and
// systemctl/service/launchctl stopping, disabling or masking a unit named
// after it. (Reading the daemon's pid from its home is blocked as a read
// of Overseer's home.)
func (a *analyzer) signalEffects(s *segCtx) {
	names := func(args []arg) bool {
		for _, x := range args {
			if !x.dyn && strings.Contains(strings.ToLower(x.val), "overseer") {
				return true
			}
		}
		return false
	}
	hit := false
	switch s.name {
	case "pkill", "killall", "skill", "slay":
		hit = names(s.args)
	case "kill":
		for i := 0; i < s.idx && i < len(a.out.Segments); i++ {
			p := a.out.Segments[i]
			if (p.Name == "pgrep" || p.Name == "pidof") && slices.ContainsFunc(p.Args, func(v string) bool {
				return strings.Contains(strings.ToLower(v), "overseer")
			}) {
				hit = true
			}
		}
	case "systemctl", "service", "launchctl", "rc-service", "sv":
		stop := false
		for _, x := range s.args {
			switch strings.ToLower(x.val) {
			case "stop", "kill", "disable", "mask", "restart", "reload", "unload", "bootout", "remove", "down", "edit", "revert", "set-property":
				stop = true
			}
		}
		hit = stop && names(s.args)
	}
	if hit {
		a.add(guard.Finding{Check: "shell.signal-overseer", Level: action.Block, Hard: true,
			Message: s.name + " signals or stops Overseer's own processes: an agent may not switch its firewall off"})
	}
}
