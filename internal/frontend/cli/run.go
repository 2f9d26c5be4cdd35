package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/overseer-dev/overseer/internal/agent"
	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/plugin"
)

// Files of the supervised mode in Overseer's home.
const (
	// LLMConfigName is the model configuration used when --model is not given.
	LLMConfigName = "llm.json"
	// MemoryName is the long-term memory's database.
	MemoryName = "memory.db"
)

// Exit statuses of `overseer run` and `overseer resume`.
const (
	exitDone    = 0
	exitFailed  = 1
	exitAborted = 2
	exitPaused  = 3 // paused, or waiting for a person
)

func init() {
	extraCommands = append(extraCommands, (*app).runCmd, (*app).tasksCmd, (*app).resumeCmd, (*app).abortCmd)
}

// runFlags are the flags shared by run and resume.
type runFlags struct {
	model, llmConfig string
	maxSteps         int
	noPlan, noMCP    bool
	answerHere       bool
	validate         []string
	maxRejections    int
}

func (f *runFlags) register(cmd *cobra.Command, resume bool) {
	cmd.Flags().StringVar(&f.model, "model", "", "the model: ollama:NAME, openai:NAME or anthropic:NAME, with @BASE_URL for another server (default: $OVERSEER_HOME/"+LLMConfigName+")")
	cmd.Flags().StringVar(&f.llmConfig, "llm-config", "", "a model configuration file (llm.router JSON: default model and routes by purpose)")
	help := "the most steps the task may take (default 50)"
	if resume {
		help = "the steps a task paused at its step limit gets for this run (default: its budget)"
	}
	cmd.Flags().IntVar(&f.maxSteps, "max-steps", 0, help)
	cmd.Flags().BoolVar(&f.noPlan, "no-plan", false, "do not break the task into subtasks first")
	cmd.Flags().BoolVar(&f.noMCP, "no-mcp", false, "do not offer the tools of the MCP servers in $OVERSEER_HOME/mcp.yaml")
	cmd.Flags().BoolVar(&f.answerHere, "answer-here", false, "read answers from standard input even when it is not a terminal (it always is read from a terminal)")
	cmd.Flags().StringArrayVar(&f.validate, "validate", nil, "a regular expression every reply must match (repeatable); a reply that does not is rejected and asked again")
	cmd.Flags().IntVar(&f.maxRejections, "max-rejections", agent.DefaultMaxRejections, "how many rejected replies in a row bring a person in")
}

func (a *app) runCmd() *cobra.Command {
	var (
		f   runFlags
		cwd string
	)
	cmd := &cobra.Command{
		Use:   "run TASK",
		Short: "Run a task with Overseer's own agent, under the firewall",
		Long: `Run a task with Overseer's own agent loop (supervised mode): a model decides
each step, the firewall judges every decision, and tools run only what it lets
through. Calls that need a person wait for an answer: typed right here when
this runs in a terminal (y, n, stop, or words for the agent), or from anywhere
else ('overseer approve ID', 'overseer deny ID --reason …', the web console, the
terminal UI) — the first answer wins. The agent must ask a person before it may
declare the task done.

The task is stored and checkpointed after every step: 'overseer tasks' lists
tasks, 'overseer resume ID' goes on after a pause, a step limit or a restart,
and 'overseer abort ID' stops one (a second abort stops it at once).

Exit status: 0 done, 1 failed, 2 aborted, 3 paused or waiting for a person.`,
		Example: `  overseer run --model ollama:qwen2.5-coder:14b "add a --verbose flag to main.go"
  overseer run --model openai:gpt-4o "summarise the TODOs in this repository"
  overseer run --model anthropic:claude-sonnet-4-5 --max-steps 20 "fix the failing test"
  overseer run --model openai:llama3@http://127.0.0.1:8080/v1 "list the largest files here"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			goal := strings.TrimSpace(args[0])
			if goal == "" {
				return exit(2, errors.New("the task is empty"))
			}
			if f.maxSteps < 0 {
				return exit(2, errors.New("--max-steps must be positive"))
			}
			dir, err := workDir(cwd)
			if err != nil {
				return err
			}
			return a.withLoop(cmd.Context(), f, "", func(ctx context.Context, l *agent.Loop, ts *task.Store, model string) error {
				budget := f.maxSteps
				if budget == 0 {
					budget = agent.DefaultMaxSteps
				}
				// A task started without a plan is not planned when resumed.
				t := &task.Task{Goal: goal, Model: model, Budget: budget, MaxSteps: budget, Cwd: dir, Planned: f.noPlan}
				if err := ts.Create(ctx, t); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "task %s: %s\n", t.ID, goal)
				return a.runTask(ctx, l, t.ID, agent.Options{})
			})
		},
	}
	f.register(cmd, false)
	cmd.Flags().StringVar(&cwd, "cwd", "", "the directory the task works in (default the current one)")
	return cmd
}

func (a *app) resumeCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "resume ID",
		Short: "Go on with a paused, waiting, failed or captured task from its checkpoint",
		Long: `Resume a task from its last checkpoint: after a pause at the step limit (it
gets another budget of steps), an interruption, a restart of the machine, a
failure, or a task captured with 'overseer tasks add'. The model it ran with is
used again unless --model or --llm-config is given. An ID prefix is enough.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.maxSteps < 0 {
				return exit(2, errors.New("--max-steps must be positive"))
			}
			return a.withLoop(cmd.Context(), f, args[0], func(ctx context.Context, l *agent.Loop, ts *task.Store, _ string) error {
				t, err := ts.Get(ctx, args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "resuming task %s (%s, step %d): %s\n", t.ID, t.Status, t.Step, t.Goal)
				return a.runTask(ctx, l, t.ID, agent.Options{MoreSteps: f.maxSteps})
			})
		},
	}
	f.register(cmd, true)
	return cmd
}

