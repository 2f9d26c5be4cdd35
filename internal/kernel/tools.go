package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/guard/mcpguard"
	"github.com/overseer-dev/overseer/internal/guard/paths"
	"github.com/overseer-dev/overseer/internal/guard/resultscan"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/undo"
	"github.com/overseer-dev/overseer/plugin"
)

// UndoDir is the directory, inside the home, where previous file contents
// are kept.
const UndoDir = "undo"

// TypeUndo is the audit record type of an undo.
const TypeUndo = "undo"

// Sentinel errors of RunTool. Callers branch on them to tell "did not run"
// apart from "ran and failed".
var (
	// ErrBlocked means the verdict was block: the call never runs.
	ErrBlocked = errors.New("blocked")
	// ErrDenied means a person said no (or the approval timed out with
	// deny as the default, or was aborted).
	ErrDenied = errors.New("denied")
	// ErrNotKept means the previous content could not be kept, so the call
	// was not run: an allowed write must stay undoable.
	ErrNotKept = errors.New("previous content could not be kept")
	// ErrUnknownTool means the plugin does not offer the tool; nothing was
	// submitted.
	ErrUnknownTool = errors.New("no such tool")
)

// PathsGuard builds the paths guard for a kernel: Overseer's home, its
// policy file and the shared database's connection files are protected, the sandbox settings come from the policy's
// settings.sandbox and its guards.paths section (extra secret patterns),
// reads are tracked in reads, and the guard's soft levels never fall below
// the policy's defaults.
func PathsGuard(home, policyFile string, pol *policy.Policy, reads paths.ReadTracker, created ...paths.CreatedTracker) (*paths.Guard, error) {
	if pol == nil {
		pol = policy.Builtin()
	}
	var pc paths.PolicyConfig
	if _, err := pol.DecodeGuard("paths", &pc); err != nil {
		return nil, err
	}
	var protected []string
	if policyFile != "" {
		protected = append(protected, policyFile)
	}
	// The shared database's password and connection files (StoreFiles).
	protected = append(protected, StoreFiles(pol)...)
	cfg := paths.Config{
		OverseerHome:       home,
		Protected:          protected,
		Controls:           selfControls(),
		ReadablePaths:      pol.Settings.Sandbox.ReadablePaths,
		OutputDir:          pol.Settings.Sandbox.OutputDir,
		Reads:              reads,
		Secrets:            pc.Secrets,
		Default:            pol.Default,
		StrictForeignEdits: pc.StrictForeignEdits,
	}
	if len(created) > 0 {
		cfg.Created = created[0]
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("guards.paths: %w", err)
	}
	return paths.New(cfg), nil
}

// selfControls are this program's own files as control files: the hook
// command the agents run names this binary, or the lean hook entry next to
// it (which hands calls to this binary), by its absolute path, so an agent
// that overwrote, planted or removed either would switch Overseer off. The
// lean entry's path is protected whether or not it exists: `overseer init`
// installs one it finds there.
func selfControls() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	paths := []string{exe}
	if r, err := filepath.EvalSymlinks(exe); err == nil && r != exe {
		paths = append(paths, r)
	}
	var out []string
	for _, p := range paths {
		out = append(out, p+" delete", filepath.Join(filepath.Dir(p), LeanHookName)+" delete")
	}
	return out
}

// Reads returns the read tracker of this kernel's store: the paths guard's
// read-before-edit check and the builtin tools share it, and adapters that
// see an agent's reads may record them in it.
func (k *Kernel) Reads() *paths.StoreTracker {
	return paths.NewStoreTracker(k.Store, k.Clock)
}

// Undo opens the store of previous file contents ($OVERSEER_HOME/undo).
// With a shared database its index is the fleet's, its content this
// instance's: entries are marked with the instance (its host name and
// undo directory), and only the instance that kept one restores it.
func (k *Kernel) Undo() (*undo.Store, error) {
	dir := filepath.Join(k.Home, UndoDir)
	opts := undo.Options{Clock: k.Clock}
	if k.shared {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "this host"
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("undo: %w", err)
		}
		opts.Instance = host + ":" + abs
	}
	return undo.New(dir, k.Store, opts)
}

