package shell

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/patchfmt"
)

// Files that run code later in the person's own tools, outside any hook:
// Claude Code's skills and slash commands (their !`command` lines run when
// they load, their front matter may register hooks) and VS Code's task
// file (a task with runOn folderOpen runs when the folder is opened). A
// file tool's write of one is judged by the text it writes (skills.go);
// a shell command that writes one is judged the same way by the text the
// command puts there when the analysis knows it (a redirection of echo,
// printf, a here-document, tee, a copy of a file that exists), and is put
// to a person when it does not (a download, sed -i, a copy of a file not
// there yet, an interpreter's write): never quieter than the file tool.
// Files whose writes the path guards already judge by their path (git
// hooks, shell start-up files, hook configurations) need nothing here;
// makefiles and scripts are judged by their content when they run.

// maxPlantedDepth bounds the analyses of planted text inside planted text
// (a skill whose command writes a skill …).
const maxPlantedDepth = 2

// plantedKind says which kind of later-run file p is: "skill", "tasks",
// or "" for neither. dir is true for a directory that holds such files
// (.claude/commands, .claude/skills, .vscode, .claude), written whole.
func plantedKind(p string) (kind string, dir bool) {
	switch {
	case isSkillFile(p):
		return "skill", false
	case isEditorTasks(p):
		return "tasks", false
	}
	if k := laterKind(p); k != "" {
		return k, false // laterrun.go
	}
	p = strings.ToLower(path.Clean(p)) // case is ignored, as in isSkillFile
	base := path.Base(p)
	switch {
	case base == ".claude", base == ".vscode", base == ".gemini":
		return "dir", true
	case (base == "commands" || base == "skills") && path.Base(path.Dir(p)) == ".claude",
		base == "commands" && path.Base(path.Dir(p)) == ".gemini":
		return "dir", true
	case strings.Contains(p+"/", "/.claude/skills/") || strings.Contains(p+"/", "/.claude/commands/") ||
		strings.Contains(p+"/", "/.gemini/commands/"):
		// A skill's directory (.claude/skills/NAME) or a folder of
		// commands: whatever lands in it may be a skill.
		if path.Ext(p) == "" {
			return "dir", true
		}
	}
	return "", false
}

// plantedText judges text that the file p will hold and that runs later
// in the person's tools: a folder-open task blocks; a skill's inline
// commands are judged as commands (those that would reach a person at
// least, raised to a floor) and hooks it registers reach a person.
func plantedText(r *rules, env Env, kind, p, abs, text string, depth int) []guard.Finding {
	switch kind {
	case "tasks":
		if folderOpen.MatchString(text) || folderOpen.MatchString(jsoncPlain(text)) {
			return []guard.Finding{{Check: "shell.folder-open-task", Level: action.Block, Hard: true,
				Message: fmt.Sprintf("%s would hold a task that runs when the folder is opened (runOn: folderOpen), in the person's editor outside Overseer's view; agents may not add one", p)}}
		}
		if strings.HasSuffix(strings.ToLower(abs), ".code-workspace") {
			// A workspace file's settings, as a folder's (laterrun.go).
			return laterText(r, env, "workspace", p, abs, text, depth)
		}
		return nil
	case "skill":
		var out []guard.Finding
		if front, ok := frontMatter(text); ok && frontHooks.MatchString(front) {
			out = append(out, guard.Finding{Check: "shell.skill-hooks", Level: action.Confirm, Hard: true,
				Message: fmt.Sprintf("%s would register hooks, which run commands outside Overseer's view while the skill is active", p)})
		}
		var cmds []string
		for _, m := range inlineShell.FindAllStringSubmatch(text, -1) {
			// Arguments are not known until it loads: $ARGUMENTS stays a
			// variable, whose value the analysis does not know.
			cmds = append(cmds, m[1])
		}
		if len(cmds) == 0 {
			return out
		}
		if depth >= maxPlantedDepth {
			return append(out, guard.Finding{Check: "shell.skill", Level: action.Confirm, Hard: true,
				Message: fmt.Sprintf("%s would run commands when it loads that are written by other planted commands, too deep to judge", p)})
		}
		an := analyzeDepth(r, strings.Join(cmds, "\n"), env, depth+1)
		env.collectLater(an.Paths)
		for _, f := range an.Findings {
			if f.Level < action.Confirm {
				continue // what a quiet command would do is the load's to judge
			}
			// A floor: the write itself may be one a rule lets through (in
			// the working directory), what it plants is not.
			f.Hard = true
			f.Message = fmt.Sprintf("%s would run, when it loads: %s", p, f.Message)
			out = append(out, f)
		}
		return out
	}
	if _, ok := laterKinds[kind]; ok {
		return laterNew(r, env, kind, p, abs, text, depth)
	}
	return nil
}

