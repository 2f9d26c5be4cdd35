package shell

import (
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// task (go-task) runs the tasks of a Taskfile as make runs a makefile's
// recipes: its commands are judged by the tasks it runs (those named, or
// "default"), their dependencies, the tasks they call and the dynamic
// variables (sh:) of the file and of those tasks, read from the Taskfile
// as the command finds it (an earlier segment's change of it makes it
// unread, as a makefile's does). Local includes are read with the file; a
// remote or computed include, a file that is not YAML, or a task name
// computed at run time is put to a person, as a makefile that cannot be
// read is. Templates ({{.VAR}}) become a variable the shell analysis
// does not know, except the file's own directories and static variables.

// taskfileNames are the names task looks for, in this order, in the
// working directory and each directory above it.
var taskfileNames = []string{"Taskfile.yml", "taskfile.yml", "Taskfile.yaml", "taskfile.yaml",
	"Taskfile.dist.yml", "taskfile.dist.yml", "Taskfile.dist.yaml", "taskfile.dist.yaml"}

// Bounds of the reading of Taskfiles.
const (
	maxTaskIncludes = 16 // included files read with one Taskfile
	maxTaskVisits   = 256
)

// taskDef is one task of a Taskfile (or an included one).
type taskDef struct {
	def  any               // the task's YAML value
	dir  string            // the directory of the file that holds it
	vars map[string]string // the static variables of that file
	ns   string            // the namespace of the include ("" at the top)
}

// taskfile is what taskCmd needs of a Taskfile and its includes.
type taskfile struct {
	tasks  map[string]*taskDef
	global []string  // commands every run runs (the files' dynamic variables)
	dotenv []taskRun // environment files the tasks read (dir: the file's directory, text: the path)
	unread string    // why the file cannot be judged, or ""
}

var taskTemplate = lazyre.New(`\{\{[^}]*\}\}`)
var taskVarRef = lazyre.New(`^\{\{\s*\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$`)

// taskLoader reads a Taskfile and the local files it includes.
type taskLoader struct {
	read  func(abs string) (string, string) // text, or why it cannot be read
	tf    *taskfile
	files int
}

// parseTaskfile reads the Taskfile at abs (text) and its includes (read
// through read).
func parseTaskfile(abs, text string, read func(abs string) (string, string)) taskfile {
	tf := taskfile{tasks: map[string]*taskDef{}}
	l := &taskLoader{read: read, tf: &tf}
	l.load(abs, text, "", 0)
	return tf
}

func (l *taskLoader) fail(why string) {
	if l.tf.unread == "" {
		l.tf.unread = why
	}
}

func (l *taskLoader) load(abs, text, ns string, depth int) {
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		l.fail(clip(path.Base(abs), 60) + " is not YAML the guard can read (" + clip(err.Error(), 80) + ")")
		return
	}
	dir := path.Dir(abs)
	vars := map[string]string{}
	staticVars(doc["vars"], vars)
	l.tf.global = append(l.tf.global, dynamicVars(doc["vars"])...)
	l.tf.global = append(l.tf.global, dynamicVars(doc["env"])...)
	for _, f := range stringLeaves(doc["dotenv"]) {
		l.tf.dotenv = append(l.tf.dotenv, taskRun{dir: dir, text: f})
	}
	if tasks, ok := doc["tasks"].(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(tasks)) {
			d := &taskDef{def: tasks[name], dir: dir, vars: vars, ns: ns}
			full := ns + name
			if _, dup := l.tf.tasks[full]; !dup {
				l.tf.tasks[full] = d
			}
			if m, ok := tasks[name].(map[string]any); ok {
				for _, al := range stringLeaves(m["aliases"]) {
					if _, dup := l.tf.tasks[ns+al]; !dup {
						l.tf.tasks[ns+al] = d
					}
				}
			}
		}
	} else if doc["tasks"] != nil {
		l.fail("its tasks are not a map")
	}
	inc, _ := doc["includes"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(inc)) {
		var file, idir string
		switch x := inc[name].(type) {
		case string:
			file = x
		case map[string]any:
			file, _ = x["taskfile"].(string)
			idir, _ = x["dir"].(string)
		}
		if file == "" || strings.Contains(file, "{{") || strings.Contains(file, "://") || strings.Contains(idir, "{{") {
			l.fail("it includes " + clip(name, 40) + " from a place that is remote or computed")
			continue
		}
		if depth >= 4 || l.files >= maxTaskIncludes {
			l.fail("it includes more files than the guard reads")
			return
		}
		l.files++
		p := file
		if strings.HasPrefix(p, "~") {
			l.fail("it includes " + clip(file, 60) + ", whose place is not known")
			continue
		}
		if !path.IsAbs(p) {
			p = path.Join(dir, p)
		}
		t, why := l.read(p)
		if why == "" && t == "\x00dir" {
			// A directory: its Taskfile.
			why = "missing"
			for _, n := range taskfileNames {
				if t2, w2 := l.read(path.Join(p, n)); w2 == "" && t2 != "\x00dir" {
					p, t, why = path.Join(p, n), t2, ""
					break
				} else if w2 != "missing" {
					why = w2
					break
				}
			}
		}
		if why == "missing" {
			continue // optional, or task fails: the include does not exist
		}
		if why != "" {
			l.fail("its include " + clip(file, 60) + " " + why)
			continue
		}
		l.load(p, t, ns+name+":", depth+1)
	}
}

