package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/plugin"
)

// Corrections the loop injects when an output guard fires.
const (
	correctThinkingLoop = "Your previous reasoning got stuck repeating the same text and was stopped. Think briefly, do not repeat yourself, and end with one decision block."
	correctDuplicates   = "Your previous reply repeated the same block of text. Write each thing once."
	correctTruncated    = "Your previous reply was cut off at the length limit. Keep your reply short and end it with the decision block."
	correctStepLimit    = "You have reached this run's step limit. Do not call any tool. Summarise what has been done, what remains and what you would do next; then end with a decision block with the action \"ask_human\" whose reason says the step limit was reached."
)

// reply is one model reply the loop accepted for a step.
type reply struct {
	resp     plugin.Response
	decision firewall.Decision
	// rejected is set when the validator rejected the reply too often.
	rejected string
	// looped is set when the thinking channel was stuck even after a
	// correction.
	looped bool
	// next are the corrections for the next step.
	next []string
}

// step takes one step: prompt, reply, decision, and what the kernel makes
// of it.
func (r *run) step(ctx context.Context) error {
	t := r.t
	if err := r.plan(ctx); err != nil {
		return err
	}
	n := t.Step + 1
	var rep reply
	resuming := t.PendingStep != nil
	if resuming {
		// The step's process died while it waited for a person: wait for
		// the same answer.
		rep = r.resumeStep(t.PendingStep)
		r.l.printf("\n── step %d resumed: waiting for the answer to %s\n", n, t.PendingStep.Approval)
	} else {
		r.l.printf("\n── step %d/%d\n", n, t.MaxSteps)
		var err error
		if rep, err = r.decide(ctx, n, ""); err != nil {
			return err
		}
		r.l.printf("   %s\n", usageLine(rep.resp))
	}
	r.current = &task.PendingStep{N: n, Text: rep.resp.Text, Rejected: rep.rejected, Looped: rep.looped}
	if b, err := json.Marshal(rep.decision); err == nil {
		r.current.Decision = b
	}
	if !resuming {
		t.Corrections = rep.next
	}
	d := rep.decision
	rec := plugin.StepRecord{N: n, Thought: thought(rep.resp.Text), Action: d.Action, Tool: d.Tool, Args: d.Args,
		Intent: d.Intent, Confidence: d.Confidence}
	var err error
	switch {
	case rep.rejected != "":
		rec.Action, rec.Outcome, rec.Note = "", plugin.OutcomeRejected, rep.rejected
		err = r.askWhatNext(ctx, &rec, "The model's replies were rejected "+fmt.Sprint(r.l.cfg.MaxRejections)+
			" times in a row ("+rep.rejected+"). What should it do?")
	case rep.looped:
		rec.Action, rec.Outcome, rec.Note = "", plugin.OutcomeInvalid, "the model's reasoning kept looping"
		err = r.askWhatNext(ctx, &rec, "The model's reasoning got stuck in a loop twice. What should it do?")
	case d.Source == firewall.SourceFallback:
		rec.Outcome, rec.Note = plugin.OutcomeInvalid, d.Reason
		r.l.printf("⚠  no usable decision in the reply (%s): asking a person\n", d.Reason)
		err = r.askWhatNext(ctx, &rec, "The model's reply had no usable decision ("+d.Reason+"). Its reply began: "+
			OneLine(rep.resp.Text, 400)+"\nWhat should it do?")
	case d.Action == firewall.ActionDone:
		err = r.confirmDone(ctx, &rec, d)
	case d.Action == firewall.ActionAskHuman:
		err = r.askHuman(ctx, &rec, d)
	case d.Action == firewall.ActionToolCall:
		err = r.callTool(ctx, &rec, d)
	default:
		// ParseDecision never returns another action; a person decides.
		rec.Outcome = plugin.OutcomeInvalid
		err = r.askWhatNext(ctx, &rec, "The model chose an action the loop does not know ("+d.Action+"). What should it do?")
	}
	if err != nil {
		// Interrupted: a step that waits for a person keeps waiting for
		// the same answer when the task is resumed.
		return err
	}
	r.current, t.PendingStep = nil, nil
	t.Step = n
	t.Steps = append(t.Steps, rec)
	if d.SubtaskDone && rec.Outcome == plugin.OutcomeRan && !rec.IsError {
		r.advancePlan(ctx, rec)
	}
	if t.Status != task.Running {
		return errStop
	}
	return nil
}

