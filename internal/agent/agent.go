// Package agent is Overseer's own agent loop, the supervised mode: a model
// decides, the kernel judges each decision, tools run only what passes.
//
// The loop is thin orchestration. Each step it asks the kernel for the
// constraints learnt so far, the Context plugin for the prompt, the LLM for
// a reply, the kernel to parse the decision and to judge, ask and record
// it, the Tool plugin to run what was let through, and the kernel again to
// classify the result. It holds no security judgement of its own: every
// level, every refusal and every question to a person comes from the
// kernel.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/grant"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/perception"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/plugin"
)

// AgentName is the agent the loop's actions are recorded under.
const AgentName = kernel.OwnAgent

// Defaults.
const (
	DefaultMaxSteps      = 50
	DefaultMaxRejections = 3
	DefaultHeartbeat     = 500 * time.Millisecond
	// staleAfter is how old a runner's heartbeat may be before the task is
	// taken for abandoned (its process died).
	staleAfter  = 5 * time.Second
	maxMemories = 6
)

// Validator checks a model's reply; an error rejects it and is shown to the
// model, which answers again (up to the configured number of rejections).
type Validator func(reply string) error

// Config builds a Loop.
type Config struct {
	Kernel *kernel.Kernel
	Tasks  *task.Store
	// LLM answers every purpose (a router sends each to its model).
	LLM     plugin.LLM
	Tools   []plugin.Tool
	Context plugin.Context
	// Planner and Memory are optional.
	Planner plugin.Planner
	Memory  plugin.Memory
	// Validator is optional; MaxRejections caps how many replies in a row
	// it may reject before a person is asked (default 3).
	Validator     Validator
	MaxRejections int
	// Out receives progress and the model's streamed text; nil discards.
	Out io.Writer
	// Heartbeat is how often a running task proves it is alive and looks
	// for abort requests (default 500ms).
	Heartbeat time.Duration
	// Answers, when set, are lines a person types where the task runs
	// (its terminal): while the task waits for a person, a line answers
	// (y, n, stop, or words), racing the other channels — the first
	// answer wins. Lines typed before a question was asked are ignored.
	// Who names that person.
	Answers <-chan Line
	Who     string
	// SubTasks offers the model the "subtask" tool: a task may start a
	// sub-task with its own goal, tools and steps, under a grant carved out
	// of the task's (subtask.go).
	SubTasks bool
}

// Line is a line a person typed, and when.
type Line struct {
	Text string
	At   time.Time
}

// Loop runs tasks.
type Loop struct {
	cfg   Config
	k     *kernel.Kernel
	tools map[string]plugin.Tool
	specs []plugin.ToolSpec
	out   io.Writer
	mu    sync.Mutex // serialises writes to out
	// downgraded is set once a budget cap switched the LLM to its cheaper
	// model (for the loop's lifetime: the LLM is the loop's).
	downgraded atomic.Bool
}

// ErrToolConflict is returned when two tool plugins offer the same name.
var ErrToolConflict = errors.New("two tool plugins offer the same tool")

// New checks cfg and lists the tools.
func New(ctx context.Context, cfg Config) (*Loop, error) {
	if cfg.Kernel == nil || cfg.Tasks == nil || cfg.LLM == nil || cfg.Context == nil {
		return nil, errors.New("agent: Kernel, Tasks, LLM and Context are required")
	}
	if cfg.MaxRejections <= 0 {
		cfg.MaxRejections = DefaultMaxRejections
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	l := &Loop{cfg: cfg, k: cfg.Kernel, tools: map[string]plugin.Tool{}, out: cfg.Out}
	if l.out == nil {
		l.out = io.Discard
	}
	for _, t := range cfg.Tools {
		specs, err := t.Tools(ctx)
		if err != nil {
			return nil, fmt.Errorf("agent: listing tools: %w", err)
		}
		for _, s := range specs {
			if _, dup := l.tools[s.Name]; dup {
				return nil, fmt.Errorf("%w: %q", ErrToolConflict, s.Name)
			}
			l.tools[s.Name] = t
			l.specs = append(l.specs, s)
		}
	}
	return l, nil
}

// Tools returns the tools the model may call.
func (l *Loop) Tools() []plugin.ToolSpec { return l.specs }

func (l *Loop) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, format, args...)
}

