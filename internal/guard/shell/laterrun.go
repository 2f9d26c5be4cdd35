package shell

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// Configuration files whose commands a later, trusted program runs for the
// person, outside any hook (see planted.go for skills and editor tasks):
//
//   - package.json: the scripts npm, yarn and pnpm run at the next install
//     (preinstall, install, postinstall, prepare …), and the commands of
//     the git hooks it configures (lint-staged, simple-git-hooks, husky 4);
//   - .pre-commit-config.yaml: a local hook's entry, run at every commit
//     once pre-commit is installed; lefthook.yml: each run;
//   - Gemini CLI's custom commands (.gemini/commands/NAME.toml): each
//     !{command} of the prompt runs when the command is used;
//   - a dev container's initializeCommand (.devcontainer/devcontainer.json),
//     run on this machine when the person reopens the folder in a container;
//   - Claude Code's subagents (.claude/agents/NAME.md): hooks their front
//     matter registers run while the subagent works, as a skill's do;
//   - Cargo's configuration (.cargo/config.toml: build.rustc-wrapper,
//     target.*.runner and linker …, [env]) and Yarn's (.yarnrc.yml's
//     yarnPath and plugins, .yarnrc's yarn-path): programs every cargo or
//     yarn command runs, the agent's own too, judged as VS Code's are;
//   - VS Code's settings (.vscode/settings.json, a workspace file's
//     settings, the user's): settings that name a program the editor or an
//     extension runs when the folder opens (python.defaultInterpreterPath,
//     git.path, a terminal profile, go.alternateTools, eslint.runtime …).
//
// The commands are judged as the agent's own would be: what would reach a
// person reaches one now, as a floor (the write of the file itself is in
// the working directory). A setting that names a program of the working
// tree or of a temporary directory, or one whose place is computed
// (${workspaceFolder}/x), reaches a person: what runs there is whatever the
// file holds when the editor starts, and the agent may write it later at
// notify. A program named on the person's PATH (python3), one installed
// outside the tree, or a virtual environment's interpreter that links to an
// installed one stays quiet, as do settings that name no program.

// laterKinds are the plantedKind values of this file.
var laterKinds = map[string]string{
	"npm":          "package.json, whose install scripts run at the next npm install and whose hook commands run at the next commit",
	"precommit":    "pre-commit's configuration, whose local hooks run at the next commit",
	"lefthook":     "lefthook's configuration, whose commands run at the next commit",
	"gemini":       "a Gemini CLI custom command, whose !{command} lines run when it is used",
	"settings":     "VS Code's settings, which may name programs the editor runs when the folder opens",
	"cargo":        "Cargo's configuration, which may name programs every cargo build runs",
	"yarn":         "Yarn's configuration, which may name the program every yarn command runs",
	"devcontainer": "a dev container's configuration, whose initializeCommand runs on this machine when the folder is opened in a container",
	"agent":        "a Claude Code subagent, whose front matter may register hooks that run while it works",
	"hookcfg":      "a git hook manager's configuration (lint-staged, husky, simple-git-hooks), whose commands run at the next commit",
	"curlrc":       "curl's configuration, whose options every curl that reads it takes before its own",
	"wgetrc":       "wget's configuration, whose commands every wget that reads it takes before its arguments",
}

// laterKind returns the kind of later-run configuration file p is, or "".
func laterKind(p string) string {
	lp := strings.ToLower(path.Clean(p))
	base := path.Base(lp)
	switch {
	case base == "package.json":
		if strings.Contains(lp, "/node_modules/") || strings.HasPrefix(lp, "node_modules/") {
			return ""
		}
		return "npm"
	case base == ".pre-commit-config.yaml" || base == ".pre-commit-config.yml":
		return "precommit"
	case lefthookFiles[base]:
		return "lefthook"
	case path.Ext(lp) == ".toml" && (strings.Contains(lp, "/.gemini/commands/") || strings.HasPrefix(lp, ".gemini/commands/")):
		return "gemini"
	case base == "settings.json" && (path.Base(path.Dir(lp)) == ".vscode" || path.Base(path.Dir(lp)) == "user"):
		return "settings"
	case (base == "config.toml" || base == "config") && path.Base(path.Dir(lp)) == ".cargo":
		return "cargo"
	case base == ".yarnrc.yml" || base == ".yarnrc.yaml" || base == ".yarnrc":
		return "yarn"
	case base == "devcontainer.json" || base == ".devcontainer.json":
		return "devcontainer"
	case path.Ext(lp) == ".md" && (strings.Contains(lp, "/.claude/agents/") || strings.HasPrefix(lp, ".claude/agents/")):
		return "agent"
	}
	if k := hookConfigKind(lp); k != "" {
		return k // hookconfigs.go
	}
	return toolrcKind(lp) // toolrc.go

}

