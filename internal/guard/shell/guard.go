package shell

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"reflect"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/netguard"
)

// ErrNilAction is returned by Check for a nil action.
var ErrNilAction = errors.New("shell guard: nil action")

// Guard is the shell guard. It is immutable and safe for concurrent use.
type Guard struct {
	r    *rules
	home string
	fsys fs.FS // nil: the operating system's file system
	self *netguard.SelfAPI
	vars map[string]string // known environment variables (Env.Vars)
}

var _ guard.Guard = (*Guard)(nil)

// New returns a shell guard whose lists are the defaults extended by cfg.
// The home directory is read from $HOME once, here.
func New(cfg Config) (*Guard, error) {
	if reflect.DeepEqual(cfg, Config{}) {
		// Nothing to add to the defaults: their compiled form is shared.
		return &Guard{r: defaultRules(), home: os.Getenv("HOME")}, nil
	}
	r, err := compile(merge(defaultConfig(), cfg))
	if err != nil {
		return nil, err
	}
	return &Guard{r: r, home: os.Getenv("HOME")}, nil
}

// WithVars returns a copy of g that knows the values of these environment
// variables (see Env.Vars).
func (g *Guard) WithVars(vars map[string]string) *Guard {
	c := *g
	c.vars = vars
	return &c
}

// Name returns "shell".
func (g *Guard) Name() string { return "shell" }

// Analyze parses and judges command with this guard's lists.
func (g *Guard) Analyze(command string, env Env) Analysis {
	return analyze(g.r, command, env)
}

// Check judges an action of kind shell: it reads the command from
// args.command (a string, or a list of strings that is shell-quoted and
// joined) or args.cmd, fills a.Facts (commands, paths, URLs, notes) and
// returns the findings. A missing command is a finding at approve.
func (g *Guard) Check(ctx context.Context, a *action.Action) ([]guard.Finding, error) {
	if a == nil {
		return nil, ErrNilAction
	}
	a.Facts.Later = nil // the shell guard's to say, never a caller's
	if isSkillCall(a) {
		return g.checkSkill(ctx, a)
	}
	var skill []guard.Finding
	if a.Kind == action.KindFileWrite || a.Kind == action.KindFileEdit {
		p, ok := a.StringArg("file_path", "path")
		kind := ""
		if ok {
			kind, _ = g.plantedTarget(p, a.Cwd) // planted.go: by name, or through a link
		}
		switch kind {
		case "skill":
			var err error
			if skill, err = g.checkSkillWrite(ctx, a, p); err != nil {
				return nil, err
			}
		case "tasks":
			skill = g.editorTaskFindings(a, p)
		default:
			if _, later := laterKinds[kind]; later {
				skill = g.laterWrite(a, p, kind)
			}
		}
		if ok && isTerraformFile(p) {
			skill = append(skill, terraformWriteFindings(p, g.writtenText(a, p))...) // infra.go
		}
	}
	if a.Kind != action.KindShell {
		// A patch (Codex's apply_patch) is judged by what it leaves in
		// the files that run later (planted.go), whatever the kind.
		skill = append(skill, g.patchPlanted(a)...)
		// The caller's word for the kind is not trusted: a command string
		// under any other kind is judged as the shell command it is.
		if c, ok := a.Args["command"].(string); !ok || strings.TrimSpace(c) == "" {
			return skill, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd, why := commandOf(a.Args)
	if why != "" {
		a.Facts.Notes = append(a.Facts.Notes, "shell: "+why)
		return []guard.Finding{{Check: "shell.no-command", Level: action.Approve, Hard: true,
			Message: "the shell action has no command that can be judged: " + why}}, nil
	}
	an := analyze(g.r, cmd, Env{Cwd: a.Cwd, Home: g.home, FS: g.fsys, SelfAPI: g.self, Vars: g.vars, later: &a.Facts.Later})
	// The shell guard owns Facts.Commands: a second check replaces them.
	a.Facts.Commands = make([]action.Command, 0, len(an.Segments))
	for _, s := range an.Segments {
		a.Facts.Commands = append(a.Facts.Commands, action.Command{Name: s.Name, Args: s.Args, Dynamic: s.Dynamic, Stdin: s.Stdin,
			PipedFiles: s.PipedFiles, LocalCluster: s.LocalCluster != "", Quiet: s.Level == action.Auto})
		if g.r.downloaders.has(s.Name) || g.r.netSenders.has(s.Name) {
			for _, x := range s.Args {
				if strings.Contains(x, "://") && !containsString(a.Facts.URLs, x) {
					a.Facts.URLs = append(a.Facts.URLs, x)
				}
			}
		}
	}
	for _, p := range an.Paths {
		if !containsPath(a.Facts.Paths, p) {
			a.Facts.Paths = append(a.Facts.Paths, p)
		}
	}
	if an.ParseFailed {
		a.Facts.Notes = append(a.Facts.Notes, "shell: unparseable: "+an.ParseError)
	}
	return append(an.Findings, skill...), nil
}

// commandOf returns the command of a shell action's arguments, or why there
// is none.
func commandOf(args map[string]any) (string, string) {
	for _, k := range []string{"command", "cmd"} {
		v, ok := args[k]
		if !ok {
			continue
		}
		switch v := v.(type) {
		case string:
			if strings.TrimSpace(v) == "" {
				return "", "args." + k + " is empty"
			}
			return v, ""
		case []string:
			return joinArgv(v, k)
		case []any:
			argv := make([]string, 0, len(v))
			for _, e := range v {
				s, ok := e.(string)
				if !ok {
					return "", "args." + k + " is a list with an element that is not a string"
				}
				argv = append(argv, s)
			}
			return joinArgv(argv, k)
		default:
			return "", "args." + k + " is not a string or a list of strings"
		}
	}
	return "", "args.command is missing"
}

// joinArgv quotes each argument for the shell and joins them.
func joinArgv(argv []string, key string) (string, string) {
	if len(argv) == 0 {
		return "", "args." + key + " is an empty list"
	}
	parts := make([]string, len(argv))
	for i, s := range argv {
		q, err := syntax.Quote(s, syntax.LangBash)
		if err != nil {
			return "", "args." + key + " has an argument that cannot be quoted: " + err.Error()
		}
		parts[i] = q
	}
	return strings.Join(parts, " "), ""
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsPath(list []action.PathFact, p action.PathFact) bool {
	for _, x := range list {
		if x == p {
			return true
		}
	}
	return false
}