// thought is a reply's text without its decision block.
func thought(text string) string {
	if i := strings.Index(text, "```decision"); i >= 0 {
		text = text[:i]
	}
	return strings.TrimSpace(text)
}

func usageLine(resp plugin.Response) string {
	u := resp.Usage
	s := fmt.Sprintf("%s · %d in / %d out tokens", resp.Model, u.InputTokens, u.OutputTokens)
	if u.CostUSD > 0 {
		s += fmt.Sprintf(" · $%.4f", u.CostUSD)
	}
	return s
}

// decide asks the model for the step's reply, with the output guards:
// a stuck thinking channel is stopped and corrected once, a reply cut off
// at the token limit is retried once with a larger limit, duplicated text
// blocks are dropped and corrected next step, and the validator may reject
// replies up to its cap. extra is a correction for this call only.
func (r *run) decide(ctx context.Context, n int, extra string) (reply, error) {
	t := r.t
	loopedOnce := false
	var next []string
	for {
		corrections := append([]string(nil), t.Corrections...)
		if extra != "" {
			corrections = append(corrections, extra)
		}
		msgs, err := r.prompt(ctx, corrections)
		if err != nil {
			return reply{}, err
		}
		req := plugin.Request{Purpose: plugin.PurposeDecide, System: firewall.SystemPrompt(r.specs()),
			Messages: msgs, MaxTokens: t.MaxTokens}
		resp, looped, err := r.stream(ctx, n, req)
		if err != nil {
			return reply{}, err
		}
		if looped {
			r.l.printf("\n⚠  the model's reasoning is repeating itself: stopped the reply")
			if loopedOnce {
				r.l.printf("; asking a person\n")
				return reply{resp: resp, looped: true, next: next}, nil
			}
			r.l.printf("; asking again with a correction\n")
			loopedOnce = true
			t.Corrections = appendOnce(t.Corrections, correctThinkingLoop)
			continue
		}
		if resp.Truncated {
			limit, raised := firewall.NextMaxTokens(t.MaxTokens, true, t.TokensRaised)
			wasRaised := t.TokensRaised
			t.TokensRaised = raised
			if !wasRaised && limit > t.MaxTokens {
				r.l.printf("\n⚠  the reply was cut off at the token limit: asking again with a limit of %d tokens\n", limit)
				t.MaxTokens = limit
				continue
			}
			next = appendOnce(next, correctTruncated)
		}
		if text, dups := dropDuplicateBlocks(resp.Text); dups > 0 {
			r.l.printf("\n⚠  the reply repeated %d block(s) of text: dropped them\n", dups)
			resp.Text = text
			next = appendOnce(next, correctDuplicates)
		}
		if v := r.l.cfg.Validator; v != nil {
			if verr := v(resp.Text); verr != nil {
				t.Rejections++
				r.l.printf("\n⚠  the reply was rejected (%d of %d): %v\n", t.Rejections, r.l.cfg.MaxRejections, verr)
				if t.Rejections >= r.l.cfg.MaxRejections {
					t.Rejections = 0
					return reply{resp: resp, rejected: verr.Error(), next: next}, nil
				}
				t.Corrections = appendOnce(t.Corrections, "Your previous reply was rejected: "+verr.Error()+". Answer again.")
				continue
			}
			t.Rejections = 0
		}
		d := firewall.ParseDecision(resp.Text)
		if len(resp.ToolCalls) > 0 && d.Source == firewall.SourceFallback && !resp.Truncated {
			// A model that used its native tool calling instead of the
			// decision block: the call is still judged, and a person
			// looks because the model reported no confidence. A call
			// from a reply cut off at the limit is never taken: its
			// arguments may be incomplete.
			tc := resp.ToolCalls[0]
			if nd, ok := nativeDecision(tc); ok {
				d = nd
			}
		}
		return reply{resp: resp, decision: d, next: next}, nil
	}
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// dropDuplicateBlocks removes the paragraphs of text that repeat an earlier
// one (the kernel's DuplicateTextBlocks check) and reports how many.
func dropDuplicateBlocks(text string) (string, int) {
	blocks := strings.Split(text, "\n\n")
	dups := firewall.DuplicateTextBlocks(blocks)
	if len(dups) == 0 {
		return text, 0
	}
	drop := map[int]bool{}
	for _, i := range dups {
		// A repeated decision block is not dropped: ParseDecision judges
		// several identical decisions itself.
		if !strings.Contains(blocks[i], "```") {
			drop[i] = true
		}
	}
	var kept []string
	for i, b := range blocks {
		if !drop[i] {
			kept = append(kept, b)
		}
	}
	return strings.Join(kept, "\n\n"), len(drop)
}

// prompt builds the step's messages through the Context plugin.
func (r *run) prompt(ctx context.Context, corrections []string) ([]plugin.Message, error) {
	t := r.t
	pol := r.l.k.Engine.Policy()
	// Files changed behind the task's back are told this step only.
	corrections = append(corrections, r.files.notices(ctx, r.l.k.Reads(), t.Session)...)
	in := plugin.ContextInput{
		Goal:           t.Goal,
		Constraints:    firewall.Constraints(t.Steps, r.toolStats(ctx), pol.Settings.Adapt.EscalateAfter),
		Signals:        t.Signals,
		HumanDecisions: t.HumanDecisions,
		Corrections:    corrections,
		Plan:           t.Plan,
		Memories:       r.memories(ctx),
		Steps:          t.Steps,
		Step:           t.Step + 1,
		MaxSteps:       t.MaxSteps,
		Elapsed:        t.Elapsed + time.Since(r.start),
		Now:            r.l.k.Clock.Now(),
		Summary:        t.Summary,
		SummaryThrough: t.SummaryThrough,
	}
	p, err := r.l.cfg.Context.Build(ctx, in, r.compress)
	if err != nil {
		return nil, fmt.Errorf("building the prompt: %w", err)
	}
	t.Summary, t.SummaryThrough = p.Summary, p.SummaryThrough
	return p.Messages, nil
}

// compress is the Context plugin's Compressor: a model call for that
// purpose.
func (r *run) compress(ctx context.Context, text string) (string, plugin.Usage, error) {
	resp, err := r.l.cfg.LLM.Complete(ctx, plugin.Request{Purpose: plugin.PurposeCompress,
		System: "Summarise the steps of an agent's task below for the agent's own later use. Keep every fact it " +
			"will need: file names, paths, values found, errors, what was refused and why, what people said. Be brief.",
		Messages: []plugin.Message{{Role: plugin.RoleUser, Content: text}}})
	if err != nil {
		return "", plugin.Usage{}, err
	}
	r.account(r.t.Step+1, plugin.PurposeCompress, resp)
	return resp.Text, resp.Usage, nil
}

// account adds a call's usage to the task.
func (r *run) account(step int, purpose string, resp plugin.Response) {
	// The spend counts against the budget caps (priced by the kernel's
	// table when the model's own price table gave no cost).
	u := resp.Usage
	r.l.k.RecordUse(context.Background(), kernel.Use{Agent: AgentName, Session: r.t.Session, Model: resp.Model,
		Input: int64(u.InputTokens), Output: int64(u.OutputTokens), CostUSD: u.CostUSD})
	r.t.Usage = r.t.Usage.Add(resp.Usage)
	// A task under a grant spends the grant's token and cost budgets too;
	// a failure to count only leaves the grant's next check to the step
	// count (the budgets are checked before each call).
	_ = r.l.k.ChargeCaller(context.Background(), r.act(""), int64(u.InputTokens+u.OutputTokens), u.CostUSD)
	r.t.StepUsage = append(r.t.StepUsage, task.StepUsage{Step: step, Purpose: purpose, Model: resp.Model, Usage: resp.Usage})
}

// stream makes the decide call, streaming the reply's text (without its
// decision block) to the output and watching the thinking channel: a
// thinking block stuck in a loop stops the call (looped is true).
func (r *run) stream(ctx context.Context, n int, req plugin.Request) (plugin.Response, bool, error) {
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var thinking strings.Builder
	looped, checked := false, 0
	f := &fenceFilter{w: r.l}
	onDelta := func(d plugin.Delta) {
		if d.Thinking != "" && !looped {
			thinking.WriteString(d.Thinking)
			if thinking.Len()-checked >= 256 {
				checked = thinking.Len()
				if firewall.ThinkingLoop(thinking.String()) {
					looped = true
					cancel()
				}
			}
		}
		if d.Text != "" {
			f.write(d.Text)
		}
	}
	var resp plugin.Response
	var err error
	if s, ok := r.l.cfg.LLM.(plugin.LLMStreamer); ok {
		resp, err = s.Stream(callCtx, req, onDelta)
	} else {
		resp, err = r.l.cfg.LLM.Complete(callCtx, req)
		if err == nil {
			onDelta(plugin.Delta{Thinking: resp.Thinking, Text: resp.Text})
		}
	}
	f.flush()
	if looped && ctx.Err() == nil {
		r.account(n, plugin.PurposeDecide, resp)
		return resp, true, nil
	}
	if err != nil {
		return resp, false, fmt.Errorf("asking the model: %w", err)
	}
	if !looped && firewall.ThinkingLoop(resp.Thinking) {
		looped = true
	}
	r.account(n, plugin.PurposeDecide, resp)
	return resp, looped, nil
}

// nativeDecision turns a native tool call into a decision without a
// reported confidence.
func nativeDecision(tc plugin.ToolCall) (firewall.Decision, bool) {
	b := fmt.Sprintf(`{"action":"tool_call","tool":%q,"args":%s,"reason":"native tool call"}`, tc.Name, string(tc.Arguments))
	d := firewall.ParseDecision(b)
	return d, d.Source != firewall.SourceFallback
}

// callTool runs a tool call through the kernel.
func (r *run) callTool(ctx context.Context, rec *plugin.StepRecord, d firewall.Decision) error {
	t := r.t
	tool, ok := r.tool(d.Tool)
	if !ok {
		rec.Outcome, rec.Note = plugin.OutcomeError, fmt.Sprintf("there is no tool named %q", d.Tool)
		rec.Output = "no such tool: choose one of the listed tools"
		r.l.printf("✗  %s: no such tool\n", d.Tool)
		return nil
	}
	a := r.act(d.Tool)
	a.Args, a.Confidence, a.Intent, a.HumanRequested = d.Args, d.Confidence, d.Intent, d.HumanRequired
	if a.Args == nil {
		a.Args = map[string]any{}
	}
	r.l.printf("→  %s %s\n", d.Tool, OneLine(argsText(d.Args), 200))
	opts := kernel.RunOptions{OnWait: func(apr *store.Approval) { r.waiting(ctx, apr) }}
	var tr *kernel.ToolRun
	var err error
	if apr := r.takeResumed(ctx); apr != nil {
		tr, err = r.l.k.ResumeTool(ctx, tool, apr, opts)
	} else {
		tr, err = r.l.k.RunTool(ctx, tool, a, opts)
	}
	r.stopAnswering()
	if tr != nil && tr.Ran {
		r.files.watch(&tr.Action)
	}
	if err != nil && ctx.Err() != nil && (tr == nil || !tr.Ran) {
		return ctx.Err() // interrupted: the task still waits on its request
	}
	t.Status, t.Pending = task.Running, ""
	if tr != nil && len(tr.Verdict.Hints) > 0 {
		t.Signals = appendRecent(t.Signals, tr.Verdict.Hints...)
	}
	if tr != nil && tr.Approval != nil && tr.Approval.Answer != nil {
		r.noteDecision(rec.N, tr.Approval, pastTense(tr.Approval.Answer.Decision)+" "+d.Tool)
	}
	switch {
	case errors.Is(err, kernel.ErrBlocked):
		rec.Outcome, rec.Note = plugin.OutcomeBlocked, tr.Verdict.Summary()
		r.l.printf("⛔ blocked: %s\n", rec.Note)
		if d := tr.Verdict.Decider; d != nil && d.Source == action.SourcePaused {
			// The agent was paused while it decided: the task pauses.
			reason := d.Message
			if p, ok := r.l.k.AgentPause(AgentName); ok {
				reason = p.Reason
			}
			r.pauseForAgent(reason)
			return nil
		}
		if d := tr.Verdict.Decider; d != nil && tr.Verdict.Stop && (d.Source == action.SourceLimit || d.Source == action.SourceBudget) {
			// A rate limit paused the agent, or a budget cap refuses
			// further use: the task pauses where it is.
			r.t.Status = task.Paused
			r.t.Result = fmt.Sprintf("paused at step %d: %s; resume it with `overseer resume %s` once a person has dealt with it",
				rec.N, d.Message, r.t.ID)
			r.l.printf("⏸  %s: task paused, checkpoint saved\n", d.Message)
			return nil
		}
		if p, paused := r.l.k.AgentPause(AgentName); paused && tr.Verdict.Stop {
			// An anomaly rule or a pause_agent auto-rule paused the
			// agent with this call: the task pauses.
			r.pauseForAgent(p.Reason)
			return nil
		}
		if tr.Verdict.Stop {
			// It keeps repeating a call a person refused: stop, as a
			// person's abort would.
			r.t.Status, r.t.Result = task.Paused, "stopped at step "+fmt.Sprint(rec.N)+": it kept repeating a call a person refused"
			r.l.printf("⏹  stopped: the task kept repeating a call a person refused\n")
		}
		return nil
	case errors.Is(err, kernel.ErrDenied):
		rec.Outcome = plugin.OutcomeDenied
		if tr != nil && tr.Approval != nil {
			rec.Human = answerWords(tr.Approval)
			if tr.Approval.Status == store.StatusAborted {
				r.t.Status, r.t.Result = task.Aborted, "aborted by a person at step "+fmt.Sprint(rec.N)
				r.l.printf("⏹  the person aborted the task\n")
				return nil
			}
		}
		r.l.printf("✗  %s\n", refusal(tr, err))
		return nil
	case err != nil && (tr == nil || !tr.Ran):
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rec.Outcome, rec.Output, rec.IsError = plugin.OutcomeError, err.Error(), true
		r.l.printf("✗  not run: %v\n", err)
		return nil
	}
	rec.Outcome, rec.Output, rec.IsError, rec.Class = plugin.OutcomeRan, tr.Result.Output, tr.Result.IsError, tr.Class
	if err != nil {
		rec.Note = err.Error()
	}
	if flag := firewall.Deviation(rec.N, d.Intent, tr.Class); flag != "" {
		rec.Note = strings.TrimSpace(rec.Note + " " + flag)
		t.Signals = appendRecent(t.Signals, flag)
		r.l.printf("⚠  %s\n", flag)
	}
	if tr.Repeated {
		// L5: at the threshold the kernel answers with a strategy switch
		// for the next prompt; a person is called in only if it fails.
		if sw := r.l.k.NoteStagnation(r.sessionKey(), fmt.Sprintf("step %d: %s gave the same result as before", rec.N, d.Tool)); sw != "" {
			t.Signals = appendRecent(t.Signals, sw)
			r.l.printf("↻  no progress: the model is told to switch strategy\n")
		}
	}
	mark, class := "✓", ""
	if tr.Result.IsError {
		mark = "✗"
	}
	if tr.Class == "failure" || tr.Class == "partial" {
		class = " (" + tr.Class + ")"
	}
	if lv := tr.Verdict.Level; lv != action.Auto {
		class += " [" + lv.String() + "]" // what the firewall made of it, when not plain auto
	}
	r.l.printf("%s  %s%s: %s\n", mark, d.Tool, class, OneLine(tr.Result.Output, 160))
	return nil
}

// refusal says who refused a call and why, in one line.
func refusal(tr *kernel.ToolRun, err error) string {
	if tr == nil || tr.Approval == nil || tr.Approval.Answer == nil {
		return "refused: " + strings.TrimPrefix(err.Error(), kernel.ErrDenied.Error()+": ")
	}
	a := tr.Approval.Answer
	if a.Who == "timeout" {
		return "refused: " + answerWords(tr.Approval)
	}
	s := fmt.Sprintf("refused by %s via %s", a.Who, a.Channel)
	if a.Reason != "" {
		s += ": " + OneLine(a.Reason, 300)
	}
	return s
}

// noteDecision keeps a person's answer among the task's human decisions,
// with what they did ("refused bash") and their words:
// `step 2: ann refused bash: "use make clean"`.
func (r *run) noteDecision(step int, apr *store.Approval, did string) {
	s := fmt.Sprintf("step %d: %s %s", step, apr.Answer.Who, did)
	if w := answerWords(apr); w != "" {
		s += fmt.Sprintf(": %q", w)
	}
	r.t.HumanDecisions = appendRecent(r.t.HumanDecisions, s)
}

func pastTense(decision string) string {
	switch decision {
	case gate.DecisionApprove:
		return "approved"
	case gate.DecisionDeny:
		return "refused"
	case gate.DecisionAbort:
		return "aborted"
	case gate.DecisionWithdraw:
		return "withdrew"
	}
	return decision
}

// answered says what a person's answer to a question did: "answered",
// "said no", "confirmed the task is done", "aborted the task".
func answered(apr *store.Approval) string {
	confirmDone := apr.Tool == kernel.ConfirmDoneTool
	switch apr.Answer.Decision {
	case gate.DecisionApprove:
		if confirmDone {
			return "confirmed the task is done"
		}
		return "answered"
	case gate.DecisionDeny:
		if confirmDone {
			return "did not confirm the task is done"
		}
		return "said no"
	case gate.DecisionAbort:
		return "aborted the task"
	}
	return apr.Answer.Decision
}

// appendRecent appends and keeps the newest 20 entries.
func appendRecent(list []string, s ...string) []string {
	list = append(list, s...)
	if len(list) > 20 {
		list = list[len(list)-20:]
	}
	return list
}

func argsText(args map[string]any) string {
	var parts []string
	for _, k := range sortedKeys(args) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, args[k]))
	}
	return strings.Join(parts, " ")
}

