package shell

import (
	"path"
	"strings"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// just runs the recipes of a justfile as make runs a makefile's: its
// commands are judged by the recipes it runs (the one named, or the
// first, and their dependencies), read from the justfile as the command
// finds it (an earlier segment's change of it makes it unread, as a
// makefile's does). A justfile that imports others, a recipe in another
// language (a shebang recipe of python, set shell of another program) or a
// recipe name computed at run time is put to a person, as a makefile that
// cannot be read is.

// justRecipe is one recipe of a justfile.
type justRecipe struct {
	deps, post []string // run before it, and after it (&& post)
	body       []string
}

// justfile is what justCmd needs of a justfile.
type justfile struct {
	recipes map[string]*justRecipe
	aliases map[string]string
	first   string
	unread  string // why the file cannot be judged, or ""
}

var (
	justHeader = lazyre.New(`^@?([A-Za-z_][A-Za-z0-9_-]*)([^:=]*):([^=].*)?$`)
	justAlias  = lazyre.New(`^alias\s+([A-Za-z_][A-Za-z0-9_-]*)\s*:=\s*([A-Za-z_][A-Za-z0-9_-]*)`)
	justInterp = lazyre.New(`\{\{[^}]*\}\}`)
	justDep    = lazyre.New(`\(?\s*([A-Za-z_][A-Za-z0-9_-]*)`)
)

// parseJustfile reads the recipes of a justfile's text.
func parseJustfile(text string) justfile {
	j := justfile{recipes: map[string]*justRecipe{}, aliases: map[string]string{}}
	var cur *justRecipe
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if line == "" {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if cur != nil {
				cur.body = append(cur.body, strings.TrimSpace(line))
			}
			continue
		}
		cur = nil
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "#"), strings.HasPrefix(t, "["):
			continue
		case strings.HasPrefix(t, "import ") || strings.HasPrefix(t, "import?") || strings.HasPrefix(t, "mod ") || strings.HasPrefix(t, "mod?"):
			j.unread = "it imports other files, which are not read"
			continue
		case strings.HasPrefix(t, "set "):
			if s := strings.TrimSpace(strings.TrimPrefix(t, "set ")); strings.HasPrefix(s, "shell") || strings.HasPrefix(s, "script-interpreter") ||
				strings.HasPrefix(s, "windows-shell") || strings.HasPrefix(s, "windows-powershell") {
				if !justShellSetting(s) {
					j.unread = "it sets the program that runs its recipes (" + clip(t, 60) + ")"
				}
			}
			continue
		}
		if m := justAlias.FindStringSubmatch(t); m != nil {
			j.aliases[m[1]] = m[2]
			continue
		}
		m := justHeader.FindStringSubmatch(t)
		if m == nil {
			continue // an assignment (x := …), export, or something not read
		}
		r := &justRecipe{}
		pre, post, _ := strings.Cut(m[3], "&&")
		for _, d := range justDep.FindAllStringSubmatch(pre, -1) {
			r.deps = append(r.deps, d[1])
		}
		for _, d := range justDep.FindAllStringSubmatch(post, -1) {
			r.post = append(r.post, d[1])
		}
		if _, dup := j.recipes[m[1]]; !dup {
			j.recipes[m[1]] = r
		}
		if j.first == "" {
			j.first = m[1]
		}
		cur = r
	}
	return j
}

// justShellSetting reports whether a set shell line names a POSIX shell.
func justShellSetting(s string) bool {
	_, v, ok := strings.Cut(s, ":=")
	if !ok {
		return false
	}
	v = strings.Trim(strings.TrimSpace(v), "[]")
	first := strings.Trim(strings.TrimSpace(strings.Split(v, ",")[0]), `"'`)
	switch path.Base(first) {
	case "sh", "bash", "zsh", "dash":
		return true
	}
	return false
}

// commands returns the shell text the recipe name runs with its
// dependencies, or why it cannot be judged.
func (j justfile) commands(name string) (string, string) {
	if j.unread != "" {
		return "", j.unread
	}
	var b strings.Builder
	seen := map[string]bool{}
	why := ""
	var visit func(n string, depth int)
	visit = func(n string, depth int) {
		if t, ok := j.aliases[n]; ok {
			n = t
		}
		r := j.recipes[n]
		if r == nil || seen[n] || depth > 32 || why != "" {
			return
		}
		seen[n] = true
		for _, d := range r.deps {
			visit(d, depth+1)
		}
		body := r.body
		if len(body) > 0 && strings.HasPrefix(body[0], "#!") {
			if !shebangShell(body[0]) {
				why = "the recipe " + n + " is a script of another language (" + clip(body[0], 40) + ")"
				return
			}
			body = body[1:]
		}
		for _, l := range body {
			l = strings.TrimLeft(l, "@-")
			b.WriteString(justInterp.ReplaceAllLiteralString(l, `"$JUST_VALUE"`))
			b.WriteByte('\n')
		}
		for _, d := range r.post {
			visit(d, depth+1)
		}
	}
	visit(name, 0)
	return b.String(), why
}