// run is one run of one task.
type run struct {
	l      *Loop
	t      *task.Task
	aborts atomic.Int32
	forced atomic.Bool
	start  time.Time
	// current is the step under way, kept in the checkpoint while it waits
	// for a person; resumed is the approval a resumed step waits on.
	current *task.PendingStep
	resumed string
	// endWait stops reading answers typed for the current wait.
	endWait func()
	// files watches what the task read or wrote (environment awareness).
	files *watcher
}

// Options adjust one run.
type Options struct {
	// MoreSteps is the number of steps a task paused at its step limit gets
	// when resumed (default: its budget).
	MoreSteps int
}

// Run runs (or resumes) task id until it is done, paused, waiting for a
// person with no answer, aborted or failed, checkpointing after every step.
// It returns the task as last saved. ctx ending pauses the task.
func (l *Loop) Run(ctx context.Context, id string, opts Options) (*task.Task, error) {
	t, err := l.claim(ctx, id, opts)
	if err != nil {
		return nil, err
	}
	r := &run{l: l, t: t, start: time.Now(), files: newWatcher()}
	defer r.files.close()
	if err := l.cfg.Tasks.Record(ctx, t, task.Event{Event: "started"}); err != nil {
		// Nothing runs unrecorded.
		t.Status, t.Runner, t.Error = task.Failed, nil, err.Error()
		return t, errors.Join(err, l.cfg.Tasks.Save(context.WithoutCancel(ctx), t))
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		r.heartbeat(runCtx, cancel)
	}()
	r.replaySignals()
	err = r.loop(runCtx)
	cancel()
	<-hbDone
	return r.finish(ctx, err)
}

// claim marks the task as running in this process.
func (l *Loop) claim(ctx context.Context, id string, opts Options) (*task.Task, error) {
	found, err := l.cfg.Tasks.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	return l.cfg.Tasks.Update(ctx, found.ID, func(t *task.Task) error {
		switch {
		case t.Status == task.Running || t.Status == task.WaitingPerson:
			if l.cfg.Tasks.Live(t, staleAfter) {
				return fmt.Errorf("%w (pid %d on %s)", task.ErrRunning, t.Runner.PID, t.Runner.Host)
			}
		case t.Status == task.Done || t.Status == task.Aborted:
			return fmt.Errorf("%w: %s is %s", task.ErrEnded, t.ID, t.Status)
		case !t.Status.Startable():
			return fmt.Errorf("%w: cannot run a task that is %s", task.ErrBadStatus, t.Status)
		}
		if t.Budget <= 0 {
			t.Budget = DefaultMaxSteps
		}
		if t.MaxSteps <= 0 {
			t.MaxSteps = t.Budget
		}
		if t.Step >= t.MaxSteps {
			more := opts.MoreSteps
			if more <= 0 {
				more = t.Budget
			}
			t.MaxSteps = t.Step + more
		}
		t.Status, t.Aborts, t.Error, t.Pending = task.Running, 0, "", ""
		t.Runner = &task.Runner{PID: os.Getpid(), Host: host, Heartbeat: time.Now().UTC()}
		return nil
	})
}

