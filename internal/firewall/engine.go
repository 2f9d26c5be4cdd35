// Package firewall is the FirewallEngine: the only place a security
// judgement is made. It runs an action through the five layers (L1 params,
// L2 behaviour, L3 permission, L4 sandbox, L5 metacognition) against an
// immutable policy snapshot and read-only perception signals, and returns a
// Verdict. Evaluation has no side effects; recording what happened is the
// kernel's job. Every error path fails closed: an action that cannot be
// evaluated is never auto.
package firewall

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/autorule"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/grant"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/perception"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// Signals is what the engine reads from the PerceptionBus.
type Signals interface {
	Recent(session string, window time.Duration) []perception.ActionSample
	LowConfidenceStreak(session string, below float64) int
	StagnationCount(session string) int
	RecentToolStats(ctx context.Context, tool string) (perception.ToolStats, error)
}

// LoopSignals is what Signals may also tell: how many calls of a tool a
// loop limit put to a person in a session that the person approved. Each
// doubles the session's same_tool limit for the tool (see behaviour).
type LoopSignals interface {
	LoopApprovals(session, tool string) int
}

// maxLoopDoublings caps how often approvals double a same_tool limit.
const maxLoopDoublings = 3

// Config builds an Engine.
type Config struct {
	Policy  *policy.Policy  // the admin layer; nil means the built-in default
	Rules   store.RuleStore // the user layer; nil means none
	Guards  []guard.Guard   // hard guards, run in order in L3
	Signals Signals         // perception; nil means no behaviour signals
	Clock   clock.Clock     // nil means the real clock
	// Protected are paths no agent action may touch (Overseer's own home,
	// database and policy files): any action on them is blocked.
	Protected []string
	// Tools is the agents' tool table (the built-in table extended by
	// hooks.yaml); nil means the built-in table. Every action that names
	// an agent is read through it, whichever entry point it came by.
	Tools *action.ToolTable
	// ToolsErr, when set, is why the configured tool table could not be
	// read: every action is put to a person until it is fixed.
	ToolsErr error
	// Controls are the auto-rules and anomaly rules; nil means none.
	Controls Controls
	// Grants are delegated mode's grants; nil means none.
	Grants Grants
}

// Grants is what the engine reads of delegated mode: the grants whose
// subject is a's caller (see grant.Subject), with their use. An error
// means no grant applies: the call is judged by the policy alone.
type Grants interface {
	GrantsFor(ctx context.Context, a *action.Action) ([]grant.State, error)
}

// Engine evaluates actions. It is safe for concurrent use.
type Engine struct {
	rules     store.RuleStore
	guards    []guard.Guard
	signals   Signals
	clock     clock.Clock
	protected []string
	tools     *action.ToolTable
	toolsErr  error
	grants    Grants
	controls  Controls

	snap atomic.Pointer[snapshot]
	mu   sync.Mutex // serialises reloads
}

// snapshot is the policy an evaluation reads: the admin layer and the
// compiled user layer at one version.
type snapshot struct {
	admin       *policy.Policy
	user        []*policy.Compiled
	userVersion int64
	userErr     error // the user layer failed to load: fail closed
}

// New builds an engine and loads the user layer.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.Policy == nil {
		cfg.Policy = policy.Builtin()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	e := &Engine{
		rules:    cfg.Rules,
		guards:   cfg.Guards,
		signals:  cfg.Signals,
		clock:    cfg.Clock,
		tools:    cfg.Tools,
		toolsErr: cfg.ToolsErr,
		grants:   cfg.Grants,
		controls: cfg.Controls,
	}
	for _, p := range cfg.Protected {
		if p != "" {
			e.protected = append(e.protected, filepath.Clean(p))
		}
	}
	e.snap.Store(&snapshot{admin: cfg.Policy})
	if err := e.Reload(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// Policy returns the admin layer in force.
func (e *Engine) Policy() *policy.Policy { return e.snap.Load().admin }

// UserRules returns the compiled user layer in force.
func (e *Engine) UserRules() []*policy.Compiled { return e.snap.Load().user }

// Reload re-reads the user layer if it changed. On failure the engine keeps
// evaluating, but every action is put to a person until a reload succeeds.
func (e *Engine) Reload(ctx context.Context) error {
	if e.rules == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	old := e.snap.Load()
	ver, err := e.rules.RulesVersion(ctx)
	if err == nil && ver == old.userVersion && old.userErr == nil && old.user != nil {
		return nil
	}
	var compiled []*policy.Compiled
	if err == nil {
		compiled, err = e.loadUser(ctx)
	}
	next := &snapshot{admin: old.admin, user: compiled, userVersion: ver, userErr: err}
	if err != nil {
		next.user = old.user
		next.userErr = fmt.Errorf("user policy layer: %w", err)
	}
	e.snap.Store(next)
	return next.userErr
}

// SetPolicy replaces the admin layer (after the file changed on disk).
func (e *Engine) SetPolicy(p *policy.Policy) {
	e.mu.Lock()
	defer e.mu.Unlock()
	old := e.snap.Load()
	e.snap.Store(&snapshot{admin: p, user: old.user, userVersion: old.userVersion, userErr: old.userErr})
}

func (e *Engine) loadUser(ctx context.Context) ([]*policy.Compiled, error) {
	stored, err := e.rules.ListUserRules(ctx, e.clock.Now())
	if err != nil {
		return nil, err
	}
	rules := make([]policy.Rule, 0, len(stored))
	for _, s := range stored {
		r, err := policy.DecodeRuleJSON(s.Rule)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", s.ID, err)
		}
		rules = append(rules, r)
	}
	// Examples were checked when each rule was added; re-checking them here
	// with a different analyzer must not take the whole user layer down.
	return policy.CompileRules(policy.LayerUser, rules, policy.Options{SkipExamples: true})
}