// runTask runs a task and turns its end into the exit status.
func (a *app) runTask(ctx context.Context, l *agent.Loop, id string, opts agent.Options) error {
	sctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	t, err := l.Run(sctx, id, opts)
	if t != nil {
		a.printOutcome(t)
	}
	if err != nil {
		if t != nil && t.Error != "" {
			return exit(exitFailed, nil) // printed with the outcome
		}
		return exit(exitFailed, err)
	}
	switch t.Status {
	case task.Done:
		return nil
	case task.Aborted:
		return exit(exitAborted, nil)
	case task.Failed:
		return exit(exitFailed, errors.New(t.Error))
	}
	return exit(exitPaused, nil)
}

func (a *app) printOutcome(t *task.Task) {
	u := t.Usage
	fmt.Fprintf(a.stdout, "\ntask %s: %s after %d steps · %d in / %d out tokens", t.ID, t.Status, t.Step, u.InputTokens, u.OutputTokens)
	if u.CostUSD > 0 {
		fmt.Fprintf(a.stdout, " · $%.4f", u.CostUSD)
	}
	fmt.Fprintln(a.stdout)
	if t.Result != "" {
		fmt.Fprintln(a.stdout, t.Result)
	}
	if t.Error != "" {
		fmt.Fprintln(a.stdout, "error:", t.Error)
		fmt.Fprintf(a.stdout, "the task is checkpointed: once the problem is fixed, go on with `overseer resume %s`\n", t.ID)
	}
}