// heartbeat keeps the task's runner record fresh and picks up abort
// requests: the first stops after the current step, the second cancels.
func (r *run) heartbeat(ctx context.Context, cancel context.CancelFunc) {
	tick := time.NewTicker(r.l.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t, err := r.l.cfg.Tasks.Update(ctx, r.t.ID, func(t *task.Task) error {
			if t.Runner != nil {
				t.Runner.Heartbeat = time.Now().UTC()
			}
			return nil
		})
		if err != nil {
			continue
		}
		if n := int32(t.Aborts); n > r.aborts.Load() {
			r.aborts.Store(n)
			if n == 1 {
				r.l.printf("\n⏹  abort requested: stopping after the current step (abort again to stop at once)\n")
			}
			if n >= 2 {
				r.l.printf("\n⏹  abort requested again: stopping now\n")
				r.forced.Store(true)
				cancel()
				return
			}
		}
	}
}

// act returns the action of a call of tool by the task: agent "overseer"
// in the task's session; a sub-task is the sub-agent of type "subtask"
// with its own id.
func (r *run) act(tool string) *action.Action {
	a := &action.Action{Agent: AgentName, Session: r.t.Session, Tool: tool, Cwd: r.t.Cwd}
	if r.t.Parent != "" {
		a.SubagentType, a.SubagentID = grant.SubTaskType, r.t.ID
	}
	return a
}

// sessionKey is the PerceptionBus key of the task's session.
func (r *run) sessionKey() string {
	return firewall.SessionKey(&action.Action{Agent: AgentName, Session: r.t.Session})
}

// replaySignals restores the session's in-memory perception signals from
// the checkpoint, so a resumed task is judged as if it had not stopped.
func (r *run) replaySignals() {
	for _, s := range r.t.Steps {
		if s.Confidence != nil {
			r.l.k.Bus.RecordConfidence(r.sessionKey(), *s.Confidence)
		}
	}
}

// errStop ends the loop with the task's status already set.
var errStop = errors.New("stop")