// laterNew judges the text a later-run configuration file (laterrun.go)
// will hold by what it adds to the file as it is: findings and planted
// paths the file's present text has too (a postinstall the person wrote,
// judged when it was written) are not raised again by every edit of the
// file, such as one that adds a dependency.
func laterNew(r *rules, env Env, kind, p, abs, text string, depth int) []guard.Finding {
	var got []action.PathFact
	cur := env
	cur.later = &got
	out := laterText(r, cur, kind, p, abs, text, depth)
	if (len(out) > 0 || len(got) > 0) && path.IsAbs(abs) {
		fsys := env.FS
		if fsys == nil {
			fsys = os.DirFS("/")
		}
		if b, err := readRegularIn(fsys, fsName(abs), maxSkillFile); err == nil {
			var had []action.PathFact
			old := env
			old.later = &had
			prev := laterText(r, old, kind, p, abs, string(b), depth)
			out = slices.DeleteFunc(out, func(f guard.Finding) bool {
				return slices.ContainsFunc(prev, func(g guard.Finding) bool { return g.Check == f.Check && g.Message == f.Message })
			})
			got = slices.DeleteFunc(got, func(f action.PathFact) bool { return containsPath(had, f) })
		}
	}
	env.collectLater(got)
	return out
}

// plantedWrites judges the files of the command's writes that run code
// later in the person's tools (see the top of this file), once the whole
// command is read: by the text the command leaves in them when it is
// known, else at confirm.
func (a *analyzer) plantedWrites() {
	if a.limited {
		return
	}
	cur := a.cur
	a.cur = -1
	defer func() { a.cur = cur }()
	end := len(a.out.Segments)
	seen := map[string]bool{}
	for i := 0; i < len(a.out.Paths); i++ {
		f := a.out.Paths[i]
		if f.Intent != action.PathWrite && f.Intent != action.PathUnknown || seen[f.Path] {
			continue
		}
		if f.Intent == action.PathUnknown && a.filtered[f.Path] {
			continue // a JSON filter's read (python3 -c "…json.load(open('package.json'))…")
		}
		kind, dir := plantedKind(f.Path)
		shown, abs := a.display(f.Path), f.Path
		if kind == "" {
			// Written through a symbolic link (one on the file system, or
			// one the command makes) to such a file or directory. Only a
			// name that may be one is followed (links cost a lookup each).
			if !mayBePlanted(f.Path) {
				continue
			}
			q := a.follow(f.Path)
			if q == f.Path {
				continue
			}
			if kind, dir = plantedKind(q); kind == "" {
				continue
			}
			shown, abs = a.display(f.Path)+" ("+a.display(q)+")", q
		}
		seen[f.Path] = true
		if dir {
			if !a.fillsDir(f.Path) {
				continue // mkdir -p .vscode: made empty
			}
			a.add(guard.Finding{Check: "shell.planted-unknown", Level: action.Confirm, Hard: true,
				Message: fmt.Sprintf("writes into %s, where files run commands later in the person's tools (skills, slash commands, custom commands, editor tasks and settings), with content not known when judged", shown)})
			continue
		}
		text, known := "", false
		if w, ok := a.written[f.Path]; ok {
			text, known = a.writtenContentAt(w, end)
		}
		if !known {
			what := "a skill or slash command, whose !`command` lines run when it loads"
			if kind == "tasks" {
				what = "VS Code's task file, whose folder-open tasks run when the folder is opened"
			} else if w, ok := laterKinds[kind]; ok {
				what = w
			}
			a.add(guard.Finding{Check: "shell.planted-unknown", Level: action.Confirm, Hard: true,
				Message: fmt.Sprintf("writes %s, %s, with content not known when judged", shown, what)})
			continue
		}
		for _, g := range plantedText(a.r, a.env, kind, shown, abs, text, a.plantDepth) {
			a.add(g)
		}
	}
}

// fillsDir reports whether a segment of the command may put files into the
// directory p (cp -r, tar -C, rsync), not only make it (mkdir -p) or look
// at it.
func (a *analyzer) fillsDir(p string) bool {
	for i := range a.out.Segments {
		sg := &a.out.Segments[i]
		if sg.Name == "mkdir" || metaOnly[sg.Name] {
			continue
		}
		for _, c := range sg.changes {
			if c == p {
				return true
			}
		}
	}
	return false
}