// Prepare fills in what adapters leave out, reading a call of an agent's
// own tool through the built-in tool table: the kind, the time, and the
// basic path facts. Evaluate calls it (with the engine's table); callers
// that need the facts before evaluating (explain, undo) may call it too.
// It is idempotent.
func Prepare(a *action.Action, now time.Time) {
	prepare(nil, a, now)
}

// prepare is Prepare with a tool table; it reports what the table says of
// the action's tool, when the table applies to it.
func prepare(tools *action.ToolTable, a *action.Action, now time.Time) (action.ToolMapping, bool) {
	m, known := tools.Normalize(a)
	if a.Kind == "" {
		a.Kind = action.InferKind(a.Tool)
	}
	if a.Time.IsZero() {
		a.Time = now
	}
	if a.Args == nil {
		a.Args = map[string]any{}
	}
	if known {
		action.DeriveToolFacts(a, m)
	} else {
		action.DeriveFileFacts(a)
	}
	return m, known
}

// Evaluate judges one action. It never returns an unset level and never
// returns auto when any part of the evaluation failed. It fills in the
// action's derived facts.
func (e *Engine) Evaluate(ctx context.Context, a *action.Action) (v action.Verdict) {
	return e.evaluate(ctx, a, nil)
}

// evaluate is Evaluate; findings, when not nil, is set to the hybrid
// controls' findings.
func (e *Engine) evaluate(ctx context.Context, a *action.Action, findings *[]autorule.Finding) (v action.Verdict) {
	ev := evaluation{e: e, a: a, snap: e.snap.Load()}
	defer func() {
		if r := recover(); r != nil {
			ev.add(action.Reason{Layer: "engine", Source: action.SourceError, Level: action.Approve,
				Message: fmt.Sprintf("evaluation failed: %v", r)})
			v = ev.verdict()
		}
		if findings != nil {
			*findings = ev.findings
		}
	}()
	ev.tool, ev.toolKnown = prepare(e.tools, a, e.clock.Now())
	ev.run(ctx)
	return ev.verdict()
}

// evaluation is the state of one pass through the pipeline.
type evaluation struct {
	e       *Engine
	a       *action.Action
	snap    *snapshot
	reasons []action.Reason
	preview *action.Preview
	hints   []string
	// floor is the strictest hard finding; soft is the guards' classification.
	floor, soft action.Level
	base        action.Level // the policy's decision (L3)
	// admin and user are the rules of the policy layers that matched.
	admin, user *policy.Compiled
	// tool is what the tool table says of the action's tool, if it knows it.
	tool      action.ToolMapping
	toolKnown bool
	stop      bool               // the agent should stop: it keeps repeating a refused call
	findings  []autorule.Finding // the hybrid controls'
}

func (ev *evaluation) add(r action.Reason) { ev.reasons = append(ev.reasons, r) }

func (ev *evaluation) fail(layer, what string, err error) {
	ev.add(action.Reason{Layer: layer, Source: action.SourceError, Level: action.Approve,
		Message: fmt.Sprintf("%s failed, so a person must decide: %v", what, err)})
}

func (ev *evaluation) run(ctx context.Context) {
	ev.paused()
	ev.params()
	// L2 reads the facts the guards derive (what the action writes,
	// executes, sends), so it is judged after them.
	ev.permission(ctx)
	ev.controls()
	ev.behaviour()
	ev.sandbox()
	ev.metacognition(ctx)
	ev.refused(ctx)
	ev.usage(ctx)
}