var lefthookFiles = map[string]bool{"lefthook.yml": true, "lefthook.yaml": true, ".lefthook.yml": true,
	".lefthook.yaml": true, "lefthook-local.yml": true, "lefthook-local.yaml": true, ".lefthook-local.yml": true,
	".lefthook-local.yaml": true}

// laterText judges the text the configuration file of kind (laterKind) at
// abs (shown as p) will hold.
func laterText(r *rules, env Env, kind, p, abs, text string, depth int) []guard.Finding {
	var cmds []string
	var out []guard.Finding
	when := "when it runs later"
	switch kind {
	case "npm":
		// Run in the package's directory, with its own programs
		// (node_modules/.bin, the dependencies it declares) on PATH.
		env.Cwd = path.Dir(abs)
		var pj pkgJSON
		_ = json.Unmarshal([]byte(text), &pj)
		an := &analyzer{r: r, env: env}
		bins := func(n string) bool { return pj.dep(n) || path.IsAbs(env.Cwd) && an.localBin(env.Cwd, n) }
		return laterCommands(r, env, p, npmCommands(text), "at the next install or commit", depth, bins)
	case "precommit":
		cmds = precommitCommands(text)
		when = "at the next commit"
	case "lefthook":
		cmds = lefthookCommands(text)
		when = "at the next commit"
	case "gemini":
		cmds = geminiCommands(text)
		when = "when the command is used"
	case "agent":
		if front, ok := frontMatter(text); ok && frontHooks.MatchString(front) {
			return []guard.Finding{{Check: "shell.skill-hooks", Level: action.Confirm, Hard: true,
				Message: fmt.Sprintf("%s would register hooks, which run commands outside Overseer's view while the subagent works", p)}}
		}
		return nil
	case "devcontainer":
		// initializeCommand runs on this machine before the container is
		// built; the other commands run inside the container.
		var doc map[string]any
		if err := json.Unmarshal(jsoncToJSON([]byte(text)), &doc); err != nil {
			if strings.Contains(text, "initializeCommand") {
				out = append(out, guard.Finding{Check: "shell.planted-command", Level: action.Confirm, Hard: true,
					Message: fmt.Sprintf("%s would hold an initializeCommand, run on this machine when the folder opens in a container, in text that cannot be read whole (%v)", p, err)})
			}
			break
		}
		switch x := doc["initializeCommand"].(type) {
		case map[string]any: // parallel commands
			for _, k := range slices.Sorted(maps.Keys(x)) {
				cmds = append(cmds, commandLines(x[k])...)
			}
		default:
			cmds = commandLines(x)
		}
		when = "when the folder is opened in a container"
	case "curlrc", "wgetrc":
		return toolrcLater(r, env, kind, p, text, depth)
	case "hookcfg":
		var why string
		cmds, why = hookConfigCommands(path.Base(abs), text)
		if why != "" {
			out = append(out, guard.Finding{Check: "shell.planted-command", Level: action.Confirm, Hard: true,
				Message: fmt.Sprintf("%s would be %s, with %s: what it runs is not in its text", p, laterKinds[kind], why)})
		}
		when = "at the next commit"
	case "cargo", "yarn":
		cmds, out = toolConfigFindings(r, env, kind, p, abs, text)
		when = "at the next build"
	case "settings", "workspace":
		cmds, out = settingsFindings(r, env, kind, p, abs, text)
		when = "when the folder opens in the editor"
	}
	return append(out, laterCommands(r, env, p, cmds, when, depth, nil)...)
}