// staticVars records the variables of a vars map that hold a plain
// string without templates.
func staticVars(v any, into map[string]string) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, x := range m {
		if s, ok := x.(string); ok && !strings.Contains(s, "{{") {
			into[k] = s
		}
	}
}

// dynamicVars returns the sh: commands of a vars or env map.
func dynamicVars(v any) []string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if d, ok := m[k].(map[string]any); ok {
			if s, ok := d["sh"].(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// taskRun is one piece of shell text a task run executes and where.
type taskRun struct {
	dir, text string
}

// commands returns the shell text the named tasks run, with their
// dependencies and calls, or why they cannot be judged.
func (tf *taskfile) commands(names []string) ([]taskRun, string) {
	if tf.unread != "" {
		return nil, tf.unread
	}
	var out []taskRun
	why := ""
	visits := 0
	var visit func(n, from string, depth int)
	add := func(d *taskDef, dir, s string) {
		out = append(out, taskRun{dir: dir, text: d.expand(s, dir)})
	}
	visit = func(n, ns string, depth int) {
		if why != "" {
			return
		}
		n = strings.TrimPrefix(n, ":")
		d := tf.tasks[ns+n]
		if d == nil {
			d = tf.tasks[n]
		}
		if d == nil {
			d = tf.wildcard(n)
		}
		if d == nil {
			return // task fails: no such task
		}
		visits++
		if depth > 32 || visits > maxTaskVisits {
			why = "its tasks call each other deeper than the guard follows"
			return
		}
		dir := d.dir
		switch x := d.def.(type) {
		case string:
			add(d, dir, x)
			return
		case []any:
			for _, c := range x {
				d.cmd(c, dir, add, func(t string) { visit(t, d.ns, depth+1) })
			}
			return
		case map[string]any:
			if s, ok := x["dir"].(string); ok && s != "" {
				if strings.Contains(s, "{{") {
					s = taskTemplate.ReplaceAllStringFunc(s, func(t string) string { return d.resolve(t, dir) })
				}
				if !strings.Contains(s, "{{") && !strings.Contains(s, "$") {
					if !path.IsAbs(s) {
						s = path.Join(dir, s)
					}
					dir = s
				}
			}
			for _, f := range stringLeaves(x["dotenv"]) {
				tf.dotenv = append(tf.dotenv, taskRun{dir: d.dir, text: f})
			}
			for _, s := range dynamicVars(x["vars"]) {
				add(d, dir, s)
			}
			for _, s := range dynamicVars(x["env"]) {
				add(d, dir, s)
			}
			if deps, ok := x["deps"].([]any); ok {
				for _, dep := range deps {
					switch y := dep.(type) {
					case string:
						visit(y, d.ns, depth+1)
					case map[string]any:
						if t, ok := y["task"].(string); ok {
							visit(t, d.ns, depth+1)
						}
					}
				}
			}
			for _, key := range []string{"preconditions", "status"} {
				if l, ok := x[key].([]any); ok {
					for _, c := range l {
						switch y := c.(type) {
						case string:
							add(d, dir, y)
						case map[string]any:
							if s, ok := y["sh"].(string); ok {
								add(d, dir, s)
							}
						}
					}
				}
			}
			if s, ok := x["cmd"].(string); ok {
				add(d, dir, s)
			}
			if l, ok := x["cmds"].([]any); ok {
				for _, c := range l {
					d.cmd(c, dir, add, func(t string) { visit(t, d.ns, depth+1) })
				}
			}
		}
	}
	for _, n := range names {
		visit(n, "", 0)
	}
	if why != "" {
		return nil, why
	}
	if len(out) > 0 {
		for i := len(tf.global) - 1; i >= 0; i-- {
			out = append([]taskRun{{text: taskTemplate.ReplaceAllLiteralString(tf.global[i], `"$TASK_VALUE"`)}}, out...)
		}
	}
	return out, ""
}

// cmd adds one item of a task's cmds: a command, {cmd: …}, {task: …},
// {defer: …}.
func (d *taskDef) cmd(c any, dir string, add func(*taskDef, string, string), call func(string)) {
	switch y := c.(type) {
	case string:
		add(d, dir, y)
	case map[string]any:
		if s, ok := y["cmd"].(string); ok {
			add(d, dir, s)
		}
		if t, ok := y["task"].(string); ok {
			call(t)
		}
		switch df := y["defer"].(type) {
		case string:
			add(d, dir, df)
		case map[string]any:
			if t, ok := df["task"].(string); ok {
				call(t)
			}
		}
	}
}

// wildcard returns the task whose name with * matches n.
func (tf taskfile) wildcard(n string) *taskDef {
	for _, k := range slices.Sorted(maps.Keys(tf.tasks)) {
		if !strings.Contains(k, "*") {
			continue
		}
		pat := "^" + strings.ReplaceAll(regexp.QuoteMeta(k), `\*`, `.*`) + "$"
		if ok, _ := regexp.MatchString(pat, n); ok {
			return tf.tasks[k]
		}
	}
	return nil
}

// expand replaces the templates of a command: the file's directories and
// static variables by their values, the rest by a variable the analysis
// does not know.
func (d *taskDef) expand(s, dir string) string {
	return taskTemplate.ReplaceAllStringFunc(s, func(t string) string {
		v := d.resolve(t, dir)
		if strings.Contains(v, "{{") {
			return `"$TASK_VALUE"`
		}
		return v
	})
}

// resolve returns the value of one template when it is known, else the
// template itself.
func (d *taskDef) resolve(t, dir string) string {
	m := taskVarRef.FindStringSubmatch(t)
	if m == nil {
		return t
	}
	v, ok := "", false
	switch m[1] {
	case "TASKFILE_DIR", "ROOT_DIR", "TASK_DIR":
		v, ok = d.dir, true
		if m[1] == "TASK_DIR" {
			v = dir
		}
	default:
		v, ok = d.vars[m[1]]
	}
	if !ok || strings.ContainsAny(v, " \t\n'\"`$\\;&|<>(){}*?[]#~") {
		return t
	}
	return v
}

// taskCmd judges task (go-task) by the tasks it runs.
func (a *analyzer) taskCmd(s *segCtx) {
	var file, dirArg arg
	hasFile, hasDir, global := false, false, false
	var names []arg
	for k := 0; k < len(s.args); k++ {
		x := s.args[k]
		v := x.val
		if v == "--" && !x.dyn {
			break // the rest are CLI_ARGS
		}
		name, val, eq := strings.Cut(v, "=")
		value := func() (arg, bool) { return optionValue(s.args, &k, x, val, eq) }
		switch {
		case x.dyn && !strings.HasPrefix(v, "-"):
			names = append(names, x)
		case name == "-t" || name == "--taskfile":
			file, hasFile = value()
		case name == "-d" || name == "--dir":
			dirArg, hasDir = value()
		case v == "-g" || v == "--global":
			global = true
		case name == "-o" || name == "--output" || name == "--output-group-begin" || name == "--output-group-end" ||
			name == "-C" || name == "--concurrency" || name == "-I" || name == "--interval" || name == "--sort" ||
			name == "--remote-cache-dir" || name == "--cache-expiry" || name == "--timeout":
			if !eq {
				k++
			}
		case v == "-l" || v == "--list" || v == "-a" || v == "--list-all" || v == "--summary" || v == "-n" ||
			v == "--dry" || v == "--init" || v == "-i" || v == "--version" || v == "-h" || v == "--help" ||
			v == "--completion" || v == "--experiments" || strings.HasPrefix(v, "--json") || v == "--clear-cache":
			return // lists, shows or makes a Taskfile: runs no task
		case strings.HasPrefix(v, "-"):
		case eq && !strings.Contains(name, ":"):
			// VAR=value: a variable for the tasks.
		default:
			names = append(names, x)
		}
	}
	if hasFile && file.dyn || hasDir && dirArg.dyn || len(names) > 0 && anyDyn(names) {
		a.runnerProblem(s.idx, "task", "the Taskfile or the task is computed at run time")
		return
	}
	start, startKnown := a.cwd, a.cwdKnown
	if global {
		start, startKnown = a.env.Home, a.env.Home != ""
	}
	if hasDir {
		p, ok := a.fileAbs(dirArg.val)
		if !ok {
			a.runnerProblem(s.idx, "task", "the directory's place is not known")
			return
		}
		start, startKnown = p, true
	}
	var abs string
	find := func(d string) string {
		for _, name := range taskfileNames {
			p := path.Join(d, name)
			if _, w := a.written[p]; w || a.fileExists(p) || a.changedBefore(p, s.idx) {
				return p
			}
		}
		return ""
	}
	if hasFile {
		p, ok := a.fileAbs(file.val)
		if !hasDir && !path.IsAbs(file.val) && !strings.HasPrefix(file.val, "~") {
			p, ok = path.Join(start, file.val), startKnown
		}
		if !ok {
			a.runnerProblem(s.idx, "task", "the Taskfile's place is not known")
			return
		}
		if st := a.readRunnerFile(p); st.state == fileMissing && a.fileExists(p) {
			p = find(p) // a directory
		}
		abs = p
	} else if startKnown {
		for d, n := start, 0; n < 64 && abs == ""; n++ {
			abs = find(d)
			if d == "/" || hasDir || global {
				break
			}
			d = path.Dir(d)
		}
	}
	if abs == "" {
		return // no Taskfile: task fails
	}
	text, st := a.runnerContent(s.idx, "task", abs)
	if st != fileOK {
		return
	}
	if !a.runnerBudget(s.idx, "task") {
		return
	}
	read := func(p string) (string, string) {
		if a.fileExists(p) {
			if st := a.readRunnerFile(p); st.state == fileMissing {
				if _, w := a.written[p]; !w {
					return "\x00dir", ""
				}
			}
		}
		g := a.contentOf(p, s.idx)
		switch g.state {
		case fileMissing:
			return "", "missing"
		case fileBad:
			return "", g.why
		}
		return g.text, ""
	}
	tf := parseTaskfile(abs, text, read)
	want := vals(names)
	if len(want) == 0 {
		want = []string{"default"}
	}
	runs, why := tf.commands(want)
	if why != "" {
		a.runnerProblem(s.idx, "task", a.display(abs)+": "+why)
		return
	}
	if len(runs) > maxLaterCommands {
		a.runnerProblem(s.idx, "task", a.display(abs)+": it runs more commands than the guard judges")
		return
	}
	// The environment files the tasks read (dotenv:): one of the project
	// (.env) is not judged as read, as compose's env_file; others are
	// reads (dotenv: [~/.aws/credentials]).
	for _, e := range tf.dotenv {
		f := e.text
		if strings.Contains(f, "{{") || strings.Contains(f, "$") {
			a.runnerProblem(s.idx, "task", a.display(abs)+": it reads an environment file whose place is computed: "+clip(f, 60))
			continue
		}
		if strings.HasPrefix(f, "~") {
			if p, ok := a.fileAbs(f); ok {
				f = p
			}
		} else if !path.IsAbs(f) {
			f = path.Join(e.dir, f)
		}
		if !a.projectEnvFile(f, e.dir) {
			cur := a.cur
			a.cur = s.idx
			a.candidate(arg{val: f}, inRead, false)
			a.cur = cur
		}
	}
	where := "task runs " + clip(strings.Join(want, " "), 40) + " of " + a.display(abs)
	for _, r := range runs {
		cwd := r.dir
		if cwd == "" {
			cwd = path.Dir(abs)
		}
		a.runContent(s.idx, r.text, contentOpts{origin: OriginScript, cwd: cwd, where: where})
	}
}