// L1: the arguments themselves.
func (ev *evaluation) params() {
	a, set := ev.a, ev.snap.admin.Settings.Params
	if strings.TrimSpace(a.Tool) == "" {
		ev.add(action.Reason{Layer: "L1", Source: action.SourceParams, Name: "tool-name", Level: action.Block,
			Message: "the action names no tool"})
		return
	}
	if !a.Kind.Valid() {
		ev.add(action.Reason{Layer: "L1", Source: action.SourceParams, Name: "kind", Level: action.Approve,
			Message: fmt.Sprintf("unknown kind %q", a.Kind)})
	}
	if ev.e.toolsErr != nil {
		ev.fail("L1", "reading the agents' tool table", ev.e.toolsErr)
	}
	if set.MaxArgBytes > 0 {
		b, err := json.Marshal(a.Args)
		switch {
		case err != nil:
			ev.fail("L1", "encoding the arguments", err)
		case len(b) > set.MaxArgBytes:
			ev.add(action.Reason{Layer: "L1", Source: action.SourceParams, Name: "max-arg-bytes", Level: action.Confirm,
				Message: fmt.Sprintf("the arguments are %d bytes, over the cap of %d", len(b), set.MaxArgBytes)})
		}
	}
}

// L2: repeats and loops within a session, judged by effects. The same
// call repeated same_args times with nothing changed in between (no file
// written by another call, and its result the same each time it was
// reported), or same_tool calls of one tool with the same shape (the
// programs a command runs and the hosts it reaches) that write, delete,
// execute or send, with no file written in between by other work, raise
// the level. A call run again after the files changed is progress,
// not a loop; reads of different files are never counted. same_tool
// doubles for a tool with each call of it the limit put to a person that
// they approved.
func (ev *evaluation) behaviour() {
	if ev.e.signals == nil {
		return
	}
	a, set := ev.a, ev.snap.admin.Settings.Loop
	window := time.Duration(set.Window)
	if window <= 0 || (set.SameArgs <= 0 && set.SameTool <= 0) {
		return
	}
	sameArgs, sameTool := set.SameArgs, set.SameTool
	if ls, ok := ev.e.signals.(LoopSignals); ok && sameTool > 0 {
		// A person who let a run of a tool's calls go on has said the
		// session's pace with it is theirs: the limit doubles with each
		// such approval (the count started again at it), up to 8 times.
		sameTool <<= min(ls.LoopApprovals(sessionKey(a), sampleTool(a)), maxLoopDoublings)
	}
	if a.Confidence != nil && *a.Confidence < set.LowConfidence {
		// A decider that is unsure of itself gets less rope.
		sameArgs -= max(1, sameArgs/3)
		sameTool -= max(1, sameTool/3)
	}
	hash := a.ArgsHash()
	effect, _ := effects(a, ev.reasons, ev.tool, ev.toolKnown)
	shape := loopShape(a)
	nArgs, nTool := 1, 0 // this action counts
	if effect {
		nTool = 1
	}
	// nShape is nTool without the ends other work's writes make: a run of
	// one shape with a trivial write slipped between its calls (echo >
	// /tmp/x) is still a run, asked about at maxRunFactor times same_tool.
	nShape := nTool
	tool := sampleTool(a)
	for _, s := range ev.e.signals.Recent(sessionKey(a), window) {
		sameShape := s.Tool == tool && (s.Shape == shape || s.Shape == "")
		if s.Writes && s.ArgsHash != hash {
			// Something changed since: a repeat after it is a retry, not
			// a loop.
			nArgs = 1
		}
		if s.Writes && !sameShape {
			// Other work changed files since: what this call reads may
			// be new (a test run after an edit) and its run starts again.
			nTool = min(nTool, 1)
		}
		if s.Tool != tool {
			continue
		}
		if s.ArgsHash == hash {
			nArgs++
		}
		if effect && s.Effect && sameShape {
			nTool++
			nShape++
		}
	}
	if rs, ok := ev.e.signals.(ResultSignals); ok && nArgs > 1 {
		// A repeat whose last result differed from the one before made
		// progress (a status polled until it changes): only the runs since
		// its result last changed count, and this one.
		if same, known := rs.SameResults(sessionKey(a), hash); known {
			nArgs = min(nArgs, same+1)
		}
	}
	level := set.Level
	if !level.Valid() {
		level = action.Confirm
	}
	switch {
	case sameArgs > 0 && nArgs >= sameArgs:
		ev.add(action.Reason{Layer: "L2", Source: action.SourceLoop, Name: "same-args", Level: level,
			Message: fmt.Sprintf("the same %s call with the same arguments is repeated %d times within %s, with no file changed and the same result each time", a.Tool, nArgs, window)})
	case sameTool > 0 && nTool >= sameTool:
		ev.add(action.Reason{Layer: "L2", Source: action.SourceLoop, Name: "same-tool", Level: level,
			Message: fmt.Sprintf("%s is called %d times within %s, each running the same programs or the same kind of call and writing, deleting, running or sending something, with no file changed by other work in between", a.Tool, nTool, window)})
	case sameTool > 0 && nShape >= maxRunFactor*sameTool:
		ev.add(action.Reason{Layer: "L2", Source: action.SourceLoop, Name: "same-tool", Level: level,
			Message: fmt.Sprintf("%s is called %d times within %s, each running the same programs or the same kind of call and writing, deleting, running or sending something (files changed by other work in between)", a.Tool, nShape, window)})
	}
}