// laterCommands judges commands that p makes a later program run, as a
// skill's are: findings that would reach a person reach one now, as floors.
func laterCommands(r *rules, env Env, p string, cmds []string, when string, depth int, bins func(string) bool) []guard.Finding {
	if len(cmds) == 0 {
		return nil
	}
	if depth >= maxPlantedDepth {
		return []guard.Finding{{Check: "shell.planted-command", Level: action.Confirm, Hard: true,
			Message: fmt.Sprintf("%s would run commands %s that are written by other planted commands, too deep to judge", p, when)}}
	}
	if len(cmds) > maxLaterCommands {
		return []guard.Finding{{Check: "shell.planted-command", Level: action.Confirm, Hard: true,
			Message: fmt.Sprintf("%s would run %d commands %s, more than the %d that are judged", p, len(cmds), when, maxLaterCommands)}}
	}
	var out []guard.Finding
	an := analyzeBins(r, strings.Join(cmds, "\n"), env, depth+1, bins)
	env.collectLater(an.Paths)
	for _, f := range an.Findings {
		if f.Level < action.Confirm {
			continue
		}
		f.Hard = true
		f.Message = fmt.Sprintf("%s would run, %s: %s", p, when, f.Message)
		out = append(out, f)
	}
	if an.ParseFailed {
		out = append(out, guard.Finding{Check: "shell.planted-command", Level: action.Confirm, Hard: true,
			Message: fmt.Sprintf("%s would run commands %s that cannot be read: %s", p, when, an.ParseError)})
	}
	return out
}

// maxLaterCommands bounds the commands of one configuration text judged;
// maxLaterNodes the values of a parsed document visited.
const (
	maxLaterCommands = 64
	maxLaterNodes    = 4096
)

// npmLifecycle are the scripts a package manager runs on its own at an
// install of the project (npm install, yarn, pnpm install) or a pack.
var npmLifecycle = map[string]bool{"preinstall": true, "install": true, "postinstall": true, "prepublish": true,
	"preprepare": true, "prepare": true, "postprepare": true, "prepack": true, "postpack": true,
	"dependencies": true}

// gitHookNames are the hooks git runs (the keys of simple-git-hooks and
// husky 4's configuration in package.json).
var gitHookNames = map[string]bool{"pre-commit": true, "prepare-commit-msg": true, "commit-msg": true,
	"post-commit": true, "pre-push": true, "post-checkout": true, "post-merge": true, "pre-rebase": true,
	"post-rewrite": true, "pre-merge-commit": true, "pre-auto-gc": true, "applypatch-msg": true,
	"pre-applypatch": true, "post-applypatch": true, "push-to-checkout": true, "reference-transaction": true}

// npmStringPair matches a "key": "value" pair of JSON text.
var npmStringPair = lazyre.New(`"((?:[^"\\]|\\.)*)"\s*:\s*("(?:[^"\\]|\\.)*")`)

// npmCommands returns the commands package.json's text makes a later
// install or commit run. Text that is not JSON (an edit's fragment) is
// read pair by pair: every string under a lifecycle or hook name.
func npmCommands(text string) []string {
	var pkg map[string]any
	if err := json.Unmarshal([]byte(text), &pkg); err != nil {
		var out []string
		for _, m := range npmStringPair.FindAllStringSubmatch(text, -1) {
			k, err1 := strconv.Unquote(`"` + m[1] + `"`)
			v, err2 := strconv.Unquote(m[2])
			if err1 != nil || err2 != nil {
				k, v = m[1], strings.Trim(m[2], `"`)
			}
			if npmLifecycle[k] || gitHookNames[k] {
				out = append(out, v)
			}
		}
		return out
	}
	var out []string
	if scripts, ok := pkg["scripts"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(scripts)) {
			if s, ok := scripts[k].(string); ok && npmLifecycle[k] {
				out = append(out, s)
			}
		}
	}
	// lint-staged: glob → command or list of commands (the staged files'
	// names are added to each).
	if ls, ok := pkg["lint-staged"].(map[string]any); ok {
		out = append(out, stringLeaves(ls)...)
	}
	if h, ok := pkg["simple-git-hooks"].(map[string]any); ok {
		out = append(out, stringLeaves(h)...)
	}
	if h, ok := pkg["husky"].(map[string]any); ok {
		if hooks, ok := h["hooks"].(map[string]any); ok {
			out = append(out, stringLeaves(hooks)...)
		}
	}
	return out
}

