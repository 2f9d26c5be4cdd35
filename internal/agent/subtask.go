package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/grant"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/plugin"
)

// Sub-tasks (delegated mode in the own loop). A task may hand part of its
// work to a sub-task — as Claude Code's main agent hands work to a
// sub-agent — with the builtin tool "subtask": a goal, the tools it may
// call and a number of steps. The call is judged like every other (inside
// the task's grant when "subtask" is among its tools). The sub-task is a
// task of its own (recorded, checkpointed, visible in `overseer tasks`)
// that runs to its end before the parent's step ends; its result is the
// tool's output.
//
// Its calls are agent "overseer" in the parent's session, as the
// sub-agent of type "subtask" with the sub-task's id: the parent's grant
// (for the main agent) never covers them. When the parent holds a grant,
// the sub-task gets one carved out of it (kernel.IssueChildGrant,
// grant.WithinAsSubTask): the parent's permits narrowed to the sub-task's
// tools, at most the steps asked for and what the parent has left of its
// tokens and cost, the parent's expiry. So inside it the sub-task acts
// without asking, a call outside it goes to a person, it can never get
// more than the parent has, its use is charged to the parent too, and
// revoking the parent revokes it. Its grant is revoked when it ends. A
// parent without a grant gives none: the sub-task's calls are judged by
// the policy, as the parent's are. A sub-task cannot start sub-tasks.

// SubTaskTool is the name of the builtin tool that starts a sub-task.
const SubTaskTool = "subtask"

// Bounds of a sub-task.
const (
	defaultSubTaskSteps = 10
	maxSubTaskSteps     = 50
	maxSubTaskGoal      = 8 << 10
)

var subTaskSpec = plugin.ToolSpec{
	Name: SubTaskTool,
	Description: "Start a sub-task: another run of this agent with its own goal, limited to the tools listed and a " +
		"number of steps. It runs to its end; its summary is the result. Inside your grant (if you hold one) the " +
		"sub-task gets a part of it: never more than you have left.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"goal":{"type":"string","description":"what the sub-task must do"},` +
		`"tools":{"type":"array","items":{"type":"string"},"description":"the tools it may call (a subset of yours)"},` +
		`"steps":{"type":"integer","description":"at most this many steps (default 10, at most 50)"}},` +
		`"required":["goal","tools"],"additionalProperties":false}`),
	Kind: "other",
}

// specs are the tools the task's model may call: a sub-task's own list,
// else every tool (and "subtask" when sub-tasks are on).
func (r *run) specs() []plugin.ToolSpec {
	if r.t.Parent != "" {
		var out []plugin.ToolSpec
		for _, s := range r.l.specs {
			if slices.Contains(r.t.Tools, s.Name) {
				out = append(out, s)
			}
		}
		return out
	}
	if r.l.cfg.SubTasks {
		return append(slices.Clip(r.l.specs), subTaskSpec)
	}
	return r.l.specs
}

// tool returns the tool the task may call by name.
func (r *run) tool(name string) (plugin.Tool, bool) {
	if name == SubTaskTool && r.t.Parent == "" && r.l.cfg.SubTasks {
		if _, clash := r.l.tools[name]; !clash {
			return subTaskRunner{r: r}, true
		}
	}
	if r.t.Parent != "" && !slices.Contains(r.t.Tools, name) {
		return nil, false
	}
	t, ok := r.l.tools[name]
	return t, ok
}

// subTaskRunner is the "subtask" tool of one run: Execute runs only once
// the kernel let the call through.
type subTaskRunner struct{ r *run }

func (s subTaskRunner) Tools(context.Context) ([]plugin.ToolSpec, error) {
	return []plugin.ToolSpec{subTaskSpec}, nil
}

// subTaskArgs are the arguments of a "subtask" call.
type subTaskArgs struct {
	Goal  string
	Tools []string
	Steps int
}

func parseSubTaskArgs(args map[string]any, known map[string]plugin.Tool) (subTaskArgs, error) {
	var a subTaskArgs
	goal, _ := args["goal"].(string)
	a.Goal = strings.TrimSpace(goal)
	if a.Goal == "" {
		return a, fmt.Errorf("a sub-task needs a goal")
	}
	if len(a.Goal) > maxSubTaskGoal {
		return a, fmt.Errorf("the goal is longer than %d bytes", maxSubTaskGoal)
	}
	list, _ := args["tools"].([]any)
	for _, v := range list {
		name, ok := v.(string)
		if !ok || name == "" {
			return a, fmt.Errorf("tools must be a list of tool names")
		}
		if name == SubTaskTool {
			return a, fmt.Errorf("a sub-task cannot start sub-tasks")
		}
		if _, ok := known[name]; !ok {
			return a, fmt.Errorf("there is no tool named %q", name)
		}
		if !slices.Contains(a.Tools, name) {
			a.Tools = append(a.Tools, name)
		}
	}
	if len(a.Tools) == 0 {
		return a, fmt.Errorf("a sub-task needs at least one tool")
	}
	a.Steps = defaultSubTaskSteps
	switch n := args["steps"].(type) {
	case nil:
	case float64:
		if n != float64(int(n)) || n < 1 || n > maxSubTaskSteps {
			return a, fmt.Errorf("steps must be a whole number from 1 to %d", maxSubTaskSteps)
		}
		a.Steps = int(n)
	default:
		return a, fmt.Errorf("steps must be a number")
	}
	return a, nil
}