// ResultSignals is what Signals may also tell: how many of the latest
// results of a call (by its arguments' hash) in a session were identical in
// a row, and whether any was recorded. Where none was (a caller that
// reports no results, another instance's calls), repeats are counted as
// they come.
type ResultSignals interface {
	SameResults(session, argsHash string) (same int, known bool)
}

// loopHost names a URL's server for a shape, one name for its spellings:
// lower case, without a trailing dot or the scheme's default port, and
// "loopback" for this machine (localhost, 127.0.0.1, ::1).
func loopHost(u *url.URL) string {
	h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if ip := net.ParseIP(h); h == "localhost" || strings.HasSuffix(h, ".localhost") || ip != nil && ip.IsLoopback() {
		h = "loopback"
	}
	switch p := strings.TrimLeft(u.Port(), "0"); {
	case p == "", p == "80" && u.Scheme == "http", p == "443" && u.Scheme == "https":
	default:
		h += ":" + p
	}
	return h
}

// shells run a command string whose own commands are the call's shape.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "fish": true}

// maxRunFactor bounds a run of one shape that other work's writes keep
// starting again: at this many times same_tool it is asked about all the
// same. An edit before each test run is progress, but sixty test runs in a
// window are more than a person's edit-and-test pace, while a trivial
// write slipped between a damaging loop's calls would otherwise reset it
// for ever.
const maxRunFactor = 3

// loopShape names what kind of call a is, for same_tool's counting: for a
// command, the programs it runs (with their subcommands: the first operand
// when it is a plain lower-case word, go test, git checkout) and the hosts
// of the URLs it reaches (sorted, each once), so that a flood of one
// program's calls is counted whatever their arguments while a session's
// mix of ordinary commands is not one run; for any other call, its kind
// (the tool is compared apart).
// A command whose programs are not known has the shape of every other such
// command. The shape is a hash: samples are published between instances
// without their arguments.
func loopShape(a *action.Action) string {
	f := a.Facts
	var parts []string
	if a.Kind != action.KindShell && len(f.Commands) == 0 {
		parts = append(parts, "kind:"+string(a.Kind))
	}
	loud := slices.ContainsFunc(f.Commands, func(c action.Command) bool { return !c.Quiet })
	for _, c := range f.Commands {
		if loud && (c.Quiet || shells[c.Name]) {
			// A read or a no-op beside the work (true; X, X | cat), or
			// the shell a command string runs in (sh -c 'X'): not what
			// the call does.
			continue
		}
		part := "cmd:" + c.Name // "" when not static
		if sub := c.Sub(); subcommandWord(sub) && !namesPath(f.Paths, sub) {
			part += " " + sub
		}
		parts = append(parts, part)
	}
	for _, u := range f.URLs {
		host := "?"
		if pu, err := url.Parse(u); err == nil && pu.Host != "" {
			host = loopHost(pu)
		}
		parts = append(parts, "host:"+host)
	}
	slices.Sort(parts)
	parts = slices.Compact(parts)
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// namesPath reports whether an operand is the name of one of the paths
// the call acts on (rm -rf docs): a file, not a subcommand, which a loop
// over the project's directories varies.
func namesPath(paths []action.PathFact, op string) bool {
	for _, p := range paths {
		if filepath.Base(p.Path) == op || p.Path == op {
			return true
		}
	}
	return false
}

// subcommandWord reports whether an operand reads as a subcommand: a plain
// lower-case word, no digits, dots or slashes (which files and generated
// names have, and a loop varies).
func subcommandWord(s string) bool {
	if len(s) < 2 || len(s) > 24 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && c != '-' {
			return false
		}
	}
	return s[0] != '-'
}

// LoopShape is the shape under which the kernel records a's sample (see
// loopShape).
func LoopShape(a *action.Action) string { return loopShape(a) }