// stringLeaves returns the strings of v (a string, or lists and objects
// of them), objects' in key order.
func stringLeaves(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, stringLeaves(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, stringLeaves(x[k])...)
		}
		return out
	}
	return nil
}

// yamlEntry and yamlRun match a pre-commit hook's entry and a lefthook
// command's run, for text that is not YAML as a whole.
var (
	yamlEntry = lazyre.New(`(?m)^[\s-]*entry\s*:\s*(.+)$`)
	yamlRun   = lazyre.New(`(?m)^[\s-]*run\s*:\s*(.+)$`)
)

// precommitCommands returns the commands of a pre-commit configuration's
// local (and meta) hooks: entry followed by args. A remote repository's
// hooks are code of a pinned revision of another repository, as a
// dependency is, and are not judged here.
func precommitCommands(text string) []string {
	var cfg struct {
		Repos []struct {
			Repo  string `yaml:"repo"`
			Hooks []struct {
				Entry string   `yaml:"entry"`
				Args  []string `yaml:"args"`
			} `yaml:"hooks"`
		} `yaml:"repos"`
	}
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		return regexValues(yamlEntry, text)
	}
	var out []string
	for _, r := range cfg.Repos {
		if r.Repo != "local" && r.Repo != "meta" {
			continue
		}
		for _, h := range r.Hooks {
			if strings.TrimSpace(h.Entry) == "" {
				continue
			}
			c := h.Entry
			for _, x := range h.Args {
				c += " " + shellQuote(x)
			}
			out = append(out, c)
		}
	}
	return out
}

// lefthookCommands returns every run of a lefthook configuration.
func lefthookCommands(text string) []string {
	var doc any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return regexValues(yamlRun, text)
	}
	var out []string
	budget := maxLaterNodes // aliases may share a node many times over
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 16 || budget <= 0 {
			return
		}
		budget--
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if s, ok := x[k].(string); ok && k == "run" {
					out = append(out, lefthookTemplates.ReplaceAllString(s, "$$F"))
					continue
				}
				walk(x[k], depth+1)
			}
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		}
	}
	walk(doc, 0)
	return out
}

// lefthookTemplates are lefthook's {staged_files}, {files}, {push_files} …
var lefthookTemplates = lazyre.New(`\{[a-z_0-9]+\}`)

// regexValues returns the first group of every match of re in text,
// unquoted when it is quoted.
func regexValues(re *lazyre.Regexp, text string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		v := strings.TrimSpace(m[1])
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out = append(out, v)
	}
	return out
}

// geminiCommands returns the !{command} parts of a Gemini CLI custom
// command's prompt ({{args}} becomes a variable: the arguments are not
// known until it is used). Text that is not TOML is searched whole.
func geminiCommands(text string) []string {
	var cmd struct {
		Prompt string `toml:"prompt"`
	}
	src := text
	if err := toml.Unmarshal([]byte(text), &cmd); err == nil {
		src = cmd.Prompt
	}
	return bangBraces(src)
}

// bangBraces returns the text inside each !{…} of s, braces balanced as
// Gemini CLI reads them; an unclosed one runs to the end.
func bangBraces(s string) []string {
	var out []string
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '!' || s[i+1] != '{' {
			continue
		}
		depth, j := 1, i+2
		for ; j < len(s) && depth > 0; j++ {
			switch s[j] {
			case '{':
				depth++
			case '}':
				depth--
			}
		}
		end := j
		if depth == 0 {
			end = j - 1
		}
		out = append(out, strings.ReplaceAll(s[i+2:end], "{{args}}", `"$ARGUMENTS"`))
		i = j - 1
	}
	return out
}

// --- VS Code settings ---