func workDir(dir string) (string, error) {
	if dir == "" {
		d, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = d
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return dir, nil
}

// withLoop opens the kernel and the plugins of the supervised mode and calls
// fn with a ready loop. resumeID, when set, names the task whose model is
// used when no model is given.
func (a *app) withLoop(ctx context.Context, f runFlags, resumeID string,
	fn func(ctx context.Context, l *agent.Loop, ts *task.Store, model string) error) error {
	k, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer k.Close()
	ts := agent.NewTaskStore(k, nil)
	model := f.model
	if f.llmConfig != "" {
		abs, err := filepath.Abs(f.llmConfig)
		if err != nil {
			return err
		}
		model = "config:" + abs
	}
	if model == "" && resumeID != "" {
		t, err := ts.Get(ctx, resumeID)
		if err != nil {
			return err
		}
		model = t.Model
	}
	llm, model, err := buildLLM(k.Home, model)
	if err != nil {
		return exit(2, err)
	}
	tools, closeTools, err := a.runTools(ctx, k.Home, f.noMCP)
	if err != nil {
		return err
	}
	defer closeTools()
	cfg := agent.Config{Kernel: k, Tasks: ts, LLM: llm, Tools: tools, Out: a.stdout, MaxRejections: f.maxRejections, SubTasks: true}
	if f.answerHere || isTerminalIn(a.stdin) {
		cfg.Answers, cfg.Who = readLines(a.stdin), whoami()
	}
	if cfg.Context, err = newPlugin[plugin.Context]("context.standard", nil); err != nil {
		return err
	}
	if !f.noPlan {
		if cfg.Planner, err = newPlugin[plugin.Planner]("plan.llm", nil); err != nil {
			return err
		}
	}
	memCfg, _ := json.Marshal(map[string]string{"path": filepath.Join(k.Home, MemoryName)})
	mem, err := newPlugin[plugin.Memory]("memory.sqlite", memCfg)
	if err != nil {
		return err
	}
	if c, ok := mem.(interface{ Close() error }); ok {
		defer c.Close()
	}
	cfg.Memory = mem
	if cfg.Validator, err = regexValidator(f.validate); err != nil {
		return exit(2, err)
	}
	l, err := agent.New(ctx, cfg)
	if err != nil {
		return err
	}
	return fn(ctx, l, ts, model)
}

// newPlugin builds plugin id and checks that it is a T.
func newPlugin[T any](id string, cfg json.RawMessage) (T, error) {
	var zero T
	inst, err := plugin.New(id, cfg)
	if err != nil {
		return zero, err
	}
	v, ok := inst.(T)
	if !ok {
		return zero, fmt.Errorf("plugin %s does not have the expected interface", id)
	}
	return v, nil
}

// runTools builds the tools of the supervised mode: the builtin tools (with
// $OVERSEER_HOME/tools.json when present) and the servers of the MCP
// gateway's configuration ($OVERSEER_HOME/mcp.yaml when present, unless
// noMCP).
func (a *app) runTools(ctx context.Context, home string, noMCP bool) ([]plugin.Tool, func(), error) {
	t, err := a.loadTool(toolFlags{pluginID: defaultToolPlugin})
	if err != nil {
		return nil, nil, err
	}
	tools := []plugin.Tool{t}
	if noMCP {
		return tools, func() {}, nil
	}
	raw, err := mcpToolConfig(filepath.Join(home, "mcp.yaml"), a.stderr)
	if err != nil || raw == nil {
		return tools, func() {}, err
	}
	mt, err := newPlugin[plugin.Tool]("tool.mcp", raw)
	if err != nil {
		return nil, nil, fmt.Errorf("the MCP servers of mcp.yaml: %w", err)
	}
	closeMCP := func() {
		if c, ok := mt.(io.Closer); ok {
			_ = c.Close()
		}
	}
	return append(tools, mt), closeMCP, nil
}

// canonicalArgs are the argument names under which the guards find a
// kind's subject.
var canonicalArgs = map[string][]string{
	"shell":       {"command"},
	"net_fetch":   {"url"},
	"sql":         {"query"},
	"file_read":   {"path", "file_path", "filepath", "filename", "file", "notebook_path", "target"},
	"file_write":  {"path", "file_path", "filepath", "filename", "file", "notebook_path", "target"},
	"file_edit":   {"path", "file_path", "filepath", "filename", "file", "notebook_path", "target"},
	"file_delete": {"path", "file_path", "filepath", "filename", "file", "notebook_path", "target"},
}

// mcpToolConfig turns the servers of the MCP gateway's configuration file
// into the tool.mcp plugin's configuration; nil when the file does not
// exist or names no server. A tool mapped to a kind whose subject argument
// the guards would not find under its name keeps the kind "mcp" (a person
// is asked) instead: in the supervised mode the arguments reach the server
// exactly as judged, so they are not copied to another name.
func mcpToolConfig(file string, warn io.Writer) (json.RawMessage, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Servers map[string]map[string]any `yaml:"servers"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(doc.Servers) == 0 {
		return nil, nil
	}
	for name, srv := range doc.Servers {
		if srv == nil {
			continue
		}
		delete(srv, "ping") // health is checked at each call
		tools, _ := srv["tools"].(map[string]any)
		for tool, m := range tools {
			mm, _ := m.(map[string]any)
			kind, _ := mm["kind"].(string)
			arg, _ := mm["arg"].(string)
			if names, ok := canonicalArgs[kind]; ok && arg != "" && !slices.Contains(names, arg) {
				fmt.Fprintf(warn, "overseer: mcp.yaml: %s__%s: in overseer run the guards cannot read %q as a %s subject; the tool is judged as an MCP call (a person is asked)\n",
					name, tool, arg, kind)
				delete(tools, tool)
			}
		}
	}
	return json.Marshal(map[string]any{"servers": doc.Servers})
}

// regexValidator builds the response validator from --validate patterns.
func regexValidator(patterns []string) (agent.Validator, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	var res []*regexp.Regexp
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("--validate %q: %w", p, err)
		}
		res = append(res, re)
	}
	return func(reply string) error {
		for _, re := range res {
			if !re.MatchString(reply) {
				return fmt.Errorf("the reply does not match %q", re.String())
			}
		}
		return nil
	}, nil
}

// buildLLM builds the model from a specification: "config:FILE", a
// provider shorthand, or "" for $OVERSEER_HOME/llm.json. It returns the
// specification to store with the task.
func buildLLM(home, spec string) (plugin.LLM, string, error) {
	var raw []byte
	switch {
	case spec == "":
		p := filepath.Join(home, LLMConfigName)
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil, "", fmt.Errorf("no model configured: give --model (e.g. --model ollama:qwen2.5-coder:14b) or write %s (see docs/run.md)", p)
		}
		if err != nil {
			return nil, "", err
		}
		raw, spec = b, "config:"+p
	case strings.HasPrefix(spec, "config:"):
		b, err := os.ReadFile(strings.TrimPrefix(spec, "config:"))
		if err != nil {
			return nil, "", fmt.Errorf("reading the model configuration: %w", err)
		}
		raw = b
	default:
		target, err := modelTarget(spec)
		if err != nil {
			return nil, "", err
		}
		raw, _ = json.Marshal(map[string]any{"default": target})
	}
	llm, err := newPlugin[plugin.LLM]("llm.router", raw)
	if err != nil {
		return nil, "", fmt.Errorf("model %s: %w", spec, err)
	}
	return llm, spec, nil
}

// modelTarget turns PROVIDER:MODEL[@BASE_URL] into a router target.
func modelTarget(spec string) (map[string]any, error) {
	provider, rest, ok := strings.Cut(spec, ":")
	if !ok || rest == "" {
		return nil, fmt.Errorf("--model %q: want PROVIDER:MODEL, e.g. ollama:qwen2.5-coder:14b, openai:gpt-4o or anthropic:claude-sonnet-4-5", spec)
	}
	model, baseURL := rest, ""
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		model, baseURL = rest[:i], rest[i+1:]
		if !strings.HasPrefix(baseURL, "http://") && !strings.HasPrefix(baseURL, "https://") {
			return nil, fmt.Errorf("--model %q: the base URL after @ must start with http:// or https://", spec)
		}
	}
	if model == "" {
		return nil, fmt.Errorf("--model %q: no model name", spec)
	}
	cfg := map[string]any{"model": model}
	if baseURL != "" {
		cfg["base_url"] = baseURL
	}
	switch strings.ToLower(provider) {
	case "ollama":
		if baseURL == "" {
			cfg["base_url"] = "http://127.0.0.1:11434/v1"
		}
		return map[string]any{"plugin": "llm.openai", "config": cfg}, nil
	case "openai":
		if os.Getenv("OPENAI_API_KEY") != "" {
			cfg["api_key_env"] = "OPENAI_API_KEY"
		}
		return map[string]any{"plugin": "llm.openai", "config": cfg}, nil
	case "anthropic":
		return map[string]any{"plugin": "llm.anthropic", "config": cfg}, nil
	}
	return nil, fmt.Errorf("--model %q: unknown provider %q (want ollama, openai or anthropic)", spec, provider)
}

func (a *app) tasksCmd() *cobra.Command {
	var (
		statuses []string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "List the tasks of the supervised mode",
		Long: `List tasks, newest first: captured ones (inbox, someday, waiting), running,
waiting for a person, paused and ended (done, failed, aborted).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var want []task.Status
			for _, s := range statuses {
				st := task.Status(s)
				if !st.Valid() {
					return exit(2, fmt.Errorf("unknown status %q (want one of %s)", s, statusNames()))
				}
				want = append(want, st)
			}
			return a.withTasks(cmd.Context(), func(ctx context.Context, ts *task.Store) error {
				list, err := ts.List(ctx, want)
				if err != nil {
					return err
				}
				if asJSON {
					if list == nil {
						list = []*task.Task{}
					}
					return a.printJSON(list)
				}
				if len(list) == 0 {
					fmt.Fprintln(a.stdout, "no tasks")
					return nil
				}
				w := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tSTATUS\tSTEPS\tTOKENS\tUPDATED\tTASK")
				for _, t := range list {
					status := string(t.Status)
					if (t.Status == task.Running || t.Status == task.WaitingPerson) && !ts.Live(t, agent.StaleAfter) {
						status += " (stopped)"
					}
					fmt.Fprintf(w, "%s\t%s\t%d/%d\t%d\t%s\t%s\n", t.ID, status, t.Step, t.MaxSteps,
						t.Usage.InputTokens+t.Usage.OutputTokens, t.UpdatedAt.Local().Format("2006-01-02 15:04"), agent.OneLine(t.Goal, 60))
				}
				return w.Flush()
			})
		},
	}
	cmd.Flags().StringSliceVar(&statuses, "status", nil, "only tasks with these statuses ("+statusNames()+")")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tasks as JSON")
	cmd.AddCommand(a.tasksAddCmd(), a.tasksShowCmd())
	return cmd
}