// Effects reports, for a judged action and its verdict, whether the action
// has an effect L2's counting applies to (it writes, deletes, executes or
// sends) and whether it writes or deletes a file. The kernel records them
// with the action's sample.
func (e *Engine) Effects(a *action.Action, v *action.Verdict) (effect, writes bool) {
	m, known := e.tools.Lookup(a.Agent, a.Tool)
	// The table applied only if it gave the action its kind.
	return effects(a, v.Reasons, m, known && a.Kind == m.Kind)
}

// effects reads an action's facts: a path written, deleted or handed to a
// program of unknown effect, or a URL, is an effect; a command is one
// unless the guards classified every part of it as read-only (auto); a
// file read, an SQL read, a tool that only reads files, and the agent's own
// bookkeeping (a tool the table gives a level, with no effect) are not.
// What is not known to be effect-free is counted.
func effects(a *action.Action, reasons []action.Reason, m action.ToolMapping, known bool) (effect, writes bool) {
	f := a.Facts
	for _, p := range f.Paths {
		if p.Intent != action.PathRead {
			effect = true
			if p.Intent == action.PathWrite || p.Intent == action.PathDelete {
				writes = true
			}
		}
	}
	if effect || len(f.URLs) > 0 {
		return true, writes
	}
	switch a.Kind {
	case action.KindFileWrite, action.KindFileEdit, action.KindFileDelete, action.KindNetFetch:
		return true, false
	case action.KindSQL:
		return f.SQLClass != "read", false
	}
	if a.Kind == action.KindShell || len(f.Commands) > 0 {
		// Read-only commands: every guard finding at auto, and at least one.
		var guardMax action.Level
		for _, r := range reasons {
			if r.Layer == "L3" && r.Source == action.SourceGuard {
				guardMax = action.Max(guardMax, r.Level)
			}
		}
		return guardMax != action.Auto, false
	}
	switch {
	case a.Kind == action.KindFileRead:
		return false, false
	case len(f.Paths) > 0:
		return false, false // every path is a read
	case known && m.Level.Valid():
		return false, false // the agent's own bookkeeping
	}
	return true, false
}

// sessionKey groups an action's behaviour signals.
func sessionKey(a *action.Action) string {
	return perception.BoundName(a.Agent + "/" + a.Session)
}

// sampleTool is the tool name under which the signals count a's calls
// (perception.BoundName).
func sampleTool(a *action.Action) string { return perception.BoundName(a.Tool) }

// SampleTool is the tool name under which the kernel records a's samples.
func SampleTool(a *action.Action) string { return sampleTool(a) }

// SessionKey is the key under which the kernel records an action's signals.
func SessionKey(a *action.Action) string { return sessionKey(a) }

// L3: hard guards and the two policy layers.
func (ev *evaluation) permission(ctx context.Context) {
	for i := range ev.a.Facts.Commands {
		ev.a.Facts.Commands[i].LocalCluster = false // the shell guard's to say, never a caller's
		ev.a.Facts.Commands[i].Quiet = false
	}
	for _, g := range ev.e.guards {
		findings, err := ev.runGuard(ctx, g)
		if err != nil {
			ev.fail("L3", "guard "+g.Name(), err)
			continue
		}
		for _, f := range findings {
			lvl := f.Level.OrStrict()
			ev.add(action.Reason{Layer: "L3", Source: action.SourceGuard, Name: f.Check, Level: lvl, Message: f.Message})
			if f.Hard || lvl == action.Block {
				ev.floor = action.Max(ev.floor, lvl)
			} else {
				ev.soft = action.Max(ev.soft, lvl)
			}
			if f.Preview != nil && (ev.preview == nil || lvl >= action.Approve) {
				ev.preview = f.Preview
			}
		}
	}
	ev.markCreated(ctx)
	ev.policyLayers()
	ev.delegation(ctx)
}

// CreatedSignals is an optional ability of Signals: the paths a session
// created (see perception.Bus.Created).
type CreatedSignals interface {
	Created(ctx context.Context, session string, paths []string) ([]bool, error)
}

// markCreated marks the paths outside the working directory that the
// action deletes and that an earlier action of its session created: a
// scratch directory the agent made may be removed without a person (the
// built-in rule on deletions outside the working directory spares them).
// The guards' floors still apply.
func (ev *evaluation) markCreated(ctx context.Context) {
	for i := range ev.a.Facts.Paths {
		ev.a.Facts.Paths[i].Created = false // the engine's to say, never a caller's
	}
	cs, ok := ev.e.signals.(CreatedSignals)
	if !ok {
		return
	}
	var idx []int
	var ps []string
	for i, p := range ev.a.Facts.Paths {
		if p.Intent == action.PathDelete && !p.InCwd && filepath.IsAbs(p.Path) {
			idx, ps = append(idx, i), append(ps, p.Path)
		}
	}
	if len(ps) == 0 {
		return
	}
	created, err := cs.Created(ctx, sessionKey(ev.a), ps)
	if err != nil {
		return // unknown: the deletion is judged as any other
	}
	for j, i := range idx {
		ev.a.Facts.Paths[i].Created = created[j]
	}
}