// settingsFindings judges VS Code settings text (kind "settings": a
// settings.json; "workspace": a workspace file, whose "settings" object is
// read): the programs its settings name and the command lines they hold.
func settingsFindings(r *rules, env Env, kind, p, abs, text string) ([]string, []guard.Finding) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(jsoncToJSON([]byte(text))))
	if err := dec.Decode(&doc); err != nil {
		// Not read whole: any key that may name a program reaches a
		// person (the editor reads what it can).
		for _, m := range jsonKey.FindAllStringSubmatch(jsoncPlain(text), -1) {
			if programSetting(m[1]) != "" {
				return nil, []guard.Finding{{Check: "shell.planted-setting", Level: action.Confirm, Hard: true,
					Message: fmt.Sprintf("%s would hold the setting %s, which names a program the editor runs, in text that cannot be read whole (%v)", p, m[1], err)}}
			}
		}
		return nil, nil
	}
	if kind == "workspace" {
		s, _ := doc["settings"].(map[string]any)
		doc = s
	}
	folder := path.Dir(path.Dir(abs)) // .vscode/settings.json's folder
	if kind == "workspace" {
		folder = path.Dir(abs)
	}
	if !path.IsAbs(folder) || kind == "settings" && path.Base(path.Dir(strings.ToLower(abs))) == "user" {
		folder = "" // the user's settings: relative paths are the opened folder's, not known
	}
	s := &settingsJudge{r: r, env: env, p: p, folder: folder}
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		if strings.HasPrefix(k, "[") {
			// A language's settings ("[python]": {…}).
			if m, ok := doc[k].(map[string]any); ok {
				for _, k2 := range slices.Sorted(maps.Keys(m)) {
					s.setting(k2, m[k2])
				}
			}
			continue
		}
		s.setting(k, doc[k])
	}
	return s.cmds, s.out
}

// jsonKey matches a key of JSON text.
var jsonKey = lazyre.New(`"([^"]*)"\s*:`)

// settingsJudge collects what one settings text runs.
type settingsJudge struct {
	r      *rules
	env    Env
	p      string
	folder string // the folder the settings are for, "" when not known
	cmds   []string
	out    []guard.Finding
	seen   int
}

// programSetting says what the setting key holds when it names programs
// the editor runs: "program" (a path or an argument list), "command" (a
// command line), "env" (an environment for the programs it starts), or ""
// for a setting that runs nothing.
func programSetting(key string) string {
	k := strings.ToLower(key)
	switch {
	case strings.HasPrefix(k, "terminal.integrated.env."), strings.HasSuffix(k, ".toolsenvvars"),
		strings.HasSuffix(k, ".extraenv"), strings.HasSuffix(k, ".env"):
		return "env"
	case strings.HasPrefix(k, "terminal.integrated.profiles."), strings.HasPrefix(k, "terminal.integrated.automationprofile."),
		strings.HasPrefix(k, "terminal.integrated.shell."), strings.HasPrefix(k, "terminal.integrated.shellargs."):
		return "program"
	case k == "emeraldwalk.runonsave", k == "latex-workshop.latex.tools", strings.HasPrefix(k, "runonsave."):
		return "command"
	}
	for _, skip := range []string{"editor.", "files.", "search.", "workbench.", "window.", "explorer.", "diffeditor.", "cspell."} {
		if strings.HasPrefix(k, skip) {
			return ""
		}
	}
	last := k[strings.LastIndexByte(k, '.')+1:]
	switch {
	case strings.HasSuffix(last, "commandline"), strings.HasSuffix(last, "overridecommand"),
		last == "command", last == "commands", strings.HasSuffix(last, "execargv"):
		return "command"
	case strings.HasSuffix(last, "path") && k != "jest.rootpath",
		strings.HasSuffix(last, "executable"), strings.HasSuffix(last, "interpreter"),
		last == "runtime", strings.HasSuffix(last, "wrapper"), last == "bin", strings.HasSuffix(last, "binary"),
		strings.HasSuffix(last, "lspbin"), last == "goroot", last == "gopath",
		last == "alternatetools", last == "shell", last == "shellargs":
		return "program"
	}
	return ""
}

// maxSettingValues bounds the values of one settings text judged.
const maxSettingValues = 256