// shebangShell reports whether a #! line runs a POSIX shell.
func shebangShell(l string) bool {
	f := strings.Fields(strings.TrimPrefix(l, "#!"))
	if len(f) == 0 {
		return false
	}
	prog := path.Base(f[0])
	if prog == "env" && len(f) > 1 {
		prog = f[1]
		if prog == "-S" && len(f) > 2 {
			prog = f[2]
		}
	}
	switch prog {
	case "sh", "bash", "zsh", "dash":
		return true
	}
	return false
}

// justNames are the names just looks for, in this order, in the working
// directory and each directory above it.
var justNames = []string{"justfile", "Justfile", "JUSTFILE", ".justfile"}

// justCmd judges just by the recipes it runs.
func (a *analyzer) justCmd(s *segCtx) {
	var file arg
	hasFile := false
	var ops []arg
	for k := 0; k < len(s.args); k++ {
		x := s.args[k]
		v := x.val
		switch {
		case x.dyn && !strings.HasPrefix(v, "-"):
			ops = append(ops, x)
		case v == "-f" || v == "--justfile":
			if k+1 < len(s.args) {
				k++
				file, hasFile = s.args[k], true
			}
		case strings.HasPrefix(v, "--justfile="):
			file, hasFile = arg{val: strings.TrimPrefix(v, "--justfile=")}, true
		case v == "-d" || v == "--working-directory" || v == "--shell" || v == "--shell-arg" || v == "--dotenv-filename" ||
			v == "--dotenv-path" || v == "--color" || v == "--command-color" || v == "--chooser" || v == "--list-heading" ||
			v == "--list-prefix":
			k++
		case v == "--set":
			k += 2
		case v == "-l" || v == "--list" || v == "--summary" || v == "--show" || v == "-s" || v == "--dump" ||
			v == "--evaluate" || v == "--variables" || v == "--help" || v == "-h" || v == "--version" || v == "-V" ||
			v == "--fmt" || v == "--init" || v == "--edit" || v == "-e" || v == "--dry-run" || v == "-n" || v == "--groups" ||
			v == "--completions":
			return // lists, shows or edits: runs no recipe
		case v == "--shell" || v == "--command" || v == "-c":
			return // judged as the list says (a command of just's own)
		case strings.HasPrefix(v, "-"):
		default:
			ops = append(ops, x)
		}
	}
	if hasFile && file.dyn || len(ops) > 0 && ops[0].dyn {
		a.runnerProblem(s.idx, "just", "the justfile or the recipe is computed at run time")
		return
	}
	var abs string
	if hasFile {
		p, ok := a.fileAbs(file.val)
		if !ok {
			a.runnerProblem(s.idx, "just", "the justfile's place is not known")
			return
		}
		abs = p
	} else if a.cwdKnown {
		for d, n := a.cwd, 0; n < 64 && abs == ""; n++ {
			for _, name := range justNames {
				p := path.Join(d, name)
				if _, w := a.written[p]; w || a.fileExists(p) || a.changedBefore(p, s.idx) {
					abs = p
					break
				}
			}
			if d == "/" {
				break
			}
			d = path.Dir(d)
		}
	}
	if abs == "" {
		return // no justfile: just fails
	}
	text, st := a.runnerContent(s.idx, "just", abs)
	if st != fileOK {
		return
	}
	j := parseJustfile(text)
	name := j.first
	if len(ops) > 0 {
		if _, ok := j.recipes[ops[0].val]; ok {
			name = ops[0].val
		} else if t, ok := j.aliases[ops[0].val]; ok {
			name = t
		}
	}
	text, why := j.commands(name)
	if why != "" {
		a.runnerProblem(s.idx, "just", a.display(abs)+": "+why)
		return
	}
	a.runContent(s.idx, text, contentOpts{origin: OriginScript, cwd: path.Dir(abs),
		where: "just runs the recipe " + clip(name, 40) + " of " + a.display(abs)})
}