func (ev *evaluation) runGuard(ctx context.Context, g guard.Guard) (fs []guard.Finding, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return g.Check(ctx, ev.a)
}

func (ev *evaluation) policyLayers() {
	a, snap := ev.a, ev.snap
	admin, aerr := policy.First(snap.admin.Rules, a)
	if aerr != nil {
		ev.fail("L3", "the admin policy", aerr)
	}
	var user *policy.Compiled
	var uerr error
	if snap.userErr != nil {
		uerr = snap.userErr
	} else {
		user, uerr = policy.First(snap.user, a)
	}
	if uerr != nil {
		ev.fail("L3", "the user policy", uerr)
	}
	ev.admin, ev.user = admin, user
	if admin != nil {
		ev.add(ruleReason(admin))
	}
	if user != nil {
		ev.add(ruleReason(user))
	}
	// Combine: admin rules are a floor the user layer cannot lower; a user
	// rule may set the level where the admin layer has only a default (or
	// the guards only a soft classification), unless the policy is locked.
	var def action.Level
	switch {
	case ev.soft.Valid():
		def = ev.soft
	case ev.toolKnown && ev.tool.Level.Valid() && action.EffectFree(a):
		// The agent's own tool with no effect outside it: its table level.
		def = ev.tool.Level
		what := ev.tool.Note
		if what == "" {
			what = "one of its own tools"
		}
		ev.add(action.Reason{Layer: "L3", Source: action.SourceDefault, Name: "tool:" + a.Agent + "/" + a.Tool, Level: def,
			Message: fmt.Sprintf("%s of %s: %s, with no effect outside the agent", a.Tool, a.Agent, what)})
	default:
		def = snap.admin.Default(a.Kind)
		ev.add(action.Reason{Layer: "L3", Source: action.SourceDefault, Name: string(a.Kind), Level: def,
			Message: fmt.Sprintf("default for %s actions", a.Kind)})
	}
	switch {
	case admin != nil && user != nil:
		ev.base = action.Max(admin.Level, user.Level)
	case admin != nil:
		ev.base = admin.Level
	case user != nil && snap.admin.Locked:
		ev.base = action.Max(user.Level, def)
	case user != nil:
		ev.base = user.Level
	default:
		ev.base = def
	}
}

func ruleReason(c *policy.Compiled) action.Reason {
	src := action.SourceRule
	if strings.HasPrefix(c.Name, AdaptivePrefix) {
		src = action.SourceAdaptive
	}
	msg := c.Message
	if msg == "" {
		msg = fmt.Sprintf("rule %q matched", c.Name)
	}
	return action.Reason{Layer: "L3", Source: src, Name: c.Name, PolicyLayer: c.Layer, Level: c.Level, Message: msg}
}

// L4: the sandbox. Overseer's own files are off limits to agents.
func (ev *evaluation) sandbox() {
	for _, p := range ev.a.Facts.Paths {
		for _, prot := range ev.e.protected {
			if action.Within(prot, p.Path) {
				what := string(p.Intent)
				if p.Intent == action.PathUnknown {
					what = "pass it to a program that may write it, or"
				}
				ev.add(action.Reason{Layer: "L4", Source: action.SourceSandbox, Name: "self-protection", Level: action.Block,
					Message: fmt.Sprintf("%s is part of Overseer's own state; agents may not %s it", p.Path, what)})
				ev.floor = action.Block
			}
		}
	}
}

