package shell

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

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
	inMeta    // only the name or metadata: no effect recorded
	inText    // not a path
	inRevRead // REV:PATH reads PATH from git's objects; a bare revision is text
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
	case "revread":
		return inRevRead, nil
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
	Operands    string                     `yaml:"operands" json:"operands,omitempty"`
	First       string                     `yaml:"first" json:"first,omitempty"`
	Last        string                     `yaml:"last" json:"last,omitempty"`
	Skip        int                        `yaml:"skip" json:"skip,omitempty"`
	Options     map[string]string          `yaml:"options" json:"options,omitempty"`
	When        map[string]string          `yaml:"when" json:"when,omitempty"`
	Recursive   []string                   `yaml:"recursive" json:"recursive,omitempty"`
	Subcommands map[string]*effectSpecYAML `yaml:"subcommands" json:"subcommands,omitempty"`
	Chdir       []string                   `yaml:"chdir" json:"chdir,omitempty"`
	Include     []string                   `yaml:"include" json:"include,omitempty"`
	Copy        bool                       `yaml:"copy" json:"copy,omitempty"`
	Links       []string                   `yaml:"links" json:"links,omitempty"`
	LastWhen    map[string]string          `yaml:"last_when" json:"last_when,omitempty"`
	Modes       bool                       `yaml:"modes" json:"modes,omitempty"`
	Extract     []string                   `yaml:"extract" json:"extract,omitempty"`
	Patch       bool                       `yaml:"patch" json:"patch,omitempty"`
	Prints      []string                   `yaml:"prints" json:"prints,omitempty"`
	PrintsWhen  []string                   `yaml:"prints_when" json:"prints_when,omitempty"`
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
	chdir                 []string          // options whose value is the directory operands are relative to
	include               []string          // options naming file-name patterns a recursive read is narrowed to
	copy                  bool              // copies its operands into the last (or -t): dest/basename
	links                 []string          // flags that make the copies hard links (cp -l)
	lastWhen              map[string]intent // flag → the last operand's intent (rsync --delete)
	modes                 bool              // "-x", "+x" … are a mode operand (chmod)
	extract               []string          // flags that make it unpack an archive into a directory
	patch                 bool              // its operands (or standard input) are patches whose targets it writes
	prints                []string          // credential files whose secrets it prints (gh auth token): read; a relative one if it exists
	printsWhen            []string          // flags without which it prints none (kubectl config view --raw)
}

// effectSpecs returns the compiled program specs of effects.yaml (built
// into the binary compiled, as a table: effects.bin, see tables.go),
// decoded on first use: a process that analyses no command (a hook that
// asks the daemon) does not pay for it at start-up.
var effectSpecs = sync.OnceValue(func() map[string]*effectSpec { return decodeEffects(effectsBin) })

// compileEffects decodes effects.yaml strictly and compiles it.
// effectsDoc is the shape of effects.yaml.
type effectsDoc struct {
	Programs map[string]*effectSpecYAML `yaml:"programs" json:"programs"`
}

func parseEffects(b []byte) (effectsDoc, error) {
	var doc effectsDoc
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return effectsDoc{}, fmt.Errorf("effects.yaml: %w", err)
	}
	return doc, nil
}

func compileEffects(b []byte) (map[string]*effectSpec, error) {
	doc, err := parseEffects(b)
	if err != nil {
		return nil, err
	}
	return compileEffectsDoc(doc)
}