func statusNames() string {
	var s []string
	for _, st := range task.Statuses {
		s = append(s, string(st))
	}
	return strings.Join(s, ", ")
}

func (a *app) withTasks(ctx context.Context, fn func(ctx context.Context, ts *task.Store) error) error {
	return a.withKernelTasks(ctx, func(ctx context.Context, _ *kernel.Kernel, ts *task.Store) error { return fn(ctx, ts) })
}

func (a *app) withKernelTasks(ctx context.Context, fn func(ctx context.Context, k *kernel.Kernel, ts *task.Store) error) error {
	k, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer k.Close()
	return fn(ctx, k, agent.NewTaskStore(k, nil))
}

func (a *app) tasksAddCmd() *cobra.Command {
	var (
		someday, waiting bool
		cwd              string
		maxSteps         int
	)
	cmd := &cobra.Command{
		Use:   "add TASK",
		Short: "Capture a task without running it (inbox; or --someday, --waiting)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if someday && waiting {
				return exit(2, errors.New("--someday and --waiting exclude each other"))
			}
			dir, err := workDir(cwd)
			if err != nil {
				return err
			}
			st := task.Inbox
			if someday {
				st = task.Someday
			} else if waiting {
				st = task.Waiting
			}
			if maxSteps <= 0 {
				maxSteps = agent.DefaultMaxSteps
			}
			return a.withTasks(cmd.Context(), func(ctx context.Context, ts *task.Store) error {
				t := &task.Task{Goal: args[0], Status: st, Cwd: dir, Budget: maxSteps, MaxSteps: maxSteps}
				if err := ts.Create(ctx, t); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%s (%s): %s\nrun it with: overseer resume %s --model …\n", t.ID, t.Status, t.Goal, t.ID)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&someday, "someday", false, "defer it (someday)")
	cmd.Flags().BoolVar(&waiting, "waiting", false, "it is blocked on something outside (waiting)")
	cmd.Flags().StringVar(&cwd, "cwd", "", "the directory the task will work in (default the current one)")
	cmd.Flags().IntVar(&maxSteps, "max-steps", 0, "the task's step budget (default 50)")
	return cmd
}

func (a *app) tasksShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a task: its steps, plan, people's decisions and usage",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withTasks(cmd.Context(), func(ctx context.Context, ts *task.Store) error {
				t, err := ts.Get(ctx, args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(t)
				}
				w := a.stdout
				fmt.Fprintf(w, "task %s: %s\nstatus: %s · step %d of %d · %d in / %d out tokens · $%.4f · %s\n",
					t.ID, t.Goal, t.Status, t.Step, t.MaxSteps, t.Usage.InputTokens, t.Usage.OutputTokens, t.Usage.CostUSD, t.Elapsed.Round(time.Second))
				if t.Model != "" {
					fmt.Fprintf(w, "model: %s\n", t.Model)
				}
				if t.Parent != "" {
					fmt.Fprintf(w, "sub-task of %s · tools %s", t.Parent, strings.Join(t.Tools, ", "))
					if t.Grant != "" {
						fmt.Fprintf(w, " · grant %s", t.Grant)
					}
					fmt.Fprintln(w)
				}
				if t.Plan != nil && len(t.Plan.Subtasks) > 0 {
					fmt.Fprintln(w, "plan:")
					for i, s := range t.Plan.Subtasks {
						mark := " "
						if s.Done {
							mark = "x"
						}
						fmt.Fprintf(w, "  [%s] %d. %s\n", mark, i+1, s.Title)
					}
				}
				if len(t.HumanDecisions) > 0 {
					fmt.Fprintln(w, "people's decisions:")
					for _, d := range t.HumanDecisions {
						fmt.Fprintf(w, "  %s\n", d)
					}
				}
				byStep, byModel := usageTables(t.StepUsage)
				if len(byModel) > 1 {
					fmt.Fprintln(w, "usage by model:")
					for _, m := range byModel {
						fmt.Fprintf(w, "  %s (%s): %d in / %d out tokens · $%.4f\n", m.model, strings.Join(m.purposes, ", "),
							m.usage.InputTokens, m.usage.OutputTokens, m.usage.CostUSD)
					}
				}
				fmt.Fprintf(w, "steps:%32s\n", "tokens")
				for _, s := range t.Steps {
					what := s.Action
					if s.Tool != "" {
						what = s.Tool
					}
					u := byStep[s.N]
					fmt.Fprintf(w, "  %3d  %-12s %-10s %7d  %s\n", s.N, agent.OneLine(what, 12), s.Outcome, u.InputTokens+u.OutputTokens,
						agent.OneLine(agent.FirstNonEmpty(s.Note, s.Human, s.Output, s.Intent), 90))
				}
				if t.Pending != "" {
					fmt.Fprintf(w, "waiting on approval %s\n", t.Pending)
				}
				if t.Result != "" {
					fmt.Fprintf(w, "result: %s\n", t.Result)
				}
				if t.Error != "" {
					fmt.Fprintf(w, "error: %s\n", t.Error)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole task record (its checkpoint) as JSON")
	return cmd
}

// modelUsage is what one model was used for in a task, and its usage.
type modelUsage struct {
	model    string
	purposes []string
	usage    plugin.Usage
}

// usageTables sums a task's model calls by step and by model (in the order
// the models were first used).
func usageTables(calls []task.StepUsage) (map[int]plugin.Usage, []*modelUsage) {
	byStep := map[int]plugin.Usage{}
	var byModel []*modelUsage
	index := map[string]*modelUsage{}
	for _, c := range calls {
		byStep[c.Step] = byStep[c.Step].Add(c.Usage)
		m := index[c.Model]
		if m == nil {
			m = &modelUsage{model: c.Model}
			index[c.Model] = m
			byModel = append(byModel, m)
		}
		m.usage = m.usage.Add(c.Usage)
		if !slices.Contains(m.purposes, c.Purpose) {
			m.purposes = append(m.purposes, c.Purpose)
		}
	}
	return byStep, byModel
}

func (a *app) abortCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "abort ID",
		Short: "Abort a task: the first abort stops it after its current step, a second one at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withKernelTasks(cmd.Context(), func(ctx context.Context, k *kernel.Kernel, ts *task.Store) error {
				t, err := agent.Abort(ctx, k, ts, args[0], whoami(), "cli")
				if err != nil {
					return exit(exitFailed, err)
				}
				switch {
				case t.Status == task.Aborted:
					fmt.Fprintf(a.stdout, "task %s aborted\n", t.ID)
				case t.Aborts == 1:
					fmt.Fprintf(a.stdout, "task %s will stop after its current step (abort again to stop it at once)\n", t.ID)
				default:
					fmt.Fprintf(a.stdout, "task %s is being stopped now\n", t.ID)
				}
				return nil
			})
		},
	}
}

// isTerminalIn reports whether r is a terminal.
func isTerminalIn(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTerminal(f)
}

// readLines reads r line by line, stamping each line with when it was
// read. The goroutine ends at the end of r (or stays blocked reading a
// terminal until the process exits).
func readLines(r io.Reader) <-chan agent.Line {
	ch := make(chan agent.Line)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- agent.Line{Text: sc.Text(), At: time.Now()}
		}
	}()
	return ch
}