// askHuman puts the model's question to a person.
func (r *run) askHuman(ctx context.Context, rec *plugin.StepRecord, d firewall.Decision) error {
	q := strings.TrimSpace(d.Reason)
	if q == "" {
		q = "The agent asks for your guidance (it gave no question)."
	}
	r.l.printf("?  the agent asks: %s\n", OneLine(q, 400))
	apr, err := r.ask(ctx, kernel.AskTool, q)
	if err != nil {
		return r.askFailed(ctx, err)
	}
	return r.took(rec, apr)
}

// askWhatNext asks a person what to do when the step produced nothing
// runnable.
func (r *run) askWhatNext(ctx context.Context, rec *plugin.StepRecord, q string) error {
	apr, err := r.ask(ctx, kernel.AskTool, q)
	if err != nil {
		return r.askFailed(ctx, err)
	}
	if err := r.took(rec, apr); err != nil {
		return err
	}
	if rec.Human != "" && r.t.Status == task.Running {
		r.t.Corrections = appendOnce(r.t.Corrections, "A person says: "+rec.Human)
	}
	return nil
}

// confirmDone asks a person to confirm the task is finished.
func (r *run) confirmDone(ctx context.Context, rec *plugin.StepRecord, d firewall.Decision) error {
	summary := strings.TrimSpace(d.Reason)
	if summary == "" {
		summary = thought(rec.Thought)
	}
	if r.t.Parent != "" {
		// A sub-task's end is its parent's to judge: the result goes back
		// to the parent's model; the parent's own end is confirmed.
		rec.Outcome = plugin.OutcomeAsked
		r.t.Status, r.t.Result = task.Done, summary
		r.l.printf("✓  sub-task done: %s\n", OneLine(summary, 400))
		return nil
	}
	r.l.printf("?  the agent says the task is done: %s\n", OneLine(summary, 400))
	apr, err := r.ask(ctx, kernel.ConfirmDoneTool, "The agent says the task is done. Confirm? Its summary: "+summary)
	if err != nil {
		return r.askFailed(ctx, err)
	}
	if err := r.took(rec, apr); err != nil {
		return err
	}
	if r.t.Status != task.Running {
		return nil
	}
	if apr.Status == store.StatusApproved {
		r.t.Status, r.t.Result = task.Done, summary
		r.l.printf("✓  done, confirmed by %s\n", apr.Answer.Who)
		return nil
	}
	if rec.Human == "" {
		rec.Human = "the person does not confirm that the task is done"
	}
	r.t.Corrections = appendOnce(r.t.Corrections, "The person did not confirm that the task is done: "+rec.Human)
	return nil
}