// setting judges one setting.
func (s *settingsJudge) setting(key string, v any) {
	switch programSetting(key) {
	case "program":
		s.programs(key, v, 0)
	case "command":
		for _, c := range commandLines(v) {
			if strings.TrimSpace(c) == "" {
				continue
			}
			s.cmds = append(s.cmds, c)
			s.program(key, settingProgram(c))
		}
	case "env":
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			val, ok := m[k].(string)
			if !ok || !envName.MatchString(k) {
				continue
			}
			switch strings.ToUpper(k) {
			case "PATH", "GOFLAGS", "PYTHONSTARTUP", "PROMPT_COMMAND", "ENV", "ZDOTDIR", "PYTHONPATH", "NODE_PATH", "RUBYOPT", "PERL5OPT":
				if strings.TrimSpace(val) != "" {
					s.add(fmt.Sprintf("%s would set %s=%s (setting %s) for the programs the editor starts, which changes the code they run", s.p, k, val, key))
					continue
				}
			}
			s.cmds = append(s.cmds, k+"="+shellQuote(val)+" true")
		}
	}
}

var envName = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// programs judges a program setting's value: a path, an argument list
// (its first word is the program), or an object of them (a terminal
// profile's path and args, go.alternateTools' tool → path).
func (s *settingsJudge) programs(key string, v any, depth int) {
	if depth > 8 {
		return
	}
	switch x := v.(type) {
	case string:
		s.program(key, x)
	case []any:
		words := stringLeaves(x)
		if len(words) > 0 {
			s.program(key, words[0])
			s.cmds = append(s.cmds, quoteWords(words))
		}
	case map[string]any:
		if p, ok := x["path"]; ok {
			// A terminal profile: its program and arguments run together.
			progs := stringLeaves(p)
			for _, w := range progs {
				s.program(key, w)
			}
			if len(progs) > 0 {
				s.cmds = append(s.cmds, quoteWords(append(progs[:1:1], stringLeaves(x["args"])...)))
			}
			if env, ok := x["env"]; ok {
				s.setting("terminal.integrated.env.profile", env)
			}
			return
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			s.programs(key, x[k], depth+1)
		}
	}
}

// commandLines returns the command lines of a command setting: strings
// (a list of strings is one argument list) and objects' "cmd"/"command"
// values.
func commandLines(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		all := true
		for _, e := range x {
			if _, ok := e.(string); !ok {
				all = false
			}
		}
		if all && len(x) > 0 {
			return []string{quoteWords(stringLeaves(x))}
		}
		var out []string
		for _, e := range x {
			out = append(out, commandLines(e)...)
		}
		return out
	case map[string]any:
		// {"cmd": …} or {"command": …, "args": […]} (run-on-save's and
		// LaTeX Workshop's tools), or a list of them under "commands".
		for _, k := range []string{"cmd", "command"} {
			if c, ok := x[k].(string); ok {
				return []string{quoteWords(append([]string{c}, stringLeaves(x["args"])...))}
			}
		}
		return commandLines(x["commands"])
	}
	return nil
}

// settingProgram returns the first blank-separated word of a command line.
func settingProgram(c string) string {
	f := strings.Fields(c)
	if len(f) == 0 {
		return ""
	}
	return strings.Trim(f[0], `"'`)
}

// quoteWords joins an argument list as one shell command.
func quoteWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shellQuote(w)
	}
	return strings.Join(q, " ")
}

// add records a finding that reaches a person.
func (s *settingsJudge) add(msg string) {
	s.out = append(s.out, guard.Finding{Check: "shell.planted-setting", Level: action.Confirm, Hard: true, Message: msg})
}

// program judges a program the setting key names: one in the working
// tree, a temporary directory, or a place computed by the editor reaches a
// person, unless it is a link to an installed program (a virtual
// environment's interpreter).
func (s *settingsJudge) program(key, v string) {
	v = strings.TrimSpace(v)
	if v == "" || s.seen >= maxSettingValues {
		return
	}
	s.seen++
	if !strings.ContainsAny(v, `/\$~`) {
		return // a name the person's PATH finds
	}
	p, ok := s.resolve(v)
	if ok {
		an := &analyzer{r: s.r, env: Env{FS: s.env.FS, Home: s.env.Home}}
		q := an.follow(p)
		if !s.inTree(q) && !scratchDir(q) {
			return // an installed program, or a link (a virtual environment's python) to one
		}
	}
	s.add(fmt.Sprintf("%s would make the editor run %s (setting %s) when the folder opens: a program of the working tree, a temporary directory or a place not known when judged, which runs outside Overseer's view", s.p, v, key))
}

