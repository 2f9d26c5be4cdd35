package plugin

import (
	"context"
	"time"
)

// This file holds the interfaces of the plugins Overseer's own agent loop
// uses besides LLMs and tools: Memory (long-term recall), Planner (task
// decomposition) and Context (prompt assembly). None of them makes a
// security decision; the loop hands their output to the kernel.

// MemoryItem is one remembered piece of text.
type MemoryItem struct {
	ID int64 `json:"id,omitempty"`
	// Category groups items: "fact", "preference", "lesson", "summary", ...
	Category string   `json:"category"`
	Content  string   `json:"content"`
	Tags     []string `json:"tags,omitempty"`
	// Key, when set, names the item: saving another item with the same key
	// replaces it (used for preferences that are updated, not piled up).
	Key string `json:"key,omitempty"`
	// Source is where the item came from, e.g. the task's ID.
	Source    string    `json:"source,omitempty"`
	CreatedAt time.Time `json:"created_at,omitempty"`
	// Score is the search rank (higher is better); set by Search only.
	Score float64 `json:"score,omitempty"`
}

// Memory keeps items across tasks and sessions and finds them again by
// text, in any language.
type Memory interface {
	// Save stores it (replacing an item with the same non-empty Key) and
	// returns its ID.
	Save(ctx context.Context, it MemoryItem) (int64, error)
	// Search returns up to limit items relevant to query, best first. An
	// empty query returns nothing.
	Search(ctx context.Context, query string, limit int) ([]MemoryItem, error)
}

// Subtask is one step of a Plan.
type Subtask struct {
	Title  string `json:"title"`
	Done   bool   `json:"done,omitempty"`
	Result string `json:"result,omitempty"` // what completing it achieved
}

// Plan is a task broken into subtasks. A plan with no subtasks means the task
// is simple enough to run without one.
type Plan struct {
	Subtasks []Subtask `json:"subtasks,omitempty"`
	// Revision counts how often the plan was revised after a reflection.
	Revision int `json:"revision,omitempty"`
	// Notes are what the last reflection said.
	Notes string `json:"notes,omitempty"`
}

// Current returns the index of the first subtask not done, or -1 when all
// are done or there are none.
func (p *Plan) Current() int {
	if p == nil {
		return -1
	}
	for i, s := range p.Subtasks {
		if !s.Done {
			return i
		}
	}
	return -1
}

// Planner breaks a goal into subtasks and revises the plan at checkpoints.
// It only proposes; the loop keeps the plan in the task's state.
type Planner interface {
	// Plan proposes a plan for goal. context is what is known (memories,
	// constraints). A plan without subtasks means "simple, no plan needed".
	Plan(ctx context.Context, llm LLM, goal, context string) (Plan, Usage, error)
	// Reflect is called when subtask done of p was completed; it returns the
	// plan to go on with (p itself, or a revision with Revision+1).
	Reflect(ctx context.Context, llm LLM, goal string, p Plan, done int, context string) (Plan, Usage, error)
}

// Step outcomes, as recorded in StepRecord.Outcome.
const (
	OutcomeRan      = "ran"      // the tool ran (see IsError)
	OutcomeBlocked  = "blocked"  // the firewall refused it
	OutcomeDenied   = "denied"   // a person refused it
	OutcomeAsked    = "asked"    // the model asked a person (ask_human or done); Human holds the answer
	OutcomeInvalid  = "invalid"  // no usable decision; a person was asked what to do
	OutcomeError    = "error"    // the step failed for another reason (Output says why)
	OutcomeSummary  = "summary"  // the final summary step at the step limit
	OutcomeRejected = "rejected" // the response validator rejected the reply
)

// StepRecord is one step of a task as the context plugin sees it.
type StepRecord struct {
	N int `json:"n"`
	// Thought is the model's text before its decision block.
	Thought    string         `json:"thought,omitempty"`
	Action     string         `json:"action"` // tool_call, ask_human, done
	Tool       string         `json:"tool,omitempty"`
	Args       map[string]any `json:"args,omitempty"`
	Intent     string         `json:"intent,omitempty"`
	Confidence *float64       `json:"confidence,omitempty"`
	Outcome    string         `json:"outcome"`
	Output     string         `json:"output,omitempty"`
	IsError    bool           `json:"is_error,omitempty"`
	// Class is the kernel's classification of the result (success,
	// failure, partial, irrelevant).
	Class string `json:"class,omitempty"`
	// Human is a person's words for this step (an answer, a reason).
	Human string `json:"human,omitempty"`
	// Note is what the kernel said about the step (a block's reason, a
	// deviation flag).
	Note string `json:"note,omitempty"`
}

// ContextInput is everything the loop knows when it asks for the next
// prompt. Constraints, Signals and HumanDecisions come from the kernel and
// must be placed first and never be compressed away.
type ContextInput struct {
	Goal           string
	Constraints    []string // rules derived from failures, rejections, avoidance
	Signals        []string // perception signals (deviation, hesitation, stagnation)
	HumanDecisions []string // what people decided during the task, oldest first
	Corrections    []string // messages the loop injects for this step only
	Plan           *Plan
	Memories       []string
	Steps          []StepRecord
	Step, MaxSteps int
	Elapsed        time.Duration
	// Now is the step's absolute time (zero: not shown).
	Now time.Time
	// BudgetTokens is the estimated token budget of the prompt (0: the
	// plugin's default).
	BudgetTokens int
	// Summary is the summary of steps 1..SummaryThrough made by an earlier
	// compression; those steps need not be shown again.
	Summary        string
	SummaryThrough int
}

// Prompt is an assembled prompt and what compression did to build it.
type Prompt struct {
	Messages        []Message
	EstimatedTokens int
	// Summary and SummaryThrough are the compression state to keep for the
	// next step (unchanged from the input when nothing was summarised).
	Summary        string
	SummaryThrough int
	Usage          Usage // of any compression calls
}

// Compressor summarises text for the context plugin (a model call with
// PurposeCompress). It may be nil: the plugin then shortens text itself.
type Compressor func(ctx context.Context, text string) (summary string, u Usage, err error)

// Context assembles the prompt of one step.
type Context interface {
	Build(ctx context.Context, in ContextInput, compress Compressor) (Prompt, error)
}
