package shell

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// Claude Code's skills and slash commands are Markdown files the agent
// loads with its Skill and SlashCommand tools (.claude/skills/NAME/SKILL.md,
// .claude/commands/NAME.md, in the project and in ~). Loading one runs the
// shell commands written in it as !`command` (their output becomes part of
// the prompt) in Claude Code's own process: no Bash call, so no hook, sees
// them. A skill's front matter may also register hooks, which run commands
// while it is active. An agent may write such a file and then load it: the
// call that loads it is judged by what it runs.

// skillTools are Claude Code's tools that load a skill or a slash command:
// their argument names one (it is not a shell command).
var skillTools = map[string]bool{"Skill": true, "SlashCommand": true}

// maxSkillFile is the largest skill or command file read; a larger one is
// put to a person.
const maxSkillFile = 256 << 10

// inlineShell matches a !`command` of a skill or command file.
var inlineShell = lazyre.New("!`([^`\n]+)`")

// frontHooks matches a hooks key of a skill's YAML front matter.
var frontHooks = lazyre.New(`(?m)^hooks\s*:`)

// isSkillCall reports whether a is Claude Code's call of a skill or slash
// command.
func isSkillCall(a *action.Action) bool {
	return a.Agent == action.AgentClaudeCode && a.Kind != action.KindShell && skillTools[a.Tool]
}

// skillName returns the name of the skill or command a loads (the skill
// argument, or the command's first word without its slash) and the
// arguments it is given (the rest of the command, or the args argument).
func skillName(a *action.Action) (name, args string) {
	for _, k := range []string{"skill", "command", "slash_command", "name"} {
		if s, ok := a.Args[k].(string); ok && strings.TrimSpace(s) != "" {
			// The name is the leading run of the characters a skill's name
			// is made of; the rest are its arguments ("/log; rm x" is
			// judged as log with "; rm x", whether or not the agent reads
			// it so).
			s = strings.TrimPrefix(strings.TrimSpace(s), "/")
			n := strings.IndexFunc(s, func(r rune) bool { return !nameRune(r) })
			if n < 0 {
				n = len(s)
			}
			name, args = s[:n], s[n:]
			if name == "" && s != "" {
				name = s // judged as a name that cannot be placed
			}
			break
		}
	}
	if s, ok := a.Args["args"].(string); ok {
		args = strings.TrimSpace(args + " " + s)
	}
	return name, strings.TrimSpace(args)
}

// nameRune reports whether r may be part of a skill's or command's name.
func nameRune(r rune) bool {
	return r == '-' || r == '_' || r == ':' || r == '.' || r == '/' || r == '\\' ||
		r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 0x7f && !unicode.IsSpace(r)
}

// argRef matches a skill's reference to its arguments: $ARGUMENTS, or one
// of them ($1 … $9, $ARGUMENTS[0]).
var argRef = lazyre.New(`\$(?:ARGUMENTS(?:\[\d+\])?|\{ARGUMENTS\}|\d)`)

// withArgs puts a call's arguments into a command of its skill as Claude
// Code does before it runs it: $ARGUMENTS is all of them, $N and
// $ARGUMENTS[N] one. Any reference is given the whole text here, so every
// word of it is judged where it may land.
func withArgs(cmd, args string) string {
	return argRef.ReplaceAllLiteralString(cmd, args)
}