func (r *run) loop(ctx context.Context) error {
	for {
		if r.aborts.Load() >= 1 {
			r.t.Status = task.Aborted
			r.t.Result = fmt.Sprintf("aborted by a person after step %d", r.t.Step)
			return errStop
		}
		if r.agentPaused() || r.overBudget() {
			return errStop
		}
		if r.t.Step >= r.t.MaxSteps {
			if err := r.summaryStep(ctx); err != nil {
				return err
			}
			return errStop
		}
		err := r.step(ctx)
		if cerr := r.checkpoint(ctx); cerr != nil && err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}

// agentPaused pauses the task when a person (or a rate limit or budget
// cap) paused the loop's agent: no step starts, and the task is saved
// where it is, to be resumed once the agent is.
func (r *run) agentPaused() bool {
	p, ok := r.l.k.AgentPause(AgentName)
	if !ok {
		return false
	}
	r.pauseForAgent(p.Reason)
	return true
}

// pauseForAgent sets the task paused because its agent is.
func (r *run) pauseForAgent(reason string) {
	r.t.Status = task.Paused
	r.t.Result = fmt.Sprintf("paused after step %d: the agent %q is paused (%s); resume the agent with `overseer resume-agent %s`, then the task with `overseer resume %s`",
		r.t.Step, AgentName, reason, AgentName, r.t.ID)
	r.l.printf("⏸  the agent is paused (%s): task paused, checkpoint saved. Resume the agent with `overseer resume-agent %s`, then the task with `overseer resume %s`\n",
		reason, AgentName, r.t.ID)
}

// overBudget reads the budget caps before the next model call: a cap
// that refuses further use pauses the task (with its checkpoint); a
// downgrade cap switches the LLM to its cheaper model once, and pauses the
// task when there is none (nothing may spend on at the old price).
func (r *run) overBudget() bool {
	st := r.l.k.BudgetFor(AgentName, r.t.Session)
	switch {
	case st.Stop != "":
		r.t.Status = task.Paused
		r.t.Result = fmt.Sprintf("paused after step %d: %s; resume it with `overseer resume %s` once the period ends or the cap is raised (`overseer budget`)",
			r.t.Step, st.Stop, r.t.ID)
		r.l.printf("⏸  %s: task paused, checkpoint saved\n", st.Stop)
		return true
	case st.Downgrade && !r.l.downgraded.Load():
		d, ok := r.l.cfg.LLM.(plugin.Downgrader)
		if !ok || !d.Downgrade() {
			r.t.Status = task.Paused
			r.t.Result = fmt.Sprintf("paused after step %d: budget cap %s asks for a cheaper model, and the model configuration has none "+
				"(give the router a \"cheaper\" model or a compress route); resume it with `overseer resume %s`",
				r.t.Step, strings.Join(st.Caps, ", "), r.t.ID)
			r.l.printf("⏸  budget cap %s reached and no cheaper model to switch to: task paused\n", strings.Join(st.Caps, ", "))
			return true
		}
		r.l.downgraded.Store(true)
		r.t.Signals = appendRecent(r.t.Signals, "budget cap "+strings.Join(st.Caps, ", ")+" reached: switched to the cheaper model")
		r.l.printf("↓  budget cap %s reached: switched to the router's cheaper model\n", strings.Join(st.Caps, ", "))
	}
	return false
}

// checkpoint saves the task.
func (r *run) checkpoint(ctx context.Context) error {
	now := time.Now()
	r.t.Elapsed += now.Sub(r.start)
	r.start = now
	if r.t.Runner != nil {
		r.t.Runner.Heartbeat = now.UTC()
	}
	if err := r.l.cfg.Tasks.Save(context.WithoutCancel(ctx), r.t); err != nil {
		return fmt.Errorf("saving the checkpoint: %w", err)
	}
	return nil
}

// finish sets the final status from the loop's error, checkpoints, and
// keeps what the task taught in memory.
func (r *run) finish(ctx context.Context, err error) (*task.Task, error) {
	t := r.t
	var runErr error
	switch {
	case err == nil || errors.Is(err, errStop):
	case r.forced.Load():
		t.Status, t.Result = task.Aborted, fmt.Sprintf("aborted at once by a person during step %d", t.Step+1)
	case ctx.Err() != nil:
		t.Status, t.Result = task.Paused, "interrupted; resume it with `overseer resume "+t.ID+"`"
	default:
		t.Status, t.Error = task.Failed, err.Error()
		runErr = err
	}
	if t.Status == task.Aborted {
		if werr := r.withdrawPending(ctx); werr != nil {
			r.l.printf("warning: %v\n", werr)
		}
		t.PendingStep = nil
	}
	t.Runner, t.Pending = nil, ""
	r.rememberPreferences(ctx)
	if t.Status == task.Done && r.l.cfg.Memory != nil {
		content := fmt.Sprintf("Task: %s\nOutcome: %s", t.Goal, t.Result)
		if _, merr := r.l.cfg.Memory.Save(context.WithoutCancel(ctx), plugin.MemoryItem{
			Category: "summary", Content: content, Key: "task:" + t.ID, Source: t.ID}); merr != nil {
			r.l.printf("warning: could not keep the task's summary in memory: %v\n", merr)
		}
	}
	if cerr := r.checkpoint(ctx); cerr != nil {
		return t, errors.Join(runErr, cerr)
	}
	if aerr := r.l.cfg.Tasks.Record(ctx, t, task.Event{Event: "ended", Result: OneLine(t.Result, 500), Error: t.Error}); aerr != nil {
		return t, errors.Join(runErr, aerr)
	}
	return t, runErr
}

// rememberPreferences keeps what the person's answers say about each tool
// the task used in long-term memory, so later tasks know it.
func (r *run) rememberPreferences(ctx context.Context) {
	if r.l.cfg.Memory == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	for _, tool := range r.usedTools() {
		st, err := r.l.k.Bus.ToolStats(ctx, tool)
		if err != nil || st.Answers < 2 {
			continue
		}
		var text string
		switch {
		case st.Rejections*2 >= st.Answers:
			text = fmt.Sprintf("Approval preference: the person often refuses %s (%d of %d answers refused); prefer another way or explain first.", tool, st.Rejections, st.Answers)
		case st.Approvals*5 >= st.Answers*4:
			text = fmt.Sprintf("Approval preference: the person usually approves %s (%d of %d answers).", tool, st.Approvals, st.Answers)
		default:
			continue
		}
		if _, err := r.l.cfg.Memory.Save(ctx, plugin.MemoryItem{Category: "preference", Content: text,
			Key: "preference:tool:" + tool, Tags: []string{"preference", tool}, Source: r.t.ID}); err != nil {
			r.l.printf("warning: could not keep an approval preference in memory: %v\n", err)
		}
	}
}

func (r *run) usedTools() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range r.t.Steps {
		if s.Tool != "" && !seen[s.Tool] {
			seen[s.Tool] = true
			out = append(out, s.Tool)
		}
	}
	return out
}