// took records a person's answer to a question in the step, and ends the
// task when the person aborted it or nobody answered in time.
func (r *run) took(rec *plugin.StepRecord, apr *store.Approval) error {
	if rec.Outcome == "" {
		rec.Outcome = plugin.OutcomeAsked
	}
	if rec.Action == "" {
		rec.Action = firewall.ActionAskHuman
	}
	rec.Human = answerWords(apr)
	if apr.Answer == nil {
		return errors.New("the question ended without an answer")
	}
	r.noteDecision(rec.N, apr, answered(apr))
	switch {
	case apr.Status == store.StatusAborted:
		r.t.Status, r.t.Result = task.Aborted, "aborted by a person at step "+fmt.Sprint(rec.N)
		r.l.printf("⏹  the person aborted the task\n")
	case apr.Answer.Who == "timeout":
		r.t.Status, r.t.Result = task.Paused, "paused: nobody answered the agent's question in time; resume it with `overseer resume "+r.t.ID+"`"
		r.l.printf("⏸  nobody answered in time: pausing the task\n")
	default:
		if rec.Human != "" {
			r.l.printf("   %s by %s: %s\n", pastTense(apr.Answer.Decision), apr.Answer.Who, OneLine(rec.Human, 300))
		} else {
			r.l.printf("   %s by %s\n", pastTense(apr.Answer.Decision), apr.Answer.Who)
		}
	}
	return nil
}