// Snapshot keeps the previous content of every path an allowed action is
// about to write, edit or delete (its resolved path facts), so that
// `overseer undo` can restore it. Call it after the verdict let the action
// through and before it runs; if it fails, the action must not run.
func (k *Kernel) Snapshot(ctx context.Context, a *action.Action) error {
	var targets []string
	for _, p := range a.Facts.Paths {
		if p.Intent != action.PathWrite && p.Intent != action.PathDelete {
			continue
		}
		if !filepath.IsAbs(p.Path) {
			return fmt.Errorf("%w: %q is not an absolute path", ErrNotKept, p.Path)
		}
		targets = append(targets, p.Path)
	}
	if len(targets) == 0 {
		return nil
	}
	if a.ID == "" {
		return fmt.Errorf("%w: the action has no id", ErrNotKept)
	}
	u, err := k.Undo()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotKept, err)
	}
	for _, p := range targets {
		if _, err := u.Keep(ctx, a.ID, a.Session, p); err != nil {
			return fmt.Errorf("%w: %v", ErrNotKept, err)
		}
	}
	return nil
}

// RunOptions tune RunTool.
type RunOptions struct {
	// Yes answers "approve" for the caller when the verdict asks a person
	// (confirm or approve): the answer is recorded with Who and channel
	// "cli-yes". A block stays a block.
	Yes bool
	// Who is the person answering with Yes (required with Yes).
	Who string
	// OnWait is called, when a person must answer and Yes is not set,
	// before RunTool starts waiting (to tell the user how to answer).
	OnWait func(*store.Approval)
}

// ToolRun is what RunTool did.
type ToolRun struct {
	Action   action.Action   `json:"action"`
	Verdict  action.Verdict  `json:"verdict"`
	Approval *store.Approval `json:"approval,omitempty"`
	// Ran is true when the tool was executed.
	Ran    bool          `json:"ran"`
	Result plugin.Result `json:"result"`
	// Undoable is true when previous content was kept for `overseer undo`.
	Undoable bool `json:"undoable,omitempty"`
	// Class is the PerceptionBus's classification of the result, and
	// Repeated whether it repeats the tool's previous output.
	Class    string `json:"class,omitempty"`
	Repeated bool   `json:"repeated,omitempty"`
	// Findings are what the scan of the output found (prompt injection,
	// secrets); then Result.Output is what the model is given: the output
	// marked as untrusted, with secrets masked when the policy says so.
	Findings *resultscan.Report `json:"findings,omitempty"`
	// Stripped are the arguments L1 removed because the tool's input
	// schema does not declare them; the result tells the model.
	Stripped []string `json:"stripped,omitempty"`
	// Redirected is where L4 made a write outside the working directory
	// land (under the output directory); the result tells the model.
	Redirected string `json:"redirected,omitempty"`
}

// RunTool runs one call of a Tool plugin through the whole firewall: it
// submits the action (judged, recorded, an approval opened if a person must
// answer); runs it when the verdict lets it through or a person approves
// (with opts.Yes, the caller is that person); keeps the previous content of
// the files it will change; executes it with read tracking for its
// session; and records the result. The action's kind defaults to the
// tool's spec's.
//
// It returns an error wrapping ErrBlocked or ErrDenied when the call did
// not run because of a verdict or an answer, ErrNotKept when undo data
// could not be kept; any other error also means the call did not run
// (unless ToolRun.Ran says it did). A tool that ran and failed is not an
// error: see ToolRun.Result.IsError.
func (k *Kernel) RunTool(ctx context.Context, t plugin.Tool, a *action.Action, opts RunOptions) (*ToolRun, error) {
	if t == nil {
		return nil, errors.New("run tool: no tool")
	}
	specs, err := t.Tools(ctx)
	if err != nil {
		return nil, fmt.Errorf("run tool: listing the tools: %w", err)
	}
	found := false
	var stripped []string
	for _, s := range specs {
		if s.Name == a.Tool {
			found = true
			if a.Kind == "" && s.Kind != "" {
				a.Kind = action.Kind(s.Kind)
			}
			// L1: arguments the tool's schema does not know are
			// stripped before the call is judged and run.
			f := firewall.NewArgFilter(s.InputSchema)
			a.Args, stripped = f.Filter(a.Args)
			mcpguard.MarkStripped(a, stripped)
			if f.Unchecked != "" {
				mcpguard.MarkSchemaUnchecked(a, f.Unchecked)
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTool, a.Tool)
	}
	// L4: a file written outside the working directory lands in the
	// output directory, when the policy names one.
	from, to, redirected := firewall.RedirectOutput(a, k.Engine.Policy().Settings.Sandbox.OutputDir)
	sub, err := k.Submit(ctx, a)
	if err != nil {
		return nil, err
	}
	run, err := k.runJudged(ctx, t, a, &ToolRun{Action: sub.Action, Verdict: sub.Verdict, Approval: sub.Approval, Stripped: stripped}, opts)
	if run != nil && run.Ran {
		// The model is told, with the result, what it asked for in vain
		// and where its file really is.
		if len(stripped) > 0 {
			run.Result.Output = strings.TrimRight(run.Result.Output, "\n") + "\n" + firewall.StrippedNotice(stripped)
		}
		if redirected {
			run.Redirected = to
			run.Result.Output = strings.TrimRight(run.Result.Output, "\n") + "\n" + firewall.RedirectedNotice(from, to)
		}
	}
	return run, err
}

// ResumeTool goes on with a call that was judged and put to a person
// before its caller stopped (a process that was killed while it waited):
// apr is that approval, as stored. The action and its verdict are taken
// from the approval, never from the caller, so what runs is exactly what
// was judged and asked about. It waits for the answer (returning at once
// if it came meanwhile) and runs the call as RunTool does.
func (k *Kernel) ResumeTool(ctx context.Context, t plugin.Tool, apr *store.Approval, opts RunOptions) (*ToolRun, error) {
	if t == nil || apr == nil {
		return nil, errors.New("resume tool: no tool or approval")
	}
	if d := apr.Verdict.Decider; d != nil && d.Source == action.SourceAgent {
		return nil, fmt.Errorf("%w: approval %s is a question, not a tool call", ErrDenied, apr.ID)
	}
	a := apr.Action
	if !apr.Verdict.Level.NeedsPerson() {
		return nil, fmt.Errorf("%w: approval %s is not for a call that waits for a person", ErrDenied, apr.ID)
	}
	specs, err := t.Tools(ctx)
	if err != nil {
		return nil, fmt.Errorf("resume tool: listing the tools: %w", err)
	}
	if !slices.ContainsFunc(specs, func(s plugin.ToolSpec) bool { return s.Name == a.Tool }) {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTool, a.Tool)
	}
	return k.runJudged(ctx, t, &a, &ToolRun{Action: a, Verdict: apr.Verdict, Approval: apr}, opts)
}