// toolStats returns the person's answer statistics for the tools used.
func (r *run) toolStats(ctx context.Context) []perception.ToolStats {
	var out []perception.ToolStats
	for _, tool := range r.usedTools() {
		if st, err := r.l.k.Bus.ToolStats(ctx, tool); err == nil {
			out = append(out, st)
		}
	}
	return out
}

// memories recalls what long-term memory holds about the task.
func (r *run) memories(ctx context.Context) []string {
	m := r.l.cfg.Memory
	if m == nil {
		return nil
	}
	query := r.t.Goal
	if p := r.t.Plan; p != nil {
		if i := p.Current(); i >= 0 {
			query += " " + p.Subtasks[i].Title
		}
	}
	var out []string
	seen := map[int64]bool{}
	for _, q := range []string{query, "Approval preference"} {
		items, err := m.Search(ctx, q, maxMemories)
		if err != nil {
			r.l.printf("warning: memory search failed: %v\n", err)
			continue
		}
		for _, it := range items {
			if seen[it.ID] || it.Source == r.t.ID && it.Category == "summary" {
				continue
			}
			seen[it.ID] = true
			out = append(out, it.Content)
		}
	}
	if len(out) > maxMemories {
		out = out[:maxMemories]
	}
	return out
}

// Ask puts a question to a person and waits for the answer. It returns the
// answered approval; the task's status shows the wait meanwhile.
func (r *run) ask(ctx context.Context, tool, question string) (*store.Approval, error) {
	pending := r.takeResumed(ctx)
	if pending == nil || pending.Tool != tool {
		a := r.act(tool)
		sub, err := r.l.k.Ask(ctx, a, question)
		if err != nil {
			return nil, err
		}
		pending = sub.Approval
	}
	r.waiting(ctx, pending)
	apr, err := r.l.k.Wait(ctx, pending.ID)
	r.stopAnswering()
	if err != nil && ctx.Err() != nil {
		// Interrupted while waiting: the task still waits on the request
		// (a resumed task waits on it again; an aborted one withdraws it).
		return apr, err
	}
	r.t.Status, r.t.Pending, r.t.PendingStep = task.Running, "", nil
	return apr, err
}

// How much of a verdict's preview the terminal shows while a call waits:
// enough to see what a wildcard removes or an edit changes; the web console
// and `overseer approvals --json` have all of it.
const (
	previewItems = 20
	previewDiff  = 2000
)

// waiting tells the person what waits, with the preview of what would
// happen, and how to answer; it checkpoints the wait.
func (r *run) waiting(ctx context.Context, apr *store.Approval) {
	r.t.Status, r.t.Pending = task.WaitingPerson, apr.ID
	if r.current != nil {
		p := *r.current
		p.Approval = apr.ID
		r.t.PendingStep = &p
	}
	_ = r.checkpoint(ctx)
	what := apr.Tool
	if q, ok := apr.Action.Args["question"].(string); ok {
		what = q
	} else if apr.Verdict.Decider != nil {
		what = fmt.Sprintf("%s — %s", apr.Tool, apr.Verdict.Summary())
	}
	r.l.printf("\n⏸  waiting for a person (%s): %s\n", apr.ID, OneLine(what, 300))
	for _, l := range apr.Verdict.Preview.Lines(previewItems, previewDiff) {
		r.l.printf("   %s\n", l)
	}
	r.l.printf("   answer with `overseer approve %s`, `overseer deny %s --reason \"…\"`, or in the web console\n", apr.ID, apr.ID)
	r.answerHere(ctx, apr)
}