// askFailed ends the step when a question could not be asked or waited
// for: the task pauses (nothing runs without the answer).
func (r *run) askFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r.t.Status, r.t.Result = task.Paused, "paused: a person could not be asked: "+err.Error()
	return nil
}

// summaryStep gives the model one step to summarise at the step limit, then
// pauses the task.
func (r *run) summaryStep(ctx context.Context) error {
	t := r.t
	r.l.printf("\n── step limit of %d reached: asking the model for a summary\n", t.MaxSteps)
	rep, err := r.decide(ctx, t.Step+1, correctStepLimit)
	if err != nil {
		return err
	}
	summary := thought(rep.resp.Text)
	if summary == "" {
		summary = OneLine(rep.decision.Reason, 2000)
	}
	t.Step++
	t.Corrections = rep.next
	t.Steps = append(t.Steps, plugin.StepRecord{N: t.Step, Action: "summary", Outcome: plugin.OutcomeSummary, Output: summary})
	t.Status = task.Paused
	t.Result = fmt.Sprintf("paused at the step limit (%d steps); resume it with `overseer resume %s`.\n%s", t.MaxSteps, t.ID, summary)
	r.l.printf("⏸  paused at the step limit; checkpoint saved. Resume with `overseer resume %s`\n", t.ID)
	return r.checkpoint(ctx)
}