// runJudged runs a judged call: at once when its verdict lets it through,
// after a person's yes when it needs one, never when it is blocked.
func (k *Kernel) runJudged(ctx context.Context, t plugin.Tool, a *action.Action, run *ToolRun, opts RunOptions) (*ToolRun, error) {
	v := run.Verdict
	switch {
	case v.Level == action.Block:
		return run, fmt.Errorf("%w: %s", ErrBlocked, v.Summary())
	case v.Level.RunsWithoutPerson():
	case v.Level.NeedsPerson():
		if run.Approval == nil {
			return run, fmt.Errorf("%w: the verdict asks a person but no approval was opened", ErrDenied)
		}
		apr, err := k.decide(ctx, run.Approval, opts)
		if apr != nil {
			run.Approval = apr
		}
		if err != nil {
			return run, err
		}
	default:
		return run, fmt.Errorf("%w: unexpected level %s", ErrBlocked, v.Level)
	}
	if err := k.Snapshot(ctx, a); err != nil {
		k.recordNotRun(ctx, a, err)
		return run, err
	}
	for _, p := range a.Facts.Paths {
		if p.Intent == action.PathWrite || p.Intent == action.PathDelete {
			run.Undoable = true
		}
	}
	tctx := paths.WithTracking(ctx, paths.Tracking{Reads: k.Reads(), Session: a.Session})
	res, err := t.Execute(tctx, plugin.Call{Tool: a.Tool, Args: a.Args, Cwd: a.Cwd})
	run.Ran = true
	if err != nil {
		res = plugin.Result{Output: err.Error(), IsError: true}
	}
	run.Result = res
	rec, rerr := k.RecordResult(ctx, Result{ActionID: a.ID, Agent: a.Agent, Session: a.Session, Tool: a.Tool,
		Output: res.Output, IsError: res.IsError, Intent: a.Intent, Args: a.Args})
	if rerr != nil {
		return run, fmt.Errorf("the tool ran, but recording its result failed: %w", rerr)
	}
	run.Class, run.Repeated = rec.Class, rec.Repeated
	if rec.Findings != nil {
		out := res.Output
		if k.Results.Config().MaskSecrets {
			out = resultscan.Mask(out, rec.Findings.Secrets)
		}
		run.Findings = rec.Findings
		run.Result.Output = resultscan.Wrap(out, *rec.Findings)
	}
	return run, nil
}