// jsoncPlain returns JSON with comments as the editor reads it, for a
// pattern to match: comments removed, and each string with its escapes
// decoded ("folder\u004fpen" is "folderOpen"), its quotes kept. A string
// whose escapes do not decode is kept as written.
func jsoncPlain(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(text) && text[j] != '"' {
				if text[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(text) {
				b.WriteString(text[i:])
				return b.String()
			}
			var s string
			if err := json.Unmarshal([]byte(text[i:j+1]), &s); err == nil {
				b.WriteByte('"')
				b.WriteString(s)
				b.WriteByte('"')
			} else {
				b.WriteString(text[i : j+1])
			}
			i = j + 1
		case c == '/' && i+1 < len(text) && text[i+1] == '/':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				return b.String()
			}
			b.WriteByte(' ')
			i += end + 4
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// patchPlanted judges a patch in Codex's apply_patch format that a file
// tool's call carries (any string argument, as the path facts read it) by
// what it leaves in each file that runs later: an added file's lines, an
// updated file as the update makes it (its added lines when the update
// does not apply to the file as it is), a moved file under its new name.
// A patch that cannot be read whole puts such a target to a person.
func (g *Guard) patchPlanted(a *action.Action) []guard.Finding {
	var out []guard.Finding
	env := Env{Cwd: a.Cwd, Home: g.home, FS: g.fsys, SelfAPI: g.self, Vars: g.vars, later: &a.Facts.Later}
	for _, k := range sortedArgKeys(a.Args) {
		v, ok := a.Args[k].(string)
		if !ok || !strings.Contains(v, "*** Begin Patch") {
			continue
		}
		files, err := patchfmt.ParsePatch(v)
		if err != nil {
			for _, t := range action.ParsePatchTargets(v) {
				p := g.abs(t.Path, a.Cwd)
				if kind, _ := plantedKind(p); kind != "" && t.Intent == action.PathWrite {
					out = append(out, guard.Finding{Check: "shell.planted-unknown", Level: action.Confirm, Hard: true,
						Message: fmt.Sprintf("a patch that cannot be read whole (%v) writes %s, which runs commands later in the person's tools", err, t.Path)})
				}
			}
			continue
		}
		for _, f := range files {
			if f.Op == "delete" {
				continue
			}
			target := f.Path
			if f.MoveTo != "" {
				target = f.MoveTo
			}
			kind, dir := g.plantedTarget(target, a.Cwd)
			if kind == "" || dir {
				continue
			}
			var text string
			var err error
			if f.Op == "add" {
				text, err = patchfmt.AddedContent(f.Body)
			} else {
				var b []byte
				if b, err = g.readSkill(g.abs(f.Path, a.Cwd)); err == nil {
					text, err = patchfmt.ApplyUpdate(string(b), f.Body)
				}
			}
			if err != nil {
				// Not applied as it stands: judge the lines it adds.
				text = addedLines(f.Body)
			}
			out = append(out, plantedText(g.r, env, kind, target, g.abs(target, a.Cwd), text, 0)...)
		}
	}
	return out
}

// plantedTarget returns the kind of later-run file a file tool's write of
// p (relative to cwd) writes, by its name or by where its symbolic links
// lead (a link to .claude/commands written through), and whether it is a
// directory of them.
func (g *Guard) plantedTarget(p, cwd string) (string, bool) {
	abs := g.abs(p, cwd)
	if kind, dir := plantedKind(abs); kind != "" {
		return kind, dir
	}
	if !filepath.IsAbs(abs) || !mayBePlanted(abs) {
		return "", false
	}
	an := &analyzer{r: g.r, env: Env{FS: g.fsys}}
	if q := an.follow(filepath.ToSlash(abs)); q != filepath.ToSlash(abs) {
		return plantedKind(q)
	}
	return "", false
}

// addedLines returns the lines a patch body adds (those starting with +).
func addedLines(body string) string {
	var b strings.Builder
	for _, l := range strings.Split(body, "\n") {
		if t, ok := strings.CutPrefix(l, "+"); ok {
			b.WriteString(t)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// sortedArgKeys returns the keys of args in order.
func sortedArgKeys(args map[string]any) []string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// mayBePlanted reports whether a file named p may be a skill, command or
// task file once its links are followed: the name written keeps the
// file's extension (x.md, t.json) whatever the links lead to. (A directory
// copied whole through a link is not followed: the files a copy walks are
// judged one by one.)
func mayBePlanted(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".md", ".json", ".code-workspace", ".toml", ".yaml", ".yml":
		return true
	}
	return false
}