// modelNamer notes which model answered the calls a plugin made through
// it (a Planner reports its calls' usage, not their model).
type modelNamer struct {
	plugin.LLM
	model string
}

// Complete implements plugin.LLM.
func (m *modelNamer) Complete(ctx context.Context, req plugin.Request) (plugin.Response, error) {
	resp, err := m.LLM.Complete(ctx, req)
	if resp.Model != "" {
		m.model = resp.Model
	}
	return resp, err
}

// plan asks the Planner for a plan once, before the first step.
func (r *run) plan(ctx context.Context) error {
	t := r.t
	if r.l.cfg.Planner == nil || t.Planned {
		return nil
	}
	t.Planned = true
	llm := &modelNamer{LLM: r.l.cfg.LLM}
	p, u, err := r.l.cfg.Planner.Plan(ctx, llm, t.Goal, strings.Join(r.memories(ctx), "\n"))
	r.account(t.Step+1, plugin.PurposePlan, plugin.Response{Model: llm.model, Usage: u})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.l.printf("⚠  planning failed (%v): going on without a plan\n", err)
		return nil
	}
	if len(p.Subtasks) == 0 {
		return nil
	}
	t.Plan = &p
	r.l.printf("plan:\n")
	for i, s := range p.Subtasks {
		r.l.printf("  %d. %s\n", i+1, s.Title)
	}
	return r.checkpoint(ctx)
}

