package shell

import (
	"errors"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// go generate runs the //go:generate directives of the packages named
// (the current directory's by default; ./... walks the tree below, as the
// go command does: not testdata, vendor, directories whose names start
// with . or _, nor other modules). Each directive is a command, split into
// words as go generate splits it, with $GOFILE, $GOPACKAGE, $GOLINE,
// $DOLLAR and $HOME put in; it is judged as a recipe line is, in its
// package's directory. The files are read as the command finds them: one
// written earlier in the command by that text, one changed by it or by an
// unpacker or a git command that changes the tree is put to a person, as
// a makefile is. A package named by an import path outside the module of
// the working directory, a tree too large to walk or more directives than
// are judged reach a person too.

// Bounds of the reading of go generate's packages.
const (
	maxGenerateEntries    = 20000    // directory entries walked
	maxGenerateFiles      = 5000     // .go files read
	maxGenerateBytes      = 64 << 20 // bytes of .go files read
	maxGenerateDirectives = 256
)

// OriginGenerate is a //go:generate directive go generate runs.
const OriginGenerate Origin = "go generate"

// genDirective is one //go:generate line.
type genDirective struct {
	file string // absolute
	line int
	text string // after "//go:generate "
}

// goGenerate judges go generate by the directives it runs (args: the
// arguments after "generate").
func (a *analyzer) goGenerate(s *segCtx, args []arg) {
	var runRE, skipRE *regexp.Regexp
	var pkgs []arg
	for j := 0; j < len(args); j++ {
		x := args[j]
		v := x.val
		if x.dyn && !strings.HasPrefix(v, "-") {
			pkgs = append(pkgs, x)
			continue
		}
		name, val, eq := strings.Cut(strings.Replace(v, "--", "-", 1), "=")
		value := func() (arg, bool) { return optionValue(args, &j, x, val, eq) }
		switch {
		case name == "-n":
			return // prints the commands, runs none
		case name == "-run" || name == "-skip":
			y, ok := value()
			if !ok || y.dyn {
				continue // judged whole
			}
			re, err := regexp.Compile(y.val)
			if err != nil {
				return // go generate fails
			}
			if name == "-run" {
				runRE = re
			} else {
				skipRE = re
			}
		case name == "-C":
			a.runnerProblem(s.idx, "go generate", "it changes to another directory first (-C), which is not followed")
			return
		case strings.HasPrefix(v, "-"):
			if !eq && goValueFlags[name] {
				j++
			}
		default:
			pkgs = append(pkgs, x)
		}
	}
	if !a.cwdKnown {
		return // nothing is read, as for make (docs/guards/shell.md)
	}
	if !a.runnerBudget(s.idx, "go generate") {
		return
	}
	if len(pkgs) == 0 {
		pkgs = []arg{{val: "."}}
	}
	g := &genWalk{a: a, idx: s.idx}
	for _, p := range pkgs {
		if p.dyn {
			a.runnerProblem(s.idx, "go generate", "a package is computed at run time: "+clip(p.val, 60))
			return
		}
		v := p.val
		switch {
		case strings.HasSuffix(v, ".go"):
			if abs, ok := a.fileAbs(v); ok {
				g.file(abs)
			}
		case v == "." || v == ".." || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") || path.IsAbs(v):
			dir, rec := v, false
			if d, ok := strings.CutSuffix(v, "/..."); ok {
				dir, rec = d, true
			} else if v == "..." {
				dir, rec = ".", true
			}
			abs, ok := a.fileAbs(dir)
			if !ok {
				g.why = "the place of " + clip(v, 60) + " is not known"
				break
			}
			g.dir(abs, rec, true)
		default:
			// An import path: the module's own packages are directories of
			// its tree; another module's are not read.
			root, mod := a.goModule(a.cwd)
			rest, ok := strings.CutPrefix(v, mod)
			if mod == "" || !ok || rest != "" && rest[0] != '/' {
				g.why = "the package " + clip(v, 60) + " is not in the working tree's module"
				break
			}
			rec := false
			if r, ok := strings.CutSuffix(rest, "/..."); ok {
				rest, rec = r, true
			}
			g.dir(path.Join(root, rest), rec, true)
		}
		if g.why != "" {
			break
		}
	}
	if g.why != "" {
		a.runnerProblem(s.idx, "go generate", g.why)
		return
	}
	var run []genDirective
	for _, d := range g.found {
		full := strings.TrimRight(d.text, " \t\r")
		if runRE != nil && !runRE.MatchString(full) || skipRE != nil && skipRE.MatchString(full) {
			continue
		}
		run = append(run, d)
	}
	if len(run) > maxGenerateDirectives {
		a.runnerProblem(s.idx, "go generate", "it runs "+itoa(len(run))+" directives, more than the "+itoa(maxGenerateDirectives)+" that are judged")
		return
	}
	aliases := map[string][]string{}
	for _, d := range run {
		words, ok := genWords(d.text)
		where := "go generate runs " + a.display(d.file) + ":" + itoa(d.line)
		if !ok {
			a.runnerProblem(s.idx, "go generate", a.display(d.file)+":"+itoa(d.line)+": a directive that cannot be split into words")
			continue
		}
		if len(words) == 0 {
			continue
		}
		if words[0] == "-command" {
			if len(words) > 2 {
				aliases[words[1]] = words[2:]
			}
			continue
		}
		if al, ok := aliases[words[0]]; ok {
			words = append(slices.Clone(al), words[1:]...)
		}
		text := a.genShell(words, d)
		a.runContent(s.idx, text, contentOpts{origin: OriginGenerate, cwd: path.Dir(d.file), where: where,
			bins: a.goToolInstalled})
	}
}

// goValueFlags are the build flags of the go command that take a value.
var goValueFlags = map[string]bool{"-tags": true, "-ldflags": true, "-gcflags": true, "-asmflags": true, "-mod": true,
	"-modfile": true, "-overlay": true, "-pgo": true, "-buildmode": true, "-compiler": true, "-gccgoflags": true,
	"-installsuffix": true, "-pkgdir": true, "-toolexec": true, "-exec": true, "-p": true, "-o": true, "-covermode": true,
	"-coverpkg": true, "-buildvcs": true}

// genWalk collects the directives of the packages go generate runs.
type genWalk struct {
	a       *analyzer
	idx     int
	found   []genDirective
	entries int
	files   int
	bytes   int
	why     string // why the packages cannot be judged, or ""
	seen    map[string]bool
}

// dir reads the .go files of dir, and of the directories below it when
// rec (as ./... matches packages).
func (g *genWalk) dir(dir string, rec, top bool) {
	if g.why != "" {
		return
	}
	if g.seen == nil {
		g.seen = map[string]bool{}
	}
	if g.seen[dir] {
		return
	}
	g.seen[dir] = true
	if by := g.a.unseenBefore(dir, g.idx); by != "" {
		g.why = g.a.display(dir) + " holds files " + by + " earlier in this command may have written: what they hold is not known when judged"
		return
	}
	ents, err := fs.ReadDir(g.a.fileSystem(), fsName(dir))
	if err != nil && !top {
		return
	}
	// Files this command writes there count, whether or not they exist.
	names := map[string]bool{}
	for p := range g.a.written {
		if path.Dir(p) == dir && strings.HasSuffix(p, ".go") {
			names[path.Base(p)] = true
		}
	}
	var subdirs []string
	for _, e := range ents {
		g.entries++
		if g.entries > maxGenerateEntries {
			g.why = "the tree is larger than the guard walks"
			return
		}
		n := e.Name()
		switch {
		case e.IsDir():
			if rec && n[0] != '.' && n[0] != '_' && n != "testdata" && n != "vendor" {
				subdirs = append(subdirs, n)
			}
		case strings.HasSuffix(n, ".go") && n[0] != '.' && n[0] != '_':
			names[n] = true
		case e.Type()&fs.ModeSymlink != 0 && strings.HasSuffix(n, ".go"):
			names[n] = true
		}
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		g.file(path.Join(dir, n))
		if g.why != "" {
			return
		}
	}
	for _, n := range subdirs {
		sub := path.Join(dir, n)
		if g.a.fileExists(path.Join(sub, "go.mod")) {
			continue // another module: ./... stops there
		}
		g.dir(sub, true, false)
	}
}

// file reads the directives of one .go file.
func (g *genWalk) file(p string) {
	if g.why != "" {
		return
	}
	a := g.a
	var text string
	if w, ok := a.written[p]; ok {
		t, known := a.writtenContentAt(w, g.idx)
		if !known {
			g.why = a.display(p) + " " + changedWhy
			return
		}
		text = t
	} else if a.changedBefore(p, g.idx) {
		g.why = a.display(p) + " " + changedWhy
		return
	} else {
		g.files++
		if g.files > maxGenerateFiles {
			g.why = "the packages have more .go files than the guard reads"
			return
		}
		b, err := readRegularIn(a.env.FS, fsName(p), maxRunnerFile*4)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return
			}
			g.why = a.display(p) + " cannot be read as a regular file of at most 4 MB (" + errText(err) + ")"
			return
		}
		g.bytes += len(b)
		if g.bytes > maxGenerateBytes {
			g.why = "the packages' .go files are larger than the guard reads"
			return
		}
		text = string(b)
	}
	if !strings.Contains(text, "//go:generate") {
		return
	}
	for i, l := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(l, "//go:generate"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			g.found = append(g.found, genDirective{file: p, line: i + 1, text: strings.TrimSpace(strings.TrimSuffix(rest, "\r"))})
			if len(g.found) > maxGenerateDirectives*4 {
				g.why = "the packages hold more directives than the guard judges"
				return
			}
		}
	}
}