// L5: metacognition. A decider that keeps reporting low confidence, or
// hesitation of the person about this tool, brings a person in or asks
// the agent to explain.
func (ev *evaluation) metacognition(ctx context.Context) {
	a := ev.a
	if a.HumanRequested {
		ev.add(action.Reason{Layer: "L5", Source: action.SourceMeta, Name: "agent-asked", Level: action.Confirm,
			Message: "the agent asked for a person to look before this runs"})
	}
	if ev.e.signals == nil {
		return
	}
	meta := ev.snap.admin.Settings.Meta
	if a.Confidence != nil && meta.Streak > 0 && *a.Confidence < meta.LowConfidence {
		streak := ev.e.signals.LowConfidenceStreak(sessionKey(a), meta.LowConfidence) + 1
		if streak >= meta.Streak {
			ev.add(action.Reason{Layer: "L5", Source: action.SourceMeta, Name: "low-confidence", Level: action.Confirm,
				Message: fmt.Sprintf("confidence has been below %.2f for %d decisions in a row", meta.LowConfidence, streak)})
		}
	}
	if meta.Stagnation > 0 {
		// At the threshold the agent is first told to switch strategy
		// (StrategySwitch, injected into its next prompt); only when it
		// stagnates again after that is a person called in.
		if n := ev.e.signals.StagnationCount(sessionKey(a)); n > meta.Stagnation {
			ev.add(action.Reason{Layer: "L5", Source: action.SourceMeta, Name: "stagnation", Level: action.Confirm,
				Message: fmt.Sprintf("the session made no progress %d times (tools returning the same result again) since a person last looked, and a strategy switch did not help", n)})
		}
	}
	stats, err := ev.e.signals.RecentToolStats(ctx, a.Tool)
	if err != nil {
		// The hint is advisory; a failure to read it does not change the level.
		return
	}
	if h := time.Duration(ev.snap.admin.Settings.Adapt.HesitationAfter); h > 0 && stats.Answers > 0 && stats.LastAnswer > h {
		ev.hints = append(ev.hints, fmt.Sprintf(
			"The person took %s to answer the last %s request, longer than %s: explain what this call is for and why it is needed before making it.",
			stats.LastAnswer.Round(time.Second), a.Tool, h))
	}
}

// level combines the findings so far into the verdict's level.
func (ev *evaluation) level() action.Level {
	level := action.Max(ev.base, ev.floor)
	for _, r := range ev.reasons {
		// Non-policy layers (L1, L2, L4, L5, errors) only ever raise.
		if r.Layer != "L3" || r.Source == action.SourceError {
			level = action.Max(level, r.Level)
		}
	}
	return level.OrStrict()
}

// refused is L2's memory of people's answers: a call that would be put to a
// person, and that a person already refused in this session (the same
// arguments hash), is refused again at once with that person's words; a
// session that keeps repeating it is asked to stop.
func (ev *evaluation) refused(ctx context.Context) {
	rs, ok := ev.e.signals.(RefusalSignals)
	if !ok || !ev.level().NeedsPerson() {
		return
	}
	a := ev.a
	r, found, err := rs.Refusal(ctx, a, a.ArgsHash())
	if err != nil {
		// Without the memory the call is asked about as usual.
		return
	}
	if !found {
		return
	}
	who := fmt.Sprintf("%s via %s", r.Who, r.Channel)
	words := ""
	if strings.TrimSpace(r.Reason) != "" {
		words = fmt.Sprintf(": %q", r.Reason)
	}
	msg := fmt.Sprintf("a person (%s) already refused this exact call in this session%s. It is not asked again; do something else, or ask the user", who, words)
	name := "refused-before"
	if r.Repeats+1 >= RefusedRepeatsStop {
		ev.stop = true
		name = "refused-repeated"
		msg = fmt.Sprintf("a person (%s) refused this exact call in this session%s, and it has been repeated %d times since. Stop and ask the user what to do instead", who, words, r.Repeats+1)
	}
	ev.add(action.Reason{Layer: "L2", Source: action.SourceHuman, Name: name, Level: action.Block, Message: msg})
}

// RefusedRepeatsStop is how many repeats of a call a person refused stop
// the session (the hooks tell the agent to stop its task).
const RefusedRepeatsStop = 2

// PauseSignals is an optional ability of Signals: whether an agent is
// paused (the kernel's paused agents), with the refusal its calls get.
// An error means the pauses could not be read.
type PauseSignals interface {
	Paused(agent string) (paused bool, message string, err error)
}

// paused refuses every call of a paused agent, and asks it to stop its
// task: nothing it does runs until a person resumes it. When the pauses
// cannot be read, a person decides.
func (ev *evaluation) paused() {
	ps, ok := ev.e.signals.(PauseSignals)
	if !ok {
		return
	}
	paused, msg, err := ps.Paused(ev.a.Agent)
	switch {
	case paused:
		ev.add(action.Reason{Layer: "L2", Source: action.SourcePaused, Name: "agent-paused", Level: action.Block, Message: msg})
		ev.stop = true
	case err != nil:
		ev.fail("L2", "reading the paused agents", err)
	}
}

// RefusalSignals is an optional ability of Signals: the memory of calls
// people refused in a's session, with the arguments hash argsHash (the
// kernel answers it from the approvals a person refused and the repeats
// the PerceptionBus counted).
type RefusalSignals interface {
	Refusal(ctx context.Context, a *action.Action, argsHash string) (perception.Refusal, bool, error)
}