// resolve returns v as an absolute path: ${workspaceFolder} and a path
// relative to the folder against the folder, ~ against home. Other
// variables (${env:X}, ${config:X}) are not known.
func (s *settingsJudge) resolve(v string) (string, bool) {
	v = strings.ReplaceAll(v, `\`, "/")
	for _, w := range []string{"${workspaceFolder}", "${workspaceRoot}"} {
		if rest, ok := strings.CutPrefix(v, w); ok {
			if s.folder == "" {
				return "", false
			}
			v = s.folder + "/" + rest
		}
	}
	if strings.Contains(v, "$") {
		return "", false
	}
	switch {
	case v == "~" || strings.HasPrefix(v, "~/"):
		if s.env.Home == "" {
			return "", false
		}
		v = path.Join(s.env.Home, v[1:])
	case path.IsAbs(v):
	case s.folder == "":
		return "", false
	default:
		v = path.Join(s.folder, v)
	}
	return path.Clean(v), true
}

// inTree reports whether p is in the folder or the working directory.
func (s *settingsJudge) inTree(p string) bool {
	return s.folder != "" && action.Within(s.folder, p) || path.IsAbs(s.env.Cwd) && action.Within(s.env.Cwd, p)
}

// scratchDir reports whether p is in a temporary directory anyone may
// write.
func scratchDir(p string) bool {
	for _, d := range []string{"/tmp", "/var/tmp", "/dev/shm", "/private/tmp"} {
		if action.Within(d, p) {
			return true
		}
	}
	return false
}

// jsoncToJSON returns JSON with comments (VS Code's settings) as JSON:
// comments become blanks, then commas before a closing bracket go.
func jsoncToJSON(b []byte) []byte {
	return jsonPass(jsonPass(b, true), false)
}

// jsonPass copies b with its strings as they are: with comments false,
// comments become blanks; else commas followed by blanks and a closing
// bracket are left out.
func jsonPass(b []byte, comments bool) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(b) {
				return append(out, b[i:]...)
			}
			out = append(out, b[i:j+1]...)
			i = j + 1
		case comments && c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case comments && c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				return out
			}
			out = append(out, ' ')
			i += end + 4
		case !comments && c == ',':
			k := i + 1
			for k < len(b) && (b[k] == ' ' || b[k] == '\t' || b[k] == '\n' || b[k] == '\r') {
				k++
			}
			if k < len(b) && (b[k] == '}' || b[k] == ']') {
				i++
				continue
			}
			out = append(out, c)
			i++
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

// pkgSetLater judges npm pkg set KEY=VALUE … and npm set-script NAME
// COMMAND by the package.json keys they set (the file at p): an install
// script or a hook command is judged as laterText judges it written by
// hand; a key or value computed at run time reaches a person.
func (a *analyzer) pkgSetLater(s *segCtx, sub string, ops []arg, p string) {
	doc := map[string]any{}
	set := func(key string, v any) {
		parts := strings.Split(key, ".")
		m := doc
		for _, k := range parts[:len(parts)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = v
	}
	asJSON := anyFlag(s.args, "--json")
	var kv []arg
	if sub == "set-script" {
		if len(ops) < 3 {
			return
		}
		if ops[1].dyn || ops[2].dyn {
			a.add(guard.Finding{Check: "shell.planted-command", Level: action.Confirm, Hard: true,
				Message: "npm set-script sets a script computed at run time, which may run at the next install"})
			return
		}
		set("scripts."+ops[1].val, ops[2].val)
	} else if len(ops) > 2 {
		kv = ops[2:]
	}
	for _, x := range kv {
		k, v, eq := strings.Cut(x.val, "=")
		if x.dyn {
			a.add(guard.Finding{Check: "shell.planted-command", Level: action.Confirm, Hard: true,
				Message: "npm pkg set sets a key or value computed at run time: " + clip(x.val, 80) + ", which may be a script run at the next install"})
			continue
		}
		if !eq {
			continue
		}
		var val any = v
		if asJSON {
			var j any
			if json.Unmarshal([]byte(v), &j) == nil {
				val = j
			}
		}
		set(k, val)
	}
	if len(doc) == 0 {
		return
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return
	}
	for _, f := range laterText(a.r, a.env, "npm", a.display(p), p, string(b), a.plantDepth) {
		a.add(f)
	}
}

// cargoPrograms are the keys of Cargo's configuration that name programs
// (a * stands for any one table name: a target triple or cfg, a registry).
var cargoPrograms = []string{"build.rustc", "build.rustc-wrapper", "build.rustc-workspace-wrapper", "build.rustdoc",
	"target.*.runner", "target.*.linker", "target.*.ar", "host.linker", "host.*.linker", "doc.browser",
	"registry.credential-provider", "registry.global-credential-providers", "registries.*.credential-provider",
	"credential-alias.*"}

// yarnV1Path matches .yarnrc's yarn-path line.
var yarnV1Path = lazyre.New(`(?m)^\s*yarn-path\s+(.+)$`)

// toolConfigFindings judges Cargo's and Yarn's configuration text as
// VS Code settings are judged: programs of the tree, a temporary
// directory or a computed place reach a person; relative paths are the
// project's (the directory that holds .cargo, or the .yarnrc's).
func toolConfigFindings(r *rules, env Env, kind, p, abs, text string) ([]string, []guard.Finding) {
	folder := path.Dir(abs)
	if kind == "cargo" {
		folder = path.Dir(folder)
	}
	if !path.IsAbs(folder) {
		folder = ""
	}
	s := &settingsJudge{r: r, env: env, p: p, folder: folder}
	unread := func(err error) []guard.Finding {
		return []guard.Finding{{Check: "shell.planted-setting", Level: action.Confirm, Hard: true,
			Message: fmt.Sprintf("%s would be %s in text that cannot be read whole (%v)", p, laterKinds[kind], err)}}
	}
	switch {
	case kind == "cargo":
		var doc map[string]any
		if err := toml.Unmarshal([]byte(text), &doc); err != nil {
			return nil, unread(err)
		}
		for _, pat := range cargoPrograms {
			for _, v := range tomlLookup(doc, strings.Split(pat, ".")) {
				s.programs(pat, v, 0)
			}
		}
		if e, ok := doc["env"].(map[string]any); ok {
			vals := map[string]any{}
			for k, v := range e {
				if m, ok := v.(map[string]any); ok {
					v = m["value"]
				}
				vals[k] = v
			}
			s.setting("cargo.env", vals)
		}
	case path.Base(strings.ToLower(abs)) == ".yarnrc":
		for _, v := range regexValues(yarnV1Path, text) {
			s.program("yarn-path", v)
		}
	default:
		var doc struct {
			YarnPath string `yaml:"yarnPath"`
			Plugins  []any  `yaml:"plugins"`
		}
		if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
			return nil, unread(err)
		}
		s.program("yarnPath", doc.YarnPath)
		for _, pl := range doc.Plugins {
			switch x := pl.(type) {
			case string:
				s.program("plugins", x)
			case map[string]any:
				if v, ok := x["path"].(string); ok {
					s.program("plugins", v)
				}
			}
		}
	}
	return s.cmds, s.out
}

// tomlLookup returns the values at the dotted key parts in doc, a "*"
// part matching every key of its table.
func tomlLookup(doc map[string]any, parts []string) []any {
	if len(parts) == 0 {
		return nil
	}
	var keys []string
	if parts[0] == "*" {
		keys = slices.Sorted(maps.Keys(doc))
	} else {
		keys = []string{parts[0]}
	}
	var out []any
	for _, k := range keys {
		v, ok := doc[k]
		if !ok {
			continue
		}
		if len(parts) == 1 {
			out = append(out, v)
			continue
		}
		if m, ok := v.(map[string]any); ok {
			out = append(out, tomlLookup(m, parts[1:])...)
		}
	}
	return out
}

// collectLater records the paths of planted commands (Facts.Later) for
// the paths guard.
func (e Env) collectLater(ps []action.PathFact) {
	if e.later == nil {
		return
	}
	for _, p := range ps {
		if !containsPath(*e.later, p) {
			*e.later = append(*e.later, p)
		}
	}
}
