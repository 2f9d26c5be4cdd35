// Package llmplan is a Planner plugin that asks a model to break a goal into
// a few ordered, checkable subtasks and, at each checkpoint, whether the
// remaining ones still make sense. It registers as "plan.llm".
//
// The model answers with a JSON object, bare or in a ```json fence, possibly
// among prose. A reply that holds no usable object is an error wrapping
// ErrUnparseable: the loop then runs without a plan, or keeps the plan it
// has. Planning is no security decision; every action of the plan is still
// judged by the kernel.
package llmplan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/overseer-dev/overseer/plugin"
)

func init() {
	plugin.Register(plugin.Info{ID: "plan.llm", New: func(raw json.RawMessage) (any, error) {
		cfg, err := ParseConfig(raw)
		if err != nil {
			return nil, err
		}
		return New(cfg), nil
	}})
}

// Errors callers branch on.
var (
	// ErrConfig wraps every configuration error.
	ErrConfig = errors.New("plan.llm: bad configuration")
	// ErrUnparseable means the model's reply held no usable answer.
	ErrUnparseable = errors.New("plan.llm: unparseable reply")
	// ErrNoModel means Plan or Reflect got a nil LLM.
	ErrNoModel = errors.New("plan.llm: no model")
	// ErrNoSubtask means Reflect was told a subtask finished that the plan
	// does not have.
	ErrNoSubtask = errors.New("plan.llm: no such subtask")
)

// DefaultMaxSubtasks is the default of Config.MaxSubtasks.
const DefaultMaxSubtasks = 8

// maxMaxSubtasks bounds Config.MaxSubtasks: a longer list is no plan.
const maxMaxSubtasks = 50

// Config configures a Planner.
type Config struct {
	// MaxSubtasks caps the subtasks of a plan (and the remaining subtasks of
	// a revision). 0 means DefaultMaxSubtasks.
	MaxSubtasks int `json:"max_subtasks,omitempty"`
}