// answerHere reads the person's answer to apr from the lines typed where the
// task runs, until the wait ends (done).
func (r *run) answerHere(ctx context.Context, apr *store.Approval) {
	lines := r.l.cfg.Answers
	if lines == nil {
		return
	}
	question := apr.Verdict.Decider != nil && apr.Verdict.Decider.Source == action.SourceAgent
	if question {
		r.l.printf("   or answer here: y (yes) · n (no) · stop (abort the task) · or write your answer\n")
	} else {
		r.l.printf("   or answer here: y (run it) · n (refuse it) · stop (abort the task) · \"no, …\" with what to do instead\n")
	}
	asked := time.Now()
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	r.endWait = func() { cancel(); <-done }
	go func() {
		defer close(done)
		for {
			var line string
			select {
			case <-wctx.Done():
				return
			case l, ok := <-lines:
				if !ok {
					return
				}
				if l.At.Before(asked) {
					continue // typed before the question: not an answer to it
				}
				line = strings.TrimSpace(l.Text)
			}
			if line == "" {
				continue
			}
			decision, ok := terminalDecision(line, question, apr.Tool == kernel.ConfirmDoneTool)
			if !ok {
				r.l.printf("   say y, n or stop (or \"no, …\" with what to do instead)\n")
				continue
			}
			who := r.l.cfg.Who
			if who == "" {
				who = "terminal"
			}
			reason := line
			if len([]rune(line)) <= 4 {
				reason = "" // y, n, ok, stop: no words for the agent
			}
			if _, _, err := r.l.k.Answer(wctx, apr.ID, store.Answer{Decision: decision, Who: who, Channel: "terminal", Reason: reason}); err != nil {
				if wctx.Err() == nil {
					r.l.printf("   could not record the answer: %v\n", err)
				}
				continue
			}
			return
		}
	}()
}

// stopAnswering ends reading answers for the wait that just ended.
func (r *run) stopAnswering() {
	if r.endWait != nil {
		r.endWait()
		r.endWait = nil
	}
}

// terminalDecision reads a typed answer. For a question, words that are
// neither yes, no nor stop are an answer of their own (approve with the
// words), except for a done-confirmation, where they say what is missing.
func terminalDecision(line string, question, confirmDone bool) (string, bool) {
	switch strings.ToLower(line) {
	case "y", "yes":
		return gate.DecisionApprove, true
	case "n", "no":
		return gate.DecisionDeny, true
	}
	switch gate.ParseIntent(line) {
	case gate.IntentApprove:
		return gate.DecisionApprove, true
	case gate.IntentReject:
		return gate.DecisionDeny, true
	case gate.IntentAbort:
		return gate.DecisionAbort, true
	}
	switch {
	case confirmDone:
		return gate.DecisionDeny, true
	case question:
		return gate.DecisionApprove, true
	}
	return "", false
}

// answerWords describes a person's answer for the model and the record.
func answerWords(apr *store.Approval) string {
	if apr == nil || apr.Answer == nil {
		return ""
	}
	a := apr.Answer
	if a.Who == "timeout" {
		return fmt.Sprintf("no person answered in time (the default answer %q applied)", a.Decision)
	}
	if strings.TrimSpace(a.Reason) != "" {
		return a.Reason
	}
	return ""
}

// OneLine folds s to one line of at most n runes, marking a cut with "…".
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