// genWords splits a directive into words as go generate does: blanks
// separate words, a double-quoted Go string is one word.
func genWords(s string) ([]string, bool) {
	var out []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return out, true
		}
		if s[0] == '"' {
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil, false
			}
			w, err := strconv.Unquote(s[:end+1])
			if err != nil {
				return nil, false
			}
			out = append(out, w)
			s = s[end+1:]
			continue
		}
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			i = len(s)
		}
		out = append(out, s[:i])
		s = s[i:]
	}
}

var genVar = lazyre.New(`\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))`)

// genShell returns a directive's words as shell text: the variables go
// generate sets and $HOME are put in; other environment variables stay
// variables the analysis does not know.
func (a *analyzer) genShell(words []string, d genDirective) string {
	q := make([]string, len(words))
	for i, w := range words {
		known := true
		w = strings.NewReplacer("\x00", "?", "\x01", "?", "\x02", "?").Replace(w)
		w = genVar.ReplaceAllStringFunc(w, func(m string) string {
			sub := genVar.FindStringSubmatch(m)
			name := sub[1] + sub[2]
			switch name {
			case "GOFILE":
				return path.Base(d.file)
			case "GOLINE":
				return itoa(d.line)
			case "DOLLAR":
				return "\x00"
			case "GOPACKAGE", "GOARCH", "GOOS", "GOROOT":
				return "x"
			case "HOME":
				if a.env.Home != "" {
					return a.env.Home
				}
			}
			known = false
			return "\x01" + name + "\x02"
		})
		if known {
			w = strings.ReplaceAll(w, "\x00", "$")
			q[i] = shellQuote(w)
			if q[i] == w && strings.ContainsFunc(w, func(r rune) bool { return r < 0x20 || r == 0x7f || unicode.IsSpace(r) }) {
				q[i] = "'" + w + "'" // a blank or control character the shell would split at
			}
			if i == 0 && strings.Contains(q[i], "=") && q[i][0] != '\'' {
				q[i] = "'" + q[i] + "'" // a program named X=1, not an assignment
			}
			continue
		}
		// Double-quoted so that only the variables expand.
		r := strings.NewReplacer(`"`, `\"`, `\`, `\\`, "`", "\\`", "$", `\$`, "\x00", `\$`, "\x01", "${", "\x02", "}")
		q[i] = `"` + r.Replace(w) + `"`
	}
	return strings.Join(q, " ")
}

// goModule returns the directory of the go.mod above dir and its module
// path, or "" when there is none.
func (a *analyzer) goModule(dir string) (string, string) {
	for d, n := dir, 0; n < 64; n++ {
		b, err := readRegularIn(a.env.FS, fsName(path.Join(d, "go.mod")), 1<<20)
		if err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
					return d, strings.Trim(strings.TrimSpace(strings.Split(rest, "//")[0]), `"`)
				}
			}
			return d, ""
		}
		if d == "/" {
			break
		}
		d = path.Dir(d)
	}
	return "", ""
}

// goToolInstalled reports whether a program a directive names is
// installed where go install puts programs (the person's ~/go/bin): a
// generator the person installed (enumer, oapi-codegen …), the project's
// own tool.
func (a *analyzer) goToolInstalled(name string) bool {
	if a.env.Home == "" || strings.Contains(name, "/") {
		return false
	}
	return a.isRegular(path.Join(a.env.Home, "go", "bin", name))
}