// skillFiles returns the files a skill or command name may load: in the
// working directory and each directory above it, and in home. A name with
// a plugin prefix ("plugin:skill") may also be a command in a directory
// ("frontend:component" is .claude/commands/frontend/component.md).
func skillFiles(name, cwd, home string) []string {
	rel := filepath.FromSlash(strings.ReplaceAll(name, ":", "/"))
	var dirs []string
	if filepath.IsAbs(cwd) {
		for d, n := filepath.Clean(cwd), 0; n < 64; n++ {
			dirs = append(dirs, d)
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	if filepath.IsAbs(home) {
		dirs = append(dirs, filepath.Clean(home))
	}
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		for _, p := range []string{
			filepath.Join(d, ".claude", "skills", rel, "SKILL.md"),
			filepath.Join(d, ".claude", "commands", rel+".md"),
		} {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// checkSkill judges Claude Code's call of a skill or slash command by the
// shell commands its file runs when loaded (each judged as any command the
// agent runs) and the hooks it registers. A skill that no file of the
// project or the home defines (a built-in one, a plugin's) is judged by the
// tool's default.
func (g *Guard) checkSkill(ctx context.Context, a *action.Action) ([]guard.Finding, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, args := skillName(a)
	if name == "" {
		return nil, nil
	}
	if strings.Contains(name, "..") || strings.ContainsAny(name, "/\\\x00") {
		return []guard.Finding{{Check: "shell.skill", Level: action.Confirm, Hard: true,
			Message: fmt.Sprintf("cannot tell which file the skill %q is", name)}}, nil
	}
	var out []guard.Finding
	var cmds []string
	for _, p := range skillFiles(name, a.Cwd, g.home) {
		b, err := g.readSkill(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			out = append(out, guard.Finding{Check: "shell.skill", Level: action.Confirm, Hard: true,
				Message: fmt.Sprintf("cannot read %s, which the skill %q may load (%v), so what it runs cannot be judged", p, name, err)})
			continue
		}
		text := string(b)
		if front, ok := frontMatter(text); ok && frontHooks.MatchString(front) {
			out = append(out, guard.Finding{Check: "shell.skill-hooks", Level: action.Confirm, Hard: true,
				Message: fmt.Sprintf("the skill %q (%s) registers hooks, which run commands outside Overseer's view while it is active", name, p)})
		}
		for _, m := range inlineShell.FindAllStringSubmatch(text, -1) {
			cmds = append(cmds, withArgs(m[1], args))
		}
		a.Facts.Notes = append(a.Facts.Notes, fmt.Sprintf("skill %s: %s", name, p))
	}
	if len(cmds) == 0 {
		return out, nil
	}
	a.Facts.Notes = append(a.Facts.Notes, fmt.Sprintf("skill %s runs: %s", name, strings.Join(cmds, "; ")))
	an := analyze(g.r, strings.Join(cmds, "\n"), Env{Cwd: a.Cwd, Home: g.home, FS: g.fsys, SelfAPI: g.self, Vars: g.vars})
	for _, s := range an.Segments {
		a.Facts.Commands = append(a.Facts.Commands, action.Command{Name: s.Name, Args: s.Args, Dynamic: s.Dynamic, Stdin: s.Stdin, PipedFiles: s.PipedFiles})
	}
	for _, p := range an.Paths {
		if !containsPath(a.Facts.Paths, p) {
			a.Facts.Paths = append(a.Facts.Paths, p)
		}
	}
	for _, f := range an.Findings {
		f.Message = fmt.Sprintf("the skill %q runs, when it loads: %s", name, f.Message)
		out = append(out, f)
	}
	if an.ParseFailed {
		out = append(out, guard.Finding{Check: "shell.skill", Level: action.Confirm, Hard: true,
			Message: fmt.Sprintf("the commands the skill %q runs when it loads cannot be read: %s", name, an.ParseError)})
	}
	return out, nil
}

// isSkillFile reports whether p is a skill's or slash command's file:
// .claude/skills/NAME/SKILL.md, or a Markdown file under .claude/commands.
// Case is ignored: on a file system that ignores it (macOS, Windows)
// .CLAUDE/Commands/x.MD is the same file.
func isSkillFile(p string) bool {
	p = strings.ToLower(filepath.ToSlash(filepath.Clean(p)))
	if strings.HasSuffix(p, "/skill.md") {
		return strings.Contains(p, "/.claude/skills/") || strings.HasPrefix(p, ".claude/skills/")
	}
	return strings.HasSuffix(p, ".md") && (strings.Contains(p, "/.claude/commands/") || strings.HasPrefix(p, ".claude/commands/"))
}

// checkSkillWrite judges a file tool's write of a skill or command file
// by the commands the written text would run when the skill loads, for
// whoever loads it later (the agent, or a person typing /name): a planted
// !`rm -rf ~` is judged as that command now, a !`git status` stays quiet.
func (g *Guard) checkSkillWrite(ctx context.Context, a *action.Action, p string) ([]guard.Finding, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	text := g.writtenText(a, p)
	env := Env{Cwd: a.Cwd, Home: g.home, FS: g.fsys, SelfAPI: g.self, Vars: g.vars, later: &a.Facts.Later}
	return plantedText(g.r, env, "skill", p, g.abs(p, a.Cwd), text, 0), nil
}

// writtenText returns the text a file tool's write or edit of p puts
// there: a write's content; for an edit, the file as it would be after
// it (an edit's new text may complete a line of the file's own:
// !`git status` + "; rm -rf ~", "runOn": "default" → "folderOpen")
// followed by the new text itself.
func (g *Guard) writtenText(a *action.Action, p string) string {
	text := action.WrittenText(a.Args)
	if a.Kind == action.KindFileEdit {
		if b, err := g.readSkill(g.abs(p, a.Cwd)); err == nil {
			text = editedText(string(b), a) + "\n" + text
		}
	}
	return text
}

// abs returns p made absolute against cwd.
func (g *Guard) abs(p, cwd string) string {
	if !filepath.IsAbs(p) && filepath.IsAbs(cwd) {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// editedText returns text with a's replacements made (an edit's
// old_string by its new_string, each of a multi-edit's in turn).
func editedText(text string, a *action.Action) string {
	replace := func(m map[string]any) {
		old, _ := m["old_string"].(string)
		nw, _ := m["new_string"].(string)
		if old == "" {
			return
		}
		if all, _ := m["replace_all"].(bool); all {
			text = strings.ReplaceAll(text, old, nw)
		} else {
			text = strings.Replace(text, old, nw, 1)
		}
	}
	replace(a.Args)
	if edits, ok := a.Args["edits"].([]any); ok {
		for _, e := range edits {
			if m, ok := e.(map[string]any); ok {
				replace(m)
			}
		}
	}
	return text
}

// isEditorTasks reports whether p is a file whose VS Code tasks may run
// when a folder is opened: a folder's .vscode/tasks.json, a workspace
// file (NAME.code-workspace, whose "tasks" are the workspace's), or the
// user's own tasks (…/User/tasks.json in the editor's settings).
func isEditorTasks(p string) bool {
	p = strings.ToLower(filepath.ToSlash(filepath.Clean(p)))
	return strings.HasSuffix(p, "/.vscode/tasks.json") || p == ".vscode/tasks.json" ||
		strings.HasSuffix(p, ".code-workspace") || strings.HasSuffix(p, "/user/tasks.json")
}

// folderOpen matches a task's "runOn": "folderOpen" (JSON with comments,
// any spacing and case).
var folderOpen = lazyre.New(`(?i)"runOn"\s*:\s*"folderOpen"`)

// editorTaskFindings judges a file tool's write or edit of VS Code's task
// file: a task that runs when the folder is opened runs in the person's
// editor, outside Overseer's view (block); other tasks run when a person
// starts them and stay quiet. An edit is judged by the file as it would be.
func (g *Guard) editorTaskFindings(a *action.Action, p string) []guard.Finding {
	env := Env{Cwd: a.Cwd, Home: g.home, FS: g.fsys, SelfAPI: g.self, Vars: g.vars, later: &a.Facts.Later}
	out := plantedText(g.r, Env{}, "tasks", p, "", g.writtenText(a, p), 0)
	if strings.HasSuffix(strings.ToLower(p), ".code-workspace") {
		out = append(out, laterText(g.r, env, "workspace", p, g.abs(p, a.Cwd), g.fileAfter(a, p), 0)...)
	}
	return out
}

// laterWrite judges a file tool's write or edit of a configuration file
// whose commands a later program runs (laterrun.go), by the file as the
// write leaves it.
func (g *Guard) laterWrite(a *action.Action, p, kind string) []guard.Finding {
	env := Env{Cwd: a.Cwd, Home: g.home, FS: g.fsys, SelfAPI: g.self, Vars: g.vars, later: &a.Facts.Later}
	return plantedText(g.r, env, kind, p, g.abs(p, a.Cwd), g.fileAfter(a, p), 0)
}

// fileAfter returns the text of p after a file tool's write or edit: a
// write's content, the file with an edit's replacements made, or an edit's
// new text alone when the file cannot be read.
func (g *Guard) fileAfter(a *action.Action, p string) string {
	if a.Kind == action.KindFileEdit {
		if b, err := g.readSkill(g.abs(p, a.Cwd)); err == nil {
			return editedText(string(b), a)
		}
	}
	return action.WrittenText(a.Args)
}

// readSkill reads a skill or command file, regular and at most
// maxSkillFile bytes, without blocking on what is not a regular file.
func (g *Guard) readSkill(p string) ([]byte, error) {
	return readRegularIn(g.fsys, strings.TrimPrefix(filepath.ToSlash(p), "/"), maxSkillFile)
}

// frontMatter returns the YAML front matter of a Markdown file: the lines
// between a first line "---" and the next "---".
func frontMatter(text string) (string, bool) {
	text = strings.TrimPrefix(text, "\ufeff")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		if rest, ok = strings.CutPrefix(text, "---\r\n"); !ok {
			return "", false
		}
	}
	if i := strings.Index(rest, "\n---"); i >= 0 {
		return rest[:i], true
	}
	return rest, true
}