// ParseConfig decodes raw strictly (unknown fields and trailing data are
// errors) and validates it. Empty input is the default configuration.
func ParseConfig(raw json.RawMessage) (Config, error) {
	var c Config
	if err := plugin.DecodeConfig(raw, &c); err != nil {
		return c, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return c, c.Validate()
}

// Validate rejects a negative max_subtasks or one above 50.
func (c Config) Validate() error {
	if c.MaxSubtasks < 0 || c.MaxSubtasks > maxMaxSubtasks {
		return fmt.Errorf("%w: max_subtasks %d is not within 0..%d", ErrConfig, c.MaxSubtasks, maxMaxSubtasks)
	}
	return nil
}

// Planner proposes and revises plans through a model. It holds only its
// configuration, so it is safe for concurrent use.
type Planner struct {
	max int
}

var _ plugin.Planner = (*Planner)(nil)

// New builds a Planner; a max_subtasks out of range takes the nearest
// allowed value, 0 the default (use Config.Validate to reject it).
func New(cfg Config) *Planner {
	n := cfg.MaxSubtasks
	if n <= 0 {
		n = DefaultMaxSubtasks
	}
	return &Planner{max: min(n, maxMaxSubtasks)}
}

// MaxSubtasks is the effective cap on subtasks.
func (p *Planner) MaxSubtasks() int { return p.max }

func (p *Planner) planSystem() string {
	return fmt.Sprintf(`You plan the work of an AI agent whose every action is checked by a supervisor.
Break the goal you are given into at most %d ordered subtasks. Each subtask is one short line, concrete and checkable: one can tell when it is done. Do not restate the goal as a subtask.
If the goal is simple enough to do in a few steps without a plan, say so instead.
Answer with one JSON object and nothing else, either
{"simple": true}
or
{"subtasks": ["first subtask", "second subtask"]}`, p.max)
}

func (p *Planner) reflectSystem() string {
	return fmt.Sprintf(`You review the plan of an AI agent at a checkpoint: a subtask was just completed.
Decide whether the subtasks not done yet still lead to the goal, given what was achieved.
If they do, answer {"keep": true, "notes": "one sentence on the progress"}.
If not, answer {"subtasks": ["next subtask", "..."], "notes": "why the plan changed"}, listing only the subtasks still to do, in order, at most %d; the done subtasks stay as they are. An empty list means nothing is left to do.
Answer with one JSON object and nothing else.`, p.max)
}

// Plan asks llm to break goal into subtasks. known is what is known (memories,
// constraints). A plan without subtasks means the model judged the task
// simple. The Usage of the call is returned even with an error.
func (p *Planner) Plan(ctx context.Context, llm plugin.LLM, goal, known string) (plugin.Plan, plugin.Usage, error) {
	if llm == nil {
		return plugin.Plan{}, plugin.Usage{}, ErrNoModel
	}
	var b strings.Builder
	b.WriteString("Goal:\n" + strings.TrimSpace(goal))
	if k := strings.TrimSpace(known); k != "" {
		b.WriteString("\n\nWhat is known:\n" + k)
	}
	resp, err := llm.Complete(ctx, plugin.Request{
		Purpose:  plugin.PurposePlan,
		System:   p.planSystem(),
		Messages: []plugin.Message{{Role: plugin.RoleUser, Content: b.String()}},
	})
	if err != nil {
		return plugin.Plan{}, resp.Usage, fmt.Errorf("plan.llm: plan: %w", err)
	}
	r, err := parseReply(resp.Text, modePlan)
	if err != nil {
		return plugin.Plan{}, resp.Usage, replyError("plan", err, resp)
	}
	if r.flag {
		return plugin.Plan{}, resp.Usage, nil
	}
	titles := cleanTitles(r.subtasks, p.max)
	subs := make([]plugin.Subtask, len(titles))
	for i, t := range titles {
		subs[i] = plugin.Subtask{Title: t}
	}
	return plugin.Plan{Subtasks: subs}, resp.Usage, nil
}

// Reflect asks llm whether the plan still holds now that subtask done of pl
// was completed. The plan it returns has that subtask marked done; a
// revision keeps every done subtask with its result, replaces the others by
// the model's and has Revision+1. Notes hold what the model said. On an
// error pl is returned unchanged, with the Usage of the call if one was made.
func (p *Planner) Reflect(ctx context.Context, llm plugin.LLM, goal string, pl plugin.Plan, done int, known string) (plugin.Plan, plugin.Usage, error) {
	if llm == nil {
		return pl, plugin.Usage{}, ErrNoModel
	}
	if done < 0 || done >= len(pl.Subtasks) {
		return pl, plugin.Usage{}, fmt.Errorf("%w: %d of %d", ErrNoSubtask, done, len(pl.Subtasks))
	}
	resp, err := llm.Complete(ctx, plugin.Request{
		Purpose:  plugin.PurposeReflect,
		System:   p.reflectSystem(),
		Messages: []plugin.Message{{Role: plugin.RoleUser, Content: reflectPrompt(goal, pl, done, known)}},
	})
	if err != nil {
		return pl, resp.Usage, fmt.Errorf("plan.llm: reflect: %w", err)
	}
	r, err := parseReply(resp.Text, modeReflect)
	if err != nil {
		return pl, resp.Usage, replyError("reflect", err, resp)
	}

	out := plugin.Plan{Revision: pl.Revision, Notes: r.notes}
	if r.flag { // keep
		out.Subtasks = append([]plugin.Subtask(nil), pl.Subtasks...)
		out.Subtasks[done].Done = true
		return out, resp.Usage, nil
	}
	out.Revision++
	for i, s := range pl.Subtasks {
		if s.Done || i == done {
			s.Done = true
			out.Subtasks = append(out.Subtasks, s)
		}
	}
	for _, t := range cleanTitles(r.subtasks, p.max) {
		out.Subtasks = append(out.Subtasks, plugin.Subtask{Title: t})
	}
	return out, resp.Usage, nil
}

func reflectPrompt(goal string, pl plugin.Plan, done int, known string) string {
	var b strings.Builder
	b.WriteString("Goal:\n" + strings.TrimSpace(goal) + "\n\nPlan")
	if pl.Revision > 0 {
		fmt.Fprintf(&b, " (revision %d)", pl.Revision)
	}
	b.WriteString(":")
	for i, s := range pl.Subtasks {
		mark := "todo"
		if s.Done || i == done {
			mark = "done"
		}
		fmt.Fprintf(&b, "\n%d. [%s] %s", i+1, mark, oneLine(s.Title))
		if r := oneLine(s.Result); r != "" {
			b.WriteString(" — result: " + r)
		}
		if i == done {
			b.WriteString("  ← just completed")
		}
	}
	if n := oneLine(pl.Notes); n != "" {
		b.WriteString("\nNotes from the last review: " + n)
	}
	fmt.Fprintf(&b, "\n\nSubtask %d (%q) was just completed.", done+1, oneLine(pl.Subtasks[done].Title))
	if k := strings.TrimSpace(known); k != "" {
		b.WriteString("\n\nWhat is known:\n" + k)
	}
	return b.String()
}

func replyError(what string, err error, resp plugin.Response) error {
	if resp.Truncated {
		return fmt.Errorf("plan.llm: %s: %w (the reply was cut off at the token limit)", what, err)
	}
	return fmt.Errorf("plan.llm: %s: %w", what, err)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
