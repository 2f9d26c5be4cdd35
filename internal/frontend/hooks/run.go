// Package hooks makes Overseer the permission layer of the coding agents
// people already run — Claude Code, OpenAI Codex CLI and Gemini CLI —
// through their hook systems: `overseer hook <agent>`, run before and
// after each tool call (directly, or handed on by the lean entry
// overseer-hook of package hookcore, which parses the events, maps tools
// to Actions and answers in each agent's format). This package has
// Overseer judge the call (a running daemon, or the kernel in this process
// when none runs), holds it while a person decides when the verdict asks
// for one, keeps the previous content of files the call will change, and
// scans results after the call.
//
// Every failure ends in a deny: the agents treat a hook's exit status other
// than 0 and 2 as a non-blocking error and run the tool anyway, so Run
// answers only with 0 (a decision on standard output) or 2 (a reason on
// standard error), also after a panic or when its own deadline passes.
package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/frontend/hookcore"
	"github.com/overseer-dev/overseer/internal/guard/resultscan"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// Connect reaches Overseer: the daemon when one runs, else the kernel in
// this process. The returned function releases what it opened.
type Connect func(ctx context.Context) (Backend, func(), error)

// Runner handles hook calls for one agent.
type Runner struct {
	Agent string
	// Confirm and MaxWait: see Config. MaxWait 0 means DefaultMaxWait.
	Confirm ConfirmMode
	MaxWait time.Duration
	Tools   *Table
	Connect Connect
	// Home is Overseer's home directory; calls of agents that send no
	// tool-use id are matched to their post event through files under it.
	Home string
	// Deadline bounds the whole call; when it passes the call is denied.
	// Zero means MaxWait plus DeadlineMargin. It must stay below the
	// agent's own hook timeout (a hook the agent kills counts as a
	// non-blocking error there: the call would run).
	Deadline time.Duration
	// ConfigErr, when set, denies every call: the configuration could not
	// be read, and a guess could let something through.
	ConfigErr error
	// Results scans what a call returned (post events) for prompt
	// injection and secrets; a hit is told to the model where the agent
	// lets a hook do so. Nil: ResultsFrom, else the built-in default
	// configuration.
	Results *resultscan.Scanner
	// ResultsFrom, when Results is nil, builds the scanner when a post
	// event first needs one (reading the policy is most of a hook's start-up
	// cost, and a pre event does not need it). A nil scanner from it means
	// the default configuration.
	ResultsFrom func() *resultscan.Scanner
}

// DeadlineMargin is added to MaxWait for the hook's own deadline; `overseer
// init` sets the agent's timeout a further margin above it.
const DeadlineMargin = hookcore.DeadlineMargin

func (r *Runner) maxWait() time.Duration {
	if r.MaxWait > 0 {
		return r.MaxWait
	}
	return DefaultMaxWait
}

// Run handles one hook call: it reads the event from stdin, writes the
// answer, and returns the exit status, which is 0 or 2 and nothing else.
// A panic, a failure of any part or the deadline passing ends in a deny.
func (r *Runner) Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	limit := r.Deadline
	if limit <= 0 {
		limit = r.maxWait() + DeadlineMargin
	}
	return hookcore.Serve(ctx, limit, func(ctx context.Context) Response { return r.handle(ctx, stdin) }, stdout, stderr)
}

func (r *Runner) handle(ctx context.Context, stdin io.Reader) Response {
	data, err := io.ReadAll(io.LimitReader(stdin, MaxInput+1))
	if err != nil {
		return Failure("could not read the hook event: " + err.Error())
	}
	ev, err := ParseEvent(r.Agent, data)
	if err != nil {
		return Failure(err.Error() + ", so the call is denied")
	}
	if ev.Phase == PhasePost {
		rep := r.post(ctx, ev)
		return RenderPost(ev, rep, r.scanner().Config().OnInjection)
	}
	if r.ConfigErr != nil {
		return Failure(r.ConfigErr.Error() + " — every call is denied until it is fixed")
	}
	d, err := r.pre(ctx, ev)
	if err != nil {
		return Failure(err.Error() + " — so the call is denied")
	}
	return Render(ev, d)
}