func (ev *evaluation) verdict() action.Verdict {
	level := ev.level()
	v := action.Verdict{
		ActionID: ev.a.ID,
		Level:    level,
		Reasons:  ev.reasons,
		Preview:  ev.preview,
		ArgsHash: ev.a.ArgsHash(),
		Hints:    ev.hints,
		Stop:     ev.stop,
	}
	if v.Reasons == nil {
		v.Reasons = []action.Reason{}
	}
	v.Decider = decider(ev.reasons, level)
	if v.Preview == nil && level >= action.Notify {
		// A patch is shown as the diff of each file it changes, also when
		// a person is only told.
		v.Preview = action.PatchPreview(ev.a)
	}
	if v.Level >= action.Approve && v.Preview == nil {
		v.Preview = genericPreview(ev.a)
	}
	if v.Level >= action.Confirm && v.Level < action.Block {
		v.Preview = withUnresolved(v.Preview, ev.reasons, ev.a)
	}
	return v
}

// unresolvedChecks are the guard checks that fire because something could
// not be resolved before the action runs.
var unresolvedChecks = map[string]bool{
	"shell.obfuscated": true, "shell.rm-dynamic": true, "shell.write-dynamic": true,
	"shell.write-unknown-dir": true, "shell.too-complex": true, "shell.unparseable": true,
	"shell.no-command": true, "shell.download-exec": true, "shell.fetch-exec": true,
	"shell.runner-unread": true, "paths.unresolved": true, "net.no-url": true,
}

// withUnresolved says in the preview what could not be resolved statically
// and why, so that a person asked about it knows what they are trusting: a
// copy of p (or a new preview) whose summary ends with those reasons.
func withUnresolved(p *action.Preview, reasons []action.Reason, a *action.Action) *action.Preview {
	var why []string
	for _, r := range reasons {
		if r.Source == action.SourceGuard && unresolvedChecks[r.Name] && !slices.Contains(why, r.Message) {
			why = append(why, r.Message)
		}
	}
	for _, n := range a.Facts.Notes {
		if strings.Contains(n, "unparseable") && !slices.Contains(why, n) {
			why = append(why, n)
		}
	}
	if len(why) == 0 {
		return p
	}
	var c action.Preview
	if p != nil {
		c = *p
	} else {
		c.Summary = fmt.Sprintf("%s (%s)", a.Tool, a.Kind)
	}
	if len(why) > 4 {
		why = append(why[:4], fmt.Sprintf("… and %d more", len(why)-4))
	}
	c.Summary += "\nNot known before it runs: " + strings.Join(why, "; ")
	return &c
}

// decider picks the reason that set the level: among reasons at the final
// level, errors first, then guards, rules, and the rest in order.
func decider(reasons []action.Reason, level action.Level) *action.Reason {
	rank := func(s action.Source) int {
		switch s {
		case action.SourcePaused:
			return -1 // a paused agent is told so, whatever else holds
		case action.SourceError:
			return 0
		case action.SourceGuard, action.SourceSandbox:
			return 1
		case action.SourceAdaptive:
			return 2
		case action.SourceRule:
			return 3
		case action.SourceDefault:
			return 5
		}
		return 4
	}
	var best *action.Reason
	for i := range reasons {
		r := &reasons[i]
		if r.Level != level {
			continue
		}
		if best == nil || rank(r.Source) < rank(best.Source) {
			best = r
		}
	}
	if best == nil {
		// The level came from a combination (e.g. a user rule below an admin
		// rule); name the strictest contributing reason.
		for i := range reasons {
			if best == nil || reasons[i].Level > best.Level {
				best = &reasons[i]
			}
		}
	}
	if best == nil {
		return nil
	}
	cp := *best
	return &cp
}

// genericPreview shows the call itself when no guard built a richer preview.
func genericPreview(a *action.Action) *action.Preview {
	b, err := json.MarshalIndent(a.Args, "", "  ")
	if err != nil {
		b = []byte(fmt.Sprintf("%v", a.Args))
	}
	s := string(b)
	const cap = 4000
	if len(s) > cap {
		s = s[:cap] + "\n… (truncated)"
	}
	p := &action.Preview{Summary: fmt.Sprintf("%s (%s) with arguments:\n%s", a.Tool, a.Kind, s)}
	for _, f := range a.Facts.Paths {
		p.Items = append(p.Items, fmt.Sprintf("%s %s", f.Intent, f.Path))
	}
	return p
}

// ErrNoRules is returned by adaptation when the engine has no user layer.
var ErrNoRules = errors.New("firewall: no user policy layer")