// advancePlan marks the current subtask done and lets the Planner reflect.
func (r *run) advancePlan(ctx context.Context, rec plugin.StepRecord) {
	t := r.t
	i := t.Plan.Current()
	if i < 0 {
		return
	}
	t.Plan.Subtasks[i].Done = true
	t.Plan.Subtasks[i].Result = OneLine(FirstNonEmpty(rec.Intent, rec.Thought, rec.Tool), 300)
	r.l.printf("✓  subtask %d done: %s\n", i+1, t.Plan.Subtasks[i].Title)
	if r.l.cfg.Planner == nil {
		return
	}
	llm := &modelNamer{LLM: r.l.cfg.LLM}
	p, u, err := r.l.cfg.Planner.Reflect(ctx, llm, t.Goal, *t.Plan, i, strings.Join(t.HumanDecisions, "\n"))
	r.account(t.Step, plugin.PurposeReflect, plugin.Response{Model: llm.model, Usage: u})
	if err != nil {
		r.l.printf("⚠  reflection failed (%v): keeping the plan\n", err)
		return
	}
	if p.Revision != t.Plan.Revision {
		r.l.printf("plan revised (%d): %s\n", p.Revision, OneLine(p.Notes, 200))
	}
	t.Plan = &p
}

// FirstNonEmpty returns the first of s that is not blank.
func FirstNonEmpty(s ...string) string {
	for _, x := range s {
		if strings.TrimSpace(x) != "" {
			return x
		}
	}
	return ""
}

// resumeStep rebuilds the reply of a step interrupted while it waited for
// a person, and arranges for the step to wait on the same approval.
func (r *run) resumeStep(p *task.PendingStep) reply {
	var d firewall.Decision
	if err := json.Unmarshal(p.Decision, &d); err != nil || d.Action == "" && d.Source == "" {
		// The checkpoint cannot say what was decided: a person decides.
		d = firewall.ParseDecision("")
	}
	r.resumed = p.Approval
	return reply{resp: plugin.Response{Text: p.Text}, decision: d, rejected: p.Rejected, looped: p.Looped}
}

// takeResumed returns, once, the approval a resumed step waits on, when it
// still exists.
func (r *run) takeResumed(ctx context.Context) *store.Approval {
	id := r.resumed
	r.resumed = ""
	if id == "" {
		return nil
	}
	apr, err := r.l.k.Store.GetApproval(ctx, id)
	if err != nil {
		r.l.printf("⚠  the approval %s the step waited on is gone (%v): asking again\n", id, err)
		return nil
	}
	return apr
}