// decide gets a person's answer to apr: the caller's own with opts.Yes,
// else by waiting. It returns nil error only when the action may run.
func (k *Kernel) decide(ctx context.Context, apr *store.Approval, opts RunOptions) (*store.Approval, error) {
	if opts.Yes {
		if strings.TrimSpace(opts.Who) == "" {
			return apr, fmt.Errorf("%w: --yes needs to know who answers", ErrDenied)
		}
		if _, _, err := k.Answer(ctx, apr.ID, store.Answer{Decision: gate.DecisionApprove, Who: opts.Who,
			Channel: "cli-yes", Reason: "approved for this one call with --yes"}); err != nil {
			return apr, fmt.Errorf("%w: recording the answer: %v", ErrDenied, err)
		}
	} else if opts.OnWait != nil {
		opts.OnWait(apr)
	}
	// Wait returns at once for an answered approval, and consumes it: the
	// approval lets exactly this one call through.
	done, err := k.Wait(ctx, apr.ID)
	if err != nil {
		return done, fmt.Errorf("%w: %v", ErrDenied, err)
	}
	if !gate.Allowed(done) {
		why := string(done.Status)
		if done.Answer != nil {
			why = fmt.Sprintf("%s by %s via %s", done.Status, done.Answer.Who, done.Answer.Channel)
			if done.Answer.Reason != "" {
				why += ": " + done.Answer.Reason
			}
		}
		return done, fmt.Errorf("%w: %s", ErrDenied, why)
	}
	return done, nil
}

// recordNotRun notes in the audit log that an allowed action was not run.
func (k *Kernel) recordNotRun(ctx context.Context, a *action.Action, err error) {
	_, _ = k.Audit.Append(ctx, audit.Entry{Type: audit.TypeError, ActionID: a.ID, Agent: a.Agent,
		Session: a.Session, Tool: a.Tool, Data: map[string]string{"error": "not run: " + err.Error()}})
}

// UndoRecord is the audit record of an undo.
type UndoRecord struct {
	Who     string   `json:"who"`
	Paths   []string `json:"paths"`
	Files   int      `json:"files"`
	Errors  []string `json:"errors,omitempty"`
	Session string   `json:"session,omitempty"`
}

// UndoAction restores what was kept before action actionID changed files,
// and records the undo in the audit log (also when part of it failed).
func (k *Kernel) UndoAction(ctx context.Context, actionID, who string) ([]undo.Entry, error) {
	u, err := k.Undo()
	if err != nil {
		return nil, err
	}
	entries, rerr := u.Restore(ctx, actionID)
	if undo.NothingDone(rerr) {
		return entries, rerr
	}
	rec := UndoRecord{Who: who}
	for _, e := range entries {
		rec.Paths = append(rec.Paths, e.Path)
		rec.Files += len(e.Files)
		rec.Session = e.Session
	}
	if rerr != nil {
		for _, line := range strings.Split(rerr.Error(), "\n") {
			rec.Errors = append(rec.Errors, line)
		}
	}
	agent, tool := k.actionOrigin(ctx, actionID)
	if _, err := k.Audit.Append(ctx, audit.Entry{Type: TypeUndo, ActionID: actionID, Agent: agent,
		Session: rec.Session, Tool: tool, Data: rec}); err != nil {
		return entries, errors.Join(rerr, fmt.Errorf("recording the undo: %w", err))
	}
	return entries, rerr
}

// UndoLast undoes the last n not yet undone actions of a session, newest
// first. It returns the ids it undid; it stops at the first failure.
func (k *Kernel) UndoLast(ctx context.Context, session string, n int, who string) ([]string, error) {
	u, err := k.Undo()
	if err != nil {
		return nil, err
	}
	entries, err := u.Last(ctx, session, n)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if len(ids) > 0 && ids[len(ids)-1] == e.ActionID {
			continue
		}
		ids = append(ids, e.ActionID)
	}
	var done []string
	for _, id := range ids {
		if _, err := k.UndoAction(ctx, id, who); err != nil {
			return done, fmt.Errorf("undoing %s: %w", id, err)
		}
		done = append(done, id)
	}
	return done, nil
}

// actionOrigin looks up the agent and tool of a recorded action.
func (k *Kernel) actionOrigin(ctx context.Context, actionID string) (agent, tool string) {
	recs, err := k.Store.QueryAudit(ctx, store.AuditQuery{ActionID: actionID, Types: []string{audit.TypeAction}, Limit: 1})
	if err != nil || len(recs) == 0 {
		return "", ""
	}
	var a action.Action
	if json.Unmarshal(recs[0].Data, &a) == nil {
		return a.Agent, a.Tool
	}
	return recs[0].Agent, recs[0].Tool
}

// LeanHookName is the file name of the lean hook entry next to the binary
// (hookcore.LeanName; the kernel imports no front end, and a test in
// hookcore keeps the two the same). Its path is protected like the
// binary's, whether or not the file exists.
const LeanHookName = "overseer-hook"