// Execute starts the sub-task and runs it to its end.
func (s subTaskRunner) Execute(ctx context.Context, c plugin.Call) (plugin.Result, error) {
	r := s.r
	l := r.l
	fail := func(format string, args ...any) (plugin.Result, error) {
		return plugin.Result{Output: "the sub-task was not started: " + fmt.Sprintf(format, args...), IsError: true}, nil
	}
	args, err := parseSubTaskArgs(c.Args, l.tools)
	if err != nil {
		return fail("%v", err)
	}
	child := &task.Task{ID: task.NewID(), Goal: args.Goal, Model: r.t.Model, Budget: args.Steps, MaxSteps: args.Steps,
		Cwd: r.t.Cwd, Session: r.t.Session, Parent: r.t.ID, Tools: args.Tools}
	// The grant: carved out of the parent's, when it holds one.
	parent, used, err := l.k.ActiveGrantOf(ctx, r.act(SubTaskTool))
	if err != nil {
		return fail("the task's grant could not be read: %v", err)
	}
	var g *kernel.Grant
	if parent != nil {
		spec, err := subTaskGrant(parent, used, child, l.k.Clock.Now())
		if err != nil {
			return fail("%v", err)
		}
		if g, err = l.k.IssueChildGrant(ctx, parent.ID, spec); err != nil {
			return fail("its grant could not be carved out of %s: %v", parent.ID, err)
		}
		child.Grant = g.ID
	}
	if err := l.cfg.Tasks.Create(ctx, child); err != nil {
		s.revoke(ctx, g, "the sub-task could not be created")
		return fail("%v", err)
	}
	l.printf("⤷  sub-task %s: %s (tools %s, %d steps", child.ID, OneLine(child.Goal, 120), strings.Join(child.Tools, ", "), child.MaxSteps)
	if g != nil {
		l.printf(", grant %s", g.ID)
	}
	l.printf(")\n")
	end, runErr := l.Run(ctx, child.ID, Options{})
	s.revoke(context.WithoutCancel(ctx), g, "the sub-task ended")
	if end == nil {
		return plugin.Result{Output: fmt.Sprintf("sub-task %s failed: %v", child.ID, runErr), IsError: true}, nil
	}
	l.printf("⤶  sub-task %s %s\n", end.ID, end.Status)
	out := fmt.Sprintf("sub-task %s %s after %d steps", end.ID, end.Status, end.Step)
	if end.Result != "" {
		out += ": " + end.Result
	}
	if end.Error != "" {
		out += " (" + end.Error + ")"
	}
	if runErr != nil && end.Status == task.Running {
		// Interrupted (the parent is stopping): the parent's step ends too.
		return plugin.Result{Output: out, IsError: true}, runErr
	}
	return plugin.Result{Output: out, IsError: end.Status != task.Done}, nil
}

// revoke ends a sub-task's grant (nothing when it had none).
func (s subTaskRunner) revoke(ctx context.Context, g *kernel.Grant, why string) {
	if g == nil {
		return
	}
	if _, err := s.r.l.k.RevokeGrant(ctx, g.ID, "task "+s.r.t.ID, "agent", why); err != nil {
		s.r.l.printf("⚠  the sub-task's grant %s could not be revoked: %v (it expires at %s)\n", g.ID, err,
			g.Expires.Format(time.RFC3339))
	}
}

// subTaskGrant carves a sub-task's grant out of parent (with its use so
// far): the parent's permits narrowed to the sub-task's tools, as many
// steps as the sub-task has (at most what the parent has left), what the
// parent has left of its tokens and cost, its wall time and expiry.
func subTaskGrant(parent *kernel.Grant, used kernel.GrantUsage, child *task.Task, now time.Time) (kernel.GrantSpec, error) {
	spec := kernel.GrantSpec{
		Subject: grant.Subject{Agent: parent.Subject.Agent, Session: child.Session,
			SubagentType: grant.SubTaskType, SubagentID: child.ID},
		Expires: parent.Expires,
		Reason:  "sub-task " + child.ID + " of task " + child.Parent + ": " + OneLine(child.Goal, 200),
	}
	for _, p := range parent.Allow {
		cp := p
		cp.Tools = nil
		for _, name := range child.Tools {
			if len(p.Tools) == 0 || slices.ContainsFunc(p.Tools, func(pat string) bool { return toolMatches(pat, name) }) {
				cp.Tools = append(cp.Tools, name)
			}
		}
		if len(cp.Tools) > 0 {
			spec.Allow = append(spec.Allow, cp)
		}
	}
	if len(spec.Allow) == 0 {
		return spec, fmt.Errorf("the task's grant %s allows none of the tools %s", parent.ID, strings.Join(child.Tools, ", "))
	}
	pb := parent.Budget
	spec.Budget.Steps = int64(child.MaxSteps)
	if pb.Steps > 0 {
		left := pb.Steps - used.Steps
		if left <= 0 {
			return spec, fmt.Errorf("the task's grant %s has no steps left", parent.ID)
		}
		spec.Budget.Steps = min(spec.Budget.Steps, left)
	}
	if pb.Tokens > 0 {
		if spec.Budget.Tokens = pb.Tokens - used.Tokens; spec.Budget.Tokens <= 0 {
			return spec, fmt.Errorf("the task's grant %s has no tokens left", parent.ID)
		}
	}
	if pb.CostUSD > 0 {
		if spec.Budget.CostUSD = pb.CostUSD - used.CostUSD; spec.Budget.CostUSD <= 0 {
			return spec, fmt.Errorf("the task's grant %s has no budget left", parent.ID)
		}
	}
	spec.Budget.WallTime = pb.WallTime
	if !spec.Expires.After(now) {
		return spec, fmt.Errorf("the task's grant %s has expired", parent.ID)
	}
	return spec, nil
}

// toolMatches reports whether a permit's tool pattern names tool.
func toolMatches(pattern, tool string) bool {
	if pattern == tool {
		return true
	}
	ok, err := path.Match(pattern, tool)
	return err == nil && ok
}