func compileEffectsDoc(doc effectsDoc) (map[string]*effectSpec, error) {
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
	s.chdir, s.include, s.copy, s.links, s.modes, s.extract, s.patch = y.Chdir, y.Include, y.Copy, y.Links, y.Modes, y.Extract, y.Patch
	for f, v := range y.LastWhen {
		i, err := parseIntent(v)
		if err != nil {
			return nil, fmt.Errorf("last_when %s: %w", f, err)
		}
		if s.lastWhen == nil {
			s.lastWhen = map[string]intent{}
		}
		s.lastWhen[f] = i
	}
	for _, f := range y.Prints {
		if f == "" || strings.HasPrefix(f, "-") || strings.Contains(f, "..") {
			return nil, fmt.Errorf("prints %q is not a path", f)
		}
	}
	if len(y.PrintsWhen) > 0 && len(y.Prints) == 0 {
		return nil, fmt.Errorf("prints_when without prints")
	}
	s.prints, s.printsWhen = y.Prints, y.PrintsWhen
	for _, l := range [][]string{s.chdir, s.include, s.links, s.extract, s.printsWhen} {
		for _, f := range l {
			if !strings.HasPrefix(f, "-") && f != "always" {
				return nil, fmt.Errorf("flag %q does not start with -", f)
			}
		}
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

// printingSub is the subcommand of spec that prints a credential named by
// another spelling of w: another case, a resource and its name
// (secret/db), a list of kinds (configmaps,secrets), a kind with its
// group or version (secrets.v1). Only such a subcommand is taken for
// another spelling: it makes the command stricter, never looser.
func printingSub(spec *effectSpec, w string) *effectSpec {
	if len(w) > 256 {
		return nil
	}
	for _, part := range strings.Split(strings.ToLower(w), ",") {
		part, _, _ = strings.Cut(part, "/")
		for _, c := range []string{part, strings.SplitN(part, ".", 2)[0]} {
			if sub := spec.subs[c]; sub != nil && len(sub.prints) > 0 {
				return sub
			}
		}
	}
	return nil
}

// deeperSub follows a subcommand's own subcommands (kubectl config view,
// aws sts get-session-token): the first operand that names one, past
// options and the values they may take, a few levels at most. Where none
// is named, the subcommand's spec stays.
func deeperSub(spec *effectSpec, args []arg) (*effectSpec, []arg) {
	for depth := 0; spec != nil && spec.subs != nil && depth < 3; depth++ {
		found := false
		for j := 0; j < len(args) && j < 16 && !found; j++ {
			x := args[j]
			if x.dyn {
				break
			}
			if strings.HasPrefix(x.val, "-") {
				continue
			}
			sub := spec.subs[x.val]
			if sub == nil {
				sub = printingSub(spec, x.val)
			}
			if sub != nil {
				spec, args, found = sub, args[j+1:], true
				break
			}
			// A word after an option without "=" may be its value
			// (kubectl config --context prod view); any other ends the
			// search.
			if p := args[max(j-1, 0)].val; j == 0 || !strings.HasPrefix(p, "-") || strings.Contains(p, "=") {
				break
			}
		}
		if !found {
			break
		}
	}
	return spec, args
}

// maxEffectFacts bounds the path facts the effect scan adds to one command.
const maxEffectFacts = 64

// effects records the path effects of the segment s judged just before.
func (a *analyzer) effects(s *segCtx) {
	if s.idx < 0 || s.idx >= len(a.out.Segments) || a.effectFacts >= maxEffectFacts {
		return
	}
	seg := &a.out.Segments[s.idx]
	spec := effectSpecs()[s.name]
	args := s.args
	readOnly := seg.Level <= action.Auto
	// A directory option (tar -C, git -C, make -C) moves where the
	// operands are resolved; it is restored when the segment is done.
	cwd, known := a.cwd, a.cwdKnown
	defer func() { a.cwd, a.cwdKnown = cwd, known }()
	chdir := func(x arg) {
		if x.dyn {
			a.cwdKnown = false
			return
		}
		if p, ok := a.abs(x.val); ok {
			a.cwd, a.cwdKnown = a.expandHome(p), true
		} else {
			a.cwdKnown = false
		}
	}
	var gitTemplate bool
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
				n, val, eq := strings.Cut(v, "=")
				switch {
				case slices.Contains(spec.chdir, n) && eq:
					chdir(arg{val: val})
				case slices.Contains(spec.chdir, n) && j+1 < len(args):
					j++
					chdir(args[j])
				case eq:
					a.candidate(arg{val: val}, inUnknown, false)
				case gopts.has(n) && j+1 < len(args):
					j++
					if s.name == "git" && n == "-c" && strings.HasPrefix(strings.ToLower(args[j].val), "init.templatedir=") {
						gitTemplate = true
					}
					a.candidate(args[j], inMeta, false)
				}
				continue
			}
			if sub := spec.subs[v]; sub != nil {
				if _, env := a.vars["GIT_TEMPLATE_DIR"]; s.name == "git" && v == "init" && (gitTemplate || env) {
					a.gitHooksWrite(args[j+1:])
				}
				if s.name == "git" && (v == "stash" || v == "clean") {
					a.gitUntrackedEffects(v, args[j+1:])
				}
				if s.name == "git" && v == "clean" && a.cwdKnown && (a.cwd == "/" || a.cwd == a.env.Home) && len(operandsOf(args[j+1:])) == 0 {
					// git -C ~ clean: what it removes is the home's.
					a.effectFact(a.cwd, action.PathDelete)
				}
				spec, args = sub, args[j+1:]
			} else if !spec.hasOperands {
				spec = nil
			}
			break
		}
		spec, args = deeperSub(spec, args)
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
	var includes []string
	var targetDir *arg
	recursive := spec != nil && spec.always
	links, noTarget, outDir := false, false, (*arg)(nil)
	extract := spec != nil && slices.Contains(spec.extract, "always")
	last := inUnknown
	hasLastWhen := false
	dashdash := false
	// dynOps: a computed word that is not the last (a source of cp, or an
	// option) was left out of ops; dynLast: the last word is computed.
	dynOps, dynLast := false, false
	prints := spec != nil && len(spec.printsWhen) == 0
	for j := 0; j < len(args); j++ {
		x := args[j]
		if x.dyn {
			if pv, ok := procSelfText(x.val); ok {
				x = arg{val: pv} // /proc/$$/root/home/u/.ssh/id_rsa: the rest is static
			}
		}
		v := x.val
		if x.dyn || dashdash || len(v) < 2 || v[0] != '-' || spec != nil && spec.modes && isMode(v) {
			if !x.dyn || dashdash {
				ops = append(ops, x)
			} else if j < len(args)-1 {
				dynOps = true
			} else {
				dynLast = true
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
			for f, w := range spec.lastWhen {
				if hasAny([]string{f}, v) {
					last, hasLastWhen = w, true
				}
			}
			if hasAny(spec.recursive, v) {
				recursive = true
			}
			if hasAny(spec.links, v) {
				links = true
			}
			if hasAny(spec.extract, v) {
				extract = true
			}
			if spec.copy && hasAny([]string{"-T", "--no-target-directory"}, v) {
				noTarget = true
			}
			if hasAny(spec.printsWhen, v) || joinedShort(spec.printsWhen, v) {
				prints = true
			}
		}
		// Options whose value matters beyond its own effect.
		value := func() (arg, bool) {
			switch {
			case eq:
				return arg{val: val}, true
			case j+1 < len(args):
				return args[j+1], true
			}
			return arg{}, false
		}
		if spec != nil && slices.Contains(spec.chdir, name) {
			if x, ok := value(); ok {
				chdir(x)
				if !eq {
					j++
				}
			}
			continue
		}
		if spec != nil && slices.Contains(spec.include, name) {
			if x, ok := value(); ok {
				if !x.dyn {
					includes = append(includes, x.val)
				}
				if !eq {
					j++
				}
			}
			continue
		}
		if spec != nil && spec.copy && (name == "-t" || name == "--target-directory") {
			if x, ok := value(); ok {
				targetDir = &x
				if !eq {
					j++
				}
			}
			continue
		}
		if (s.name == "curl" && name == "--output-dir") || (s.name == "wget" && (name == "-P" || name == "--directory-prefix")) {
			if x, ok := value(); ok {
				outDir = &x
				if !eq {
					j++
				}
			}
			continue
		}
		if s.name == "wget" && short && strings.HasPrefix(v, "-P") && len(v) > 2 {
			outDir = &arg{val: v[2:]}
			continue
		}
		if s.name == "git" && (name == "--template") {
			a.gitHooksWrite(args)
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
	if base == inRead || base == inUnknown {
		a.listedReads(s)
	}
	a.signalEffects(s)
	a.configSecrets(s)
	if prints {
		// It prints credentials kept in these files (or a token minted
		// with them): a read of them, which reaches a person and which
		// the egress guard remembers as the session's secret read.
		for _, f := range spec.prints {
			if !strings.HasPrefix(f, "/") && !strings.HasPrefix(f, "~/") {
				// The project's own file (docker compose config prints
				// what .env sets): read only when it is there.
				if p, ok := a.abs(f); !ok || !a.exists(a.expandHome(p)) {
					continue
				}
			}
			a.candidate(arg{val: f}, inRead, false)
		}
	}
	a.pathText(s)
	if spec != nil && spec.patch {
		a.patchEffects(s, ops, cwd, known)
	}
	if s.name == "curl" || s.name == "wget" {
		a.downloadNames(s, outDir)
	}
	if extract {
		// Unpacking an archive writes files not known before it runs: judge
		// the directory they land in (tar -C DIR, unzip -d DIR, the cwd).
		a.effectFact(a.cwdPath(), action.PathUnknown)
		if s.name != "unzip" || !listsOnly(s.args) {
			a.markUnseen(a.cwdPath()) // unseen.go
		}
	}
	if spec != nil && spec.copy {
		a.copyEffects(ops, base, targetDir, noTarget, recursive, links, dynOps || targetDir != nil && dynLast)
		if hasLastWhen && len(ops) > 1 {
			a.candidate(ops[len(ops)-1], last, false)
		}
		return
	}
	for k, x := range ops {
		it := base
		switch {
		case spec != nil && hasLastWhen && k == len(ops)-1 && len(ops) > 1:
			it = last
		case spec != nil && spec.hasLast && k == len(ops)-1 && len(ops) > 1:
			it = spec.last
		case spec != nil && spec.hasFirst && k == 0:
			it = spec.first
		}
		a.candidate(x, it, recursive && (it == inRead))
		if recursive && it == inRead && len(includes) > 0 && !x.dyn {
			// grep -r --include='.env' DIR reads DIR's .env files.
			if p, ok := a.abs(x.val); ok {
				for _, inc := range includes {
					a.effectFact(path.Join(a.expandHome(p), path.Base(inc)), action.PathRead)
				}
			}
		}
	}
	if len(ops) == 0 && recursive && len(includes) > 0 && a.cwdKnown {
		for _, inc := range includes {
			a.effectFact(path.Join(a.cwd, path.Base(inc)), action.PathRead)
		}
	}
}

// cwdPath is the working directory at this point, or "" when unknown.
func (a *analyzer) cwdPath() string {
	if !a.cwdKnown {
		return ""
	}
	return a.cwd
}

// isMode reports whether v is a symbolic mode that looks like an option
// ("-x", "-rwx", "+x" is not an option anyway).
func isMode(v string) bool {
	if len(v) < 2 || v[0] != '-' {
		return false
	}
	for i := 1; i < len(v); i++ {
		if !strings.ContainsRune("rwxXst", rune(v[i])) {
			return false
		}
	}
	return true
}

// gitHooksWrite records that git init with a template writes the hooks of
// the repository it makes (the template's hooks/ is copied into .git/hooks).
func (a *analyzer) gitHooksWrite(args []arg) {
	dir := a.cwdPath()
	for _, x := range args {
		if !x.dyn && !strings.HasPrefix(x.val, "-") {
			if p, ok := a.abs(x.val); ok {
				dir = a.expandHome(p)
			}
			break
		}
	}
	if dir == "" {
		return
	}
	a.effectFact(path.Join(dir, ".git", "hooks"), action.PathWrite)
}

// listedReads records what a reader reads when its operands are computed
// by a program that lists paths: `find ~ -name token | xargs cat`,
// `cat $(ls ~/.ssh/id_rsa)`, “ cd ~/.ssh; cat `ls` “. The listed roots
// are read (everything below them for find).
func (a *analyzer) listedReads(s *segCtx) {
	dynamic := s.c.extraDyn
	var from, to int
	for _, x := range s.args {
		if x.dyn {
			dynamic = true
			if x.sub[1] > x.sub[0] {
				from, to = x.sub[0], x.sub[1]
			}
		}
	}
	if !dynamic {
		return
	}
	if to == 0 {
		// Arguments appended at run time (xargs): the listers before it.
		from, to = 0, s.idx
	}
	for i := max(from, 0); i < to && i < len(a.out.Segments); i++ {
		p := a.out.Segments[i]
		recursive := p.Name == "find" || p.Name == "fd" || p.Name == "fdfind" || p.Name == "rg" && slices.Contains(p.Args, "--files")
		if !recursive && p.Name != "ls" && p.Name != "echo" && p.Name != "printf" && p.Name != "realpath" && p.Name != "readlink" {
			continue
		}
		roots := 0
		for _, v := range p.Args {
			if strings.HasPrefix(v, "-") {
				if p.Name == "find" {
					break // the expression starts
				}
				continue
			}
			roots++
			a.candidate(arg{val: v, glob: hasGlobMeta(v), pat: v}, inRead, recursive)
		}
		if roots == 0 && (p.Name == "ls" || recursive) {
			if c := a.cwdPath(); c != "" {
				a.candidate(arg{val: c}, inRead, true)
			}
		}
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

// joinedShort reports whether v is one of the one-letter flags with its
// value joined to it (kubectl get secret db -oyaml).
func joinedShort(flags []string, v string) bool {
	for _, f := range flags {
		if len(f) == 2 && f[0] == '-' && f[1] != '-' && len(v) > 2 && strings.HasPrefix(v, f) {
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
func (a *analyzer) wrapperEffects(name string, opts []arg) {
	for k, x := range opts {
		v := x.val
		if x.dyn || v == "" {
			continue
		}
		// An environment file the wrapped program gets its variables from
		// (uv run --env-file .env, dotenv -e .env): read, as source .env is.
		if k+1 < len(opts) && !opts[k+1].dyn && (v == "--env-file" || name == "dotenv" && (v == "-e" || v == "-f")) {
			a.candidate(opts[k+1], inRead, false)
			continue
		}
		if f, ok := strings.CutPrefix(v, "--env-file="); ok && f != "" {
			a.candidate(arg{val: f}, inRead, false)
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
	if v := x.val; !x.dyn && len(v) > 7 && strings.EqualFold(v[:7], "file://") && it != inMeta {
		// file:///home/u/x, FILE://localhost/home/u/x, percent-encoded, with
		// curl's {a,b} alternatives: each file it names is read.
		a.fileURL(v[7:])
		return
	}
	if it == inRevRead {
		_, p, ok := strings.Cut(x.val, ":")
		if !ok || x.dyn || p == "" {
			return
		}
		x, it = arg{val: strings.TrimPrefix(p, "./")}, inRead
	}
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

// procSelfText reads the source text of a word /proc/$$/root/REST or
// /proc/$BASHPID/cwd/REST whose only computed part is the process id (the
// shell's own): the path is /proc/self/root/REST, which abs reads as /REST.
func procSelfText(text string) (string, bool) {
	t := strings.Trim(text, `"`)
	rest, ok := strings.CutPrefix(t, "/proc/")
	if !ok {
		return "", false
	}
	pid, rest, _ := strings.Cut(rest, "/")
	switch pid {
	case "$$", "${$}", "$BASHPID", "${BASHPID}", "$PPID", "${PPID}":
	default:
		return "", false
	}
	link, rest, _ := strings.Cut(rest, "/")
	if link != "root" && link != "cwd" || strings.ContainsAny(rest, "$`\\\"'*?[{~") {
		return "", false
	}
	return "/proc/self/" + link + "/" + rest, true
}

// maxSegmentReads is how many read files are remembered per segment (for
// what a pipe may carry into a sender).
const maxSegmentReads = 32

// effectFact adds a path fact unless the path already has one.
func (a *analyzer) effectFact(p string, pi action.PathIntent) {
	if !path.IsAbs(p) {
		return
	}
	if (pi == action.PathRead || pi == action.PathUnknown) && a.cur >= 0 && a.cur < len(a.out.Segments) {
		if s := &a.out.Segments[a.cur]; len(s.reads) < maxSegmentReads && !slices.Contains(s.reads, p) {
			s.reads = append(s.reads, p)
		}
	}
	if a.cur >= 0 && a.cur < len(a.out.Segments) {
		s := &a.out.Segments[a.cur]
		l := &s.changes
		if pi == action.PathRead {
			l = &s.looks
		}
		if len(*l) < maxSegmentReads && !slices.Contains(*l, p) {
			*l = append(*l, p)
		}
	}
	for _, f := range a.out.Paths {
		// The same effect, or a read of a path already written or deleted
		// (the stronger effect covers it).
		if f.Path == p && (f.Intent == pi || pi == action.PathRead && f.Intent != action.PathUnknown) {
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

// secretsBelow records a read of every secret location, and of Overseer's
// home ($OVERSEER_HOME among Env.Vars), (of the built-in
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
	if ovh := a.env.Vars["OVERSEER_HOME"]; ovh != "" && ovh != p && action.Within(p, ovh) {
		a.effectFact(ovh, action.PathRead)
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

// patchEffects records the files the patches of git apply, git am or patch
// write: the patch text comes from its operands (read through the file
// system, or written earlier in the command) or from standard input.
func (a *analyzer) patchEffects(s *segCtx, ops []arg, cwd0 string, known0 bool) {
	var texts []string
	read := func(x arg) {
		if x.dyn {
			return
		}
		// The patch is read where the command runs; git apply
		// --directory=DIR moves only the files it writes (a patch read
		// from DIR missed `git apply --unsafe-paths --directory=$HOME
		// b.patch`, which wrote ~/.bashrc at notify).
		cwd, known := a.cwd, a.cwdKnown
		if s.name != "patch" {
			a.cwd, a.cwdKnown = cwd0, known0
		}
		p, ok := a.abs(x.val)
		a.cwd, a.cwdKnown = cwd, known
		if !ok {
			return
		}
		p = a.expandHome(p)
		if w, ok := a.written[p]; ok {
			if text, known := a.writtenContent(w); known {
				texts = append(texts, text)
			}
			return
		}
		if b, ok := a.readRegular(strings.TrimPrefix(p, "/"), 1<<20); ok {
			texts = append(texts, string(b))
		}
	}
	for _, x := range ops {
		read(x)
	}
	if x, ok := optValue(s.args, "-i", "--input"); ok {
		read(x)
	}
	switch in := a.stdinOf(s.c.redirs); in.kind {
	case 'd':
		if !in.dyn {
			texts = append(texts, in.text)
		}
	case 'f':
		read(in.file)
	}
	if s.c.in != nil {
		texts = append(texts, s.c.in.text)
	}
	strip := 1 // git apply strips a/ and b/
	if s.name == "patch" {
		strip = -1 // patch without -p keeps the base name only; judge both
		for _, x := range s.args {
			if n, ok := strings.CutPrefix(x.val, "-p"); ok && isDigits(n) {
				strip, _ = strconv.Atoi(n)
			}
		}
	}
	for _, t := range texts {
		for _, target := range patchTargets(t) {
			for _, p := range stripComponents(target, strip) {
				a.candidate(arg{val: p}, inWrite, false)
			}
		}
	}
}

// patchTargets returns the file names a unified or git diff writes ("+++
// b/x", "rename to x", "diff --git a/x b/y"), and those of an apply_patch
// patch.
func patchTargets(text string) []string {
	var out []string
	add := func(p string) {
		p = strings.TrimSpace(p)
		if i := strings.IndexByte(p, '\t'); i >= 0 {
			p = p[:i] // "+++ b/x\t2024-01-01 …"
		}
		if strings.HasPrefix(p, "\"") {
			// git's C-style quoting: +++ "b/.cl\141ude/settings.json"
			// is .claude/settings.json to git apply.
			if u, err := strconv.Unquote(p); err == nil {
				p = u
			}
		}
		if p == "" || p == "/dev/null" || slices.Contains(out, p) || len(out) >= 64 {
			return
		}
		out = append(out, p)
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case strings.HasPrefix(line, "+++ "):
			add(line[4:])
		case strings.HasPrefix(line, "rename to "):
			add(quotedB(line[len("rename to "):]))
		case strings.HasPrefix(line, "copy to "):
			add(quotedB(line[len("copy to "):]))
		case strings.HasPrefix(line, "diff --git "):
			if i := strings.LastIndex(line, " b/"); i >= 0 {
				add(line[i+1:])
			}
		}
	}
	for _, t := range action.ParsePatchTargets(text) {
		add(t.Path)
	}
	return out
}

// quotedB puts b/ before a rename's or copy's new name, inside its quotes
// when git quoted it.
func quotedB(p string) string {
	if strings.HasPrefix(p, "\"") {
		return "\"b/" + p[1:]
	}
	return "b/" + p
}

// stripComponents removes n leading components of a patch's file name, as
// patch -pN does; n < 0 gives both the name as written and without its
// first component.
func stripComponents(p string, n int) []string {
	if n < 0 {
		return append([]string{p}, stripComponents(p, 1)...)
	}
	q := p
	for i := 0; i < n; i++ {
		j := strings.IndexByte(q, '/')
		if j < 0 {
			return []string{p}
		}
		q = q[j+1:]
	}
	return []string{q}
}

// downloadNames records the file curl -O / --remote-name and wget write by
// default: the last part of each URL, in the output directory (--output-dir,
// -P) or the working directory.
func (a *analyzer) downloadNames(s *segCtx, outDir *arg) {
	remote := s.name == "wget"
	for _, x := range s.args {
		if x.dyn {
			continue
		}
		switch x.val {
		case "-O", "--remote-name", "--remote-name-all":
			if s.name == "curl" {
				remote = true
			}
		}
		if s.name == "curl" && strings.HasPrefix(x.val, "-") && !strings.HasPrefix(x.val, "--") && isLetters(x.val[1:]) && strings.ContainsRune(x.val, 'O') {
			remote = true
		}
		if s.name == "wget" && (x.val == "-O" || strings.HasPrefix(x.val, "--output-document")) {
			remote = false // the name is given (judged as an option value)
		}
	}
	if !remote {
		return
	}
	dir := a.cwdPath()
	if outDir != nil {
		if outDir.dyn {
			return
		}
		p, ok := a.abs(outDir.val)
		if !ok {
			return
		}
		dir = a.expandHome(p)
	}
	if dir == "" {
		return
	}
	for _, x := range s.args {
		if x.dyn || !strings.Contains(x.val, "://") {
			continue
		}
		u := x.val
		if i := strings.IndexAny(u, "?#"); i >= 0 {
			u = u[:i]
		}
		_, rest, _ := strings.Cut(u, "://")
		i := strings.IndexByte(rest, '/')
		name := "index.html"
		if i >= 0 && path.Base(rest[i:]) != "/" && path.Base(rest[i:]) != "." {
			name = path.Base(rest[i:])
		}
		a.candidate(arg{val: path.Join(dir, name)}, inWrite, false)
		a.markDownloaded(path.Join(dir, name)) // running it is running downloaded code
	}
}

// maxCopyWalk bounds the entries a recursive copy's source is walked for.
const maxCopyWalk = 256

// copyEffects records where cp, mv, install, ln, rsync and scp put their
// sources: into the destination directory under each source's name (the
// last operand when it is a directory, or -t DIR), or the destination
// itself (-T, one source onto a file). A recursive copy writes every file
// below the source (walked on disk, and those written earlier in the
// command) and an unknown set of files into the target directory; hard
// links (cp -l) make the sources writable through the copies. A computed
// source (dynSource: a computed word before the destination) lands in the
// destination directory under a name not known.
func (a *analyzer) copyEffects(ops []arg, base intent, targetDir *arg, noTarget, recursive, links, dynSource bool) {
	var dest arg
	var sources []arg
	switch {
	case targetDir != nil:
		dest, sources = *targetDir, ops
	case len(ops) >= 2:
		dest, sources = ops[len(ops)-1], ops[:len(ops)-1]
	case len(ops) == 1 && dynSource:
		dest = ops[0]
	default:
		return
	}
	for _, src := range sources {
		it := base
		if links {
			it = inUnknown
		}
		a.candidate(src, it, recursive && it == inRead)
	}
	if dest.dyn || remoteArg(dest.val) {
		return
	}
	dp, ok := a.abs(dest.val)
	if !ok {
		return
	}
	dp = a.expandHome(dp)
	intoDir := !noTarget && (targetDir != nil || len(sources) > 1 || strings.HasSuffix(dest.val, "/") ||
		dest.val == "~" || dest.val == "." || dest.val == ".." || a.isDir(dp))
	if dynSource && intoDir {
		a.effectFact(dp, action.PathUnknown)
	}
	if dynSource && !intoDir && !recursive {
		a.maybeOverseerCopy(dp)
	}
	for _, src := range sources {
		if remoteArg(src.val) {
			continue
		}
		if src.dyn {
			// cp "$f" dir/: a file whose name is not known lands in dir.
			if intoDir {
				a.effectFact(dp, action.PathUnknown)
			} else if !recursive {
				// cp "$(command -v overseer)" ./ov: the copy may be
				// anything, Overseer's CLI too (selfapprove.go).
				a.maybeOverseerCopy(dp)
			}
			continue
		}
		sp, ok := a.abs(src.val)
		if !ok {
			continue
		}
		sp = a.expandHome(sp)
		if src.glob && intoDir {
			// cp d/* dir/: each file the pattern matches lands in dir
			// under its name; what it may match at run time and not now
			// (nothing now, files the command makes) is not known.
			a.globIntoDir(src, sp, dp)
			continue
		}
		target := dp
		// rsync src/ dest, cp -r src/. dest: the contents.
		contents := strings.HasSuffix(src.val, "/") || recursive && path.Base(src.val) == "."
		if intoDir && !contents {
			target = path.Join(dp, path.Base(sp))
		}
		a.effectFact(target, action.PathWrite)
		if w, ok := a.written[sp]; ok {
			// cp x.sh y.sh: the copy holds what was written to x.sh.
			t, known := a.writtenContent(w)
			a.written[target] = writtenFile{text: t, known: known, path: target, at: a.cur}
		} else if !recursive && !contents {
			// cp other.mk Makefile: the copy holds other.mk as it is now,
			// read when something runs it (writtenContent).
			if a.written == nil {
				a.written = map[string]writtenFile{}
			}
			a.written[target] = writtenFile{from: sp, fromIdx: a.cur, path: target, at: a.cur}
		}
		if !recursive && !contents {
			// cp /usr/local/bin/overseer ./ov: the copy is Overseer too
			// when the command runs it (selfapprove.go).
			n, ok := a.ovCopies[sp]
			if !ok {
				n = a.overseerFile(sp)
			}
			if n != "" {
				if a.ovCopies == nil {
					a.ovCopies = map[string]string{}
				}
				a.ovCopies[target] = n
			}
		}
		if recursive || contents {
			a.effectFact(target, action.PathUnknown)
			a.treeWrites(sp, target)
		}
	}
}

// globIntoDir records what a copy of the glob source src (resolved to sp)
// writes into the directory dp: dp/name for every file the pattern matches
// now, and, since what it will match when the command runs is not known
// (a file the command makes, or any at all when it matches nothing now),
// files not known landing in dp.
func (a *analyzer) globIntoDir(src arg, sp, dp string) {
	pat := sp
	if src.pat != "" {
		if p, ok := a.abs(src.pat); ok {
			pat = a.expandHome(p)
		}
	}
	ms, ok := a.globMatches(pat, true)
	for _, m := range ms {
		a.effectFact(path.Join(dp, path.Base(m)), action.PathWrite)
	}
	for w := range a.written {
		if ok, _ := path.Match(pat, w); ok {
			a.effectFact(path.Join(dp, path.Base(w)), action.PathWrite)
		}
	}
	if !ok || len(ms) == 0 || len(a.written) > 0 {
		a.effectFact(dp, action.PathUnknown)
	}
}

// treeWrites records a write at target/rel for every file below src, as far
// as it is known: on disk (bounded) and written earlier in the command.
func (a *analyzer) treeWrites(src, target string) {
	n := 0
	_ = fs.WalkDir(a.fileSystem(), strings.TrimPrefix(src, "/"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || n >= maxCopyWalk || a.effectFacts >= maxEffectFacts {
			return fs.SkipAll
		}
		n++
		rel := strings.TrimPrefix(strings.TrimPrefix("/"+p, src), "/")
		if rel != "" && !d.IsDir() {
			a.effectFact(path.Join(target, rel), action.PathWrite)
		}
		return nil
	})
	for w := range a.written {
		if action.Within(src, w) && w != src {
			a.effectFact(path.Join(target, strings.TrimPrefix(w, src+"/")), action.PathWrite)
		}
	}
}

// isDir reports whether the absolute path p is a directory on disk.
func (a *analyzer) isDir(p string) bool {
	st, err := fs.Stat(a.fileSystem(), strings.TrimPrefix(p, "/"))
	return err == nil && st.IsDir()
}

// remoteArg reports whether v names a remote path (host:path).
func remoteArg(v string) bool {
	i := strings.IndexByte(v, ':')
	_, win := windowsPath(v)
	return i > 0 && !win && !strings.Contains(v[:i], "/")
}

// globWrites records a write of every file a redirection's pattern matches
// now (echo x >> ~/.bash?c appends to ~/.bashrc).
func (a *analyzer) globWrites(pat string) {
	p, known := a.abs(pat)
	if !known {
		return
	}
	ms, ok := a.globMatches(a.expandHome(p), true)
	if !ok {
		return
	}
	for i, m := range ms {
		if i == 16 {
			break
		}
		a.effectFact(m, action.PathWrite)
	}
}

// maxScriptBytes bounds the script files an interpreter runs that are read
// for their effects.
const maxScriptBytes = 4 << 20

// interpScript judges a script file an interpreter (python, node, perl,
// ruby, awk -f) runs by what its code names, as for inline code: a
// deletion of the home or the root blocks, and the paths its string
// literals name are effects (presumed read and written). A file written
// earlier in the command is judged by that text; one on disk by its
// content, but then only its absolute and home-relative literals count
// (a project's own script naming ".env" is no evidence), and only findings
// that block are kept — the rest of the code is the project's business.
func (a *analyzer) interpScript(s *segCtx, p string) {
	p = a.expandHome(p)
	lang := moduleLang(s.name)
	if _, w := a.written[p]; lang == "node" && path.IsAbs(p) && !w && !a.isRegular(p) {
		// node app runs app.js (or app/index.js, its package's main).
		a.nodeModule(p, func(c ...string) {
			for _, f := range c {
				if a.isRegular(f) {
					p = f
					return
				}
			}
		})
	}
	// (A script this command wrote with content not known is reported
	// by scriptFile.)
	text, fromCommand, ok := a.scriptRunText(s, p, "")
	if !ok {
		return
	}
	a.scriptCode(s, text, fromCommand)
	// The local modules it imports run with it (modules.go), judged as
	// files on disk are; a module this command wrote is judged by that
	// text.
	if lang == "" || !path.IsAbs(p) {
		return
	}
	seen := map[string]bool{p: true}
	queue := []struct{ file, text string }{{p, text}}
	n, over := 0, false
	for len(queue) > 0 && !over {
		cur := queue[0]
		queue = queue[1:]
		for _, m := range a.localModulesAt(lang, cur.text, path.Dir(cur.file), a.cwdPath(), s.idx) {
			if seen[m] {
				continue
			}
			if n >= maxModules {
				// More modules than are followed: the rest would run
				// unjudged.
				a.add(guard.Finding{Check: "shell.script-unread", Level: action.Confirm,
					Message: fmt.Sprintf("%s runs %s, which imports more than the %d local modules the guard reads", s.name, p, maxModules)})
				over = true
				break
			}
			seen[m] = true
			n++
			// A module this command downloaded, unpacked, cloned or
			// copied in runs what is not known when judged.
			if a.downloaded[m] {
				a.add(guard.Finding{Check: "shell.download-exec", Level: action.Approve, Hard: true,
					Message: s.name + " runs " + m + " (imported), which this command downloaded"})
				continue
			}
			if _, w := a.written[m]; !w {
				if by := a.unseenBefore(m, s.idx); by != "" {
					a.add(guard.Finding{Check: "shell.runs-unseen", Level: action.Confirm,
						Message: s.name + " runs " + m + " (imported), which " + by + " earlier in this command may have written: what it holds is not known when judged"})
					continue
				}
			}
			mt, fromCmd, ok := a.scriptRunText(s, m, " (imported)")
			if !ok {
				continue
			}
			a.scriptCode(s, mt, fromCmd)
			queue = append(queue, struct{ file, text string }{m, mt})
		}
	}
}

// scriptRunText is the code of the script or module p (what names how it is
// run, for the findings: "" or " (imported)") to judge, and whether there
// is any: a file larger than the guard reads is confirm (padded past the
// bound, it would run unjudged), and so is an imported module this command
// wrote with content not known before it runs.
func (a *analyzer) scriptRunText(s *segCtx, p, what string) (text string, fromCommand, ok bool) {
	text, fromCommand, unseen, ok := a.scriptText(p)
	if unseen && what != "" {
		a.add(guard.Finding{Check: "shell.runs-unseen", Level: action.Confirm,
			Message: s.name + " runs " + p + what + ", which this command wrote with content not known before it runs"})
	}
	if !ok && a.tooLarge(p) {
		a.add(guard.Finding{Check: "shell.script-unread", Level: action.Confirm,
			Message: s.name + " runs " + p + what + ", larger than the guard reads"})
	}
	return text, fromCommand, ok && !unseen
}

// tooLarge reports whether p is a regular file on disk larger than the
// guard reads of a script.
func (a *analyzer) tooLarge(p string) bool {
	f, st, ok := a.openRegular(strings.TrimPrefix(p, "/"))
	if !ok {
		return false
	}
	f.Close()
	return st.Size() > maxScriptBytes
}

// scriptText is the code of the script file p as it will run: the text
// this command wrote there (fromCommand), else the file on disk. unseen:
// this command wrote it, with content not known before it runs; ok false:
// there is nothing to read.
func (a *analyzer) scriptText(p string) (text string, fromCommand, unseen, ok bool) {
	if w, written := a.written[p]; written {
		t, known := a.writtenContent(w)
		return t, true, !known, true
	}
	b, read := a.readRegular(strings.TrimPrefix(p, "/"), maxScriptBytes)
	return string(b), false, false, read
}

// scriptCode judges the code of a script an interpreter runs (see
// interpScript): text from this command counts whole; text on disk only
// by what blocks and by its absolute and home-relative literals.
func (a *analyzer) scriptCode(s *segCtx, text string, fromCommand bool) {
	if len(text) > maxStaticText {
		// Longer than inline code is read at once: in pieces that start
		// at a line and overlap, so that padding does not hide a call.
		for _, c := range lineChunks(text, maxStaticText, 4<<10) {
			a.scriptCode(s, c, fromCommand)
		}
		return
	}
	nf := len(a.out.Findings)
	a.inlineCode(s.name, text, s.idx)
	if !fromCommand {
		kept := a.out.Findings[:nf]
		for _, f := range a.out.Findings[nf:] {
			if f.Level == action.Block {
				kept = append(kept, f)
			}
		}
		a.out.Findings = kept
	}
	for _, lit := range literalPaths(text) {
		if !fromCommand && !strings.HasPrefix(lit, "/") && !strings.HasPrefix(lit, "~/") {
			continue
		}
		a.candidate(arg{val: lit}, inUnknown, false)
		if strings.HasPrefix(lit, "/.") && a.env.Home != "" {
			a.candidate(arg{val: path.Join(a.env.Home, lit)}, inUnknown, false)
		}
	}
}

// lineChunks splits text into pieces of at most n bytes, each starting
// at the start of a line (or where a line longer than a piece was cut),
// the next one starting about ov bytes before the end of the last, so
// that a call or a literal near a cut is whole in one of them.
func lineChunks(text string, n, ov int) []string {
	var out []string
	for _, b := range lineChunkBounds(text, n, ov) {
		out = append(out, text[b[0]:b[1]])
	}
	return out
}

// lineChunkBounds are the pieces of lineChunks as [start, end) offsets.
func lineChunkBounds(text string, n, ov int) [][2]int {
	var out [][2]int
	for start := 0; start < len(text); {
		end := min(start+n, len(text))
		if end < len(text) {
			if i := strings.LastIndexByte(text[start:end], '\n'); i > ov {
				end = start + i + 1
			}
		}
		out = append(out, [2]int{start, end})
		if end == len(text) {
			break
		}
		next := end - ov
		if i := strings.IndexByte(text[next:end], '\n'); i >= 0 {
			next += i + 1
		}
		if next <= start {
			next = end
		}
		start = next
	}
	return out
}

// appendToDisk is the content of the file abs after text is appended to
// what it holds on disk: unknown when it exists but cannot be read.
func (a *analyzer) appendToDisk(abs, text string) writtenFile {
	if !path.IsAbs(abs) {
		return writtenFile{}
	}
	name := strings.TrimPrefix(abs, "/")
	st, err := fs.Stat(a.fileSystem(), name)
	if errors.Is(err, fs.ErrNotExist) {
		return writtenFile{text: text, known: text != ""}
	}
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxScriptBytes {
		return writtenFile{}
	}
	b, ok := a.readRegular(name, maxScriptBytes)
	if !ok {
		return writtenFile{}
	}
	return writtenFile{text: string(b) + text, known: text != ""}
}

// fileURL records reads of the files a file: URL names (the part after
// "file://"): the host "localhost" or none, percent-decoding, and curl's
// {a,b} alternatives.
func (a *analyzer) fileURL(rest string) {
	if h, p, ok := strings.Cut(rest, "/"); ok && (h == "" || strings.EqualFold(h, "localhost")) {
		rest = "/" + p
	} else {
		return // another host
	}
	for _, alt := range braceAlternatives(rest, 8) {
		if u, err := url.PathUnescape(alt); err == nil {
			alt = u
		}
		a.candidate(arg{val: alt, glob: hasGlobMeta(alt), pat: alt}, inRead, false)
	}
}

// braceAlternatives expands the first {a,b,…} group of s (curl's URL
// globbing), at most n results; s itself when it has none.
func braceAlternatives(s string, n int) []string {
	i := strings.IndexByte(s, '{')
	j := strings.IndexByte(s, '}')
	if i < 0 || j < i {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[i+1:j], ",") {
		if len(out) == n {
			break
		}
		out = append(out, s[:i]+alt+s[j+1:])
	}
	return out
}

// configSecrets asks a person before a package manager prints a credential
// from its configuration (npm config get //registry…/:_authToken prints
// the token kept in ~/.npmrc).
func (a *analyzer) configSecrets(s *segCtx) {
	switch s.name {
	case "npm", "pnpm", "yarn", "bun", "pip", "pip3", "poetry", "gh", "git":
	default:
		return
	}
	vals := vals(s.args)
	i := slices.Index(vals, "config")
	if i < 0 || s.name == "gh" && !slices.Contains(vals, "auth") {
		if s.name == "gh" && slices.Contains(vals, "auth") && slices.Contains(vals, "token") {
			a.add(guard.Finding{Check: "shell.secret-print", Level: action.Approve, Hard: true,
				Message: "gh auth token prints the GitHub token"})
		}
		return
	}
	for _, v := range vals[i+1:] {
		l := strings.ToLower(v)
		if strings.Contains(l, "auth") || strings.Contains(l, "token") || strings.Contains(l, "password") || strings.Contains(l, "secret") {
			a.add(guard.Finding{Check: "shell.secret-print", Level: action.Approve, Hard: true,
				Message: s.name + " config prints a credential (" + clip(v, 60) + ")"})
			if s.name == "npm" || s.name == "pnpm" || s.name == "yarn" || s.name == "bun" {
				// It is kept in ~/.npmrc: the egress guard counts the
				// session as having read it.
				a.candidate(arg{val: "~/.npmrc"}, inRead, false)
			}
			return
		}
	}
}

// pathText records what dirname, basename, pwd and realpath print when it is
// known, so a command built from it is judged as the path it is:
// rm -rf "$(dirname "$PWD")" removes the parent of the working directory.
func (a *analyzer) pathText(s *segCtx) {
	ops := operandsOf(s.args)
	var out string
	switch s.name {
	case "pwd":
		if !a.cwdKnown || len(ops) > 0 {
			return
		}
		out = a.cwd
	case "dirname", "basename", "realpath":
		if len(ops) != 1 || ops[0].dyn || strings.HasPrefix(ops[0].val, "-") {
			return
		}
		v := ops[0].val
		switch s.name {
		case "dirname":
			out = path.Dir(v)
		case "basename":
			out = path.Base(v)
		default:
			p, ok := a.abs(v)
			if !ok {
				return
			}
			out = a.expandHome(p)
		}
	default:
		return
	}
	a.setText(s.idx, out+"\n")
}