// pre judges a call before it runs.
func (r *Runner) pre(ctx context.Context, ev *Event) (Decision, error) {
	if r.Connect == nil {
		return Decision{}, errors.New("no way to reach Overseer")
	}
	a := r.Tools.Action(ev)
	b, release, err := r.Connect(ctx)
	if err != nil {
		return Decision{}, fmt.Errorf("cannot reach Overseer: %w", err)
	}
	defer release()
	// The model use so far counts before the call is judged, so that a
	// budget cap it reaches refuses this call.
	reportUsage(ctx, b, ev)
	opts := DecideOptions{MaxWait: r.maxWait(), AskConfirm: r.Confirm == ConfirmAsk && CanAsk(ev.Agent)}
	d, err := b.Decide(ctx, a, opts)
	if err != nil {
		return Decision{}, err
	}
	if d.Outcome != Allow {
		return d, nil
	}
	// Keep what the call will change before letting it run. The facts of a
	// shell command come from the analysis Overseer made while judging it
	// (the kernel in this process fills them in; a daemon has them in its
	// record of the action); only when they cannot be had is the command
	// analysed here.
	analysed := len(a.Facts.Commands) > 0 || len(a.Facts.Paths) > 0
	if a.Kind == action.KindShell && !analysed && a.ID != "" {
		if fs, ok := b.(FactsSource); ok {
			if f, err := fs.Facts(ctx, a.ID); err == nil && (len(f.Commands) > 0 || len(f.Paths) > 0) {
				a.Facts, analysed = f, true
			}
		}
	}
	if !analysed || a.Kind != action.KindShell {
		if err := FillTargets(ctx, a); err != nil {
			return Decision{}, fmt.Errorf("could not tell which files the call changes: %w", err)
		}
	}
	if HasTargets(a) {
		if err := b.Keep(ctx, a); err != nil {
			return Decision{}, fmt.Errorf("could not keep the previous content for `overseer undo`: %w", err)
		}
	}
	if ev.ToolUseID == "" && a.ID != "" {
		r.remember(ev, a.ID)
	}
	return d, nil
}

// post scans what a call returned and records it. It never blocks the
// agent: failures to record are told on standard error only. The scan is
// made here, whatever happens to the record, so that the model is warned
// even when Overseer's daemon cannot be reached.
func (r *Runner) post(ctx context.Context, ev *Event) resultscan.Report {
	res := kernel.Result{Agent: ev.Agent, Session: ev.SessionID, Tool: ev.ToolName}
	res.Output, res.IsError = ResultOf(ev)
	rep := r.scanner().Scan(res.Output)
	if cid := ActionID(ev); cid != "" {
		res.ClientID = cid // the kernel finds the action by its call id
	} else if res.ActionID = r.recall(ev); res.ActionID == "" && !rep.Hit() {
		return rep // the call was not one this hook let through, and is clean
	}
	if r.Connect == nil {
		return rep
	}
	b, release, err := r.Connect(ctx)
	if err != nil {
		return rep
	}
	defer release()
	_ = b.Record(ctx, res)
	return rep
}

func (r *Runner) scanner() *resultscan.Scanner {
	if r.Results == nil && r.ResultsFrom != nil {
		r.Results = r.ResultsFrom()
	}
	if r.Results != nil {
		return r.Results
	}
	s, err := resultscan.New(resultscan.Config{}, nil)
	if err != nil { // the zero configuration is valid; a nil scanner reports every result unscanned
		return nil
	}
	return s
}

// ResultOf reads the output of a post event and whether the call failed.
func ResultOf(ev *Event) (output string, isError bool) {
	if ev.Error != "" {
		return ev.Error, true
	}
	if len(ev.ToolResponse) == 0 {
		return "", false
	}
	var v any
	if err := json.Unmarshal(ev.ToolResponse, &v); err != nil {
		return string(ev.ToolResponse), false
	}
	switch v := v.(type) {
	case string:
		return v, false
	case map[string]any:
		isError = truthy(v["is_error"]) || truthy(v["isError"]) || v["success"] == false ||
			truthy(v["interrupted"]) || nonZero(v["exit_code"]) || nonZero(v["exitCode"])
		if e, ok := v["error"]; ok && e != nil && e != "" {
			isError = true
		}
		var parts []string
		for _, k := range []string{"stdout", "stderr", "output", "llmContent", "content", "result"} {
			if s, ok := v[k].(string); ok && s != "" {
				parts = append(parts, s)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n"), isError
		}
	}
	return string(ev.ToolResponse), isError
}

func truthy(v any) bool { b, ok := v.(bool); return ok && b }

func nonZero(v any) bool { f, ok := v.(float64); return ok && f != 0 }

func (r *Runner) remember(ev *Event, id string) { hookcore.Remember(r.Home, ev, id) }

func (r *Runner) recall(ev *Event) string { return hookcore.Recall(r.Home, ev) }

// HasTargets reports whether a writes or deletes a path.
func HasTargets(a *action.Action) bool {
	for _, p := range a.Facts.Paths {
		if p.Intent == action.PathWrite || p.Intent == action.PathDelete {
			return true
		}
	}
	return false
}
