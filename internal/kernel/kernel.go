// Package kernel wires Overseer's kernel together: storage, the audit log,
// the FirewallEngine with its guards and policy, the HumanGate and the
// PerceptionBus. It is the one place that builds the system; front ends
// (CLI, HTTP API, hooks, MCP gateway, the agent loop) call it and nothing
// below it.
//
// The kernel sequences the parts — evaluate, record, ask, answer, adapt —
// and holds no security judgement of its own: every judgement is the
// engine's.
package kernel

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/paths"
	"github.com/overseer-dev/overseer/internal/guard/resultscan"
	"github.com/overseer-dev/overseer/internal/mcppin"
	"github.com/overseer-dev/overseer/internal/perception"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// Config opens a kernel.
type Config struct {
	// Home is Overseer's data directory ($OVERSEER_HOME, default ~/.overseer).
	Home string
	// PolicyFile is the admin policy. Empty means Home/policy.yaml when it
	// exists, else the built-in default.
	PolicyFile string
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Guards builds the hard guards for a policy. Nil means DefaultGuards.
	Guards func(p *policy.Policy, env GuardEnv) ([]guard.Guard, error)
	// Poll is how often a waiting gate re-reads the store for answers
	// written by another process. Zero means the gate's default.
	Poll time.Duration
	// NoSeal leaves a log that is not sealed yet unsealed (benchmarks; see
	// SealEnv). A sealed log cannot be appended to without its key.
	NoSeal bool
	// Seal tunes the epochs of the audit log's seal (zero: the defaults).
	Seal audit.SealerOptions
	// Secrets finds secrets in tool results. Nil means the shared secret
	// analyser (package guard/secrets) with the known values of the egress
	// guard (the environment's and the home's credential files').
	Secrets resultscan.SecretScanner
}

// SealEnv, set to "off" when a home is first used, keeps its audit log
// unsealed (for benchmarks that compare the two).
const SealEnv = "OVERSEER_AUDIT_SEAL"

// Kernel is the assembled system.
type Kernel struct {
	Home       string
	PolicyFile string // "" when the built-in default is in force
	// Store is the store as the kernel's parts see it: approvals and user
	// rules read from it are checked against the audit log (see
	// evidence.go).
	Store  store.Store
	Audit  *audit.Log
	Engine *firewall.Engine
	Gate   *gate.Gate
	Bus    *perception.Bus
	Clock  clock.Clock
	// Sealing is the outcome of setting up the audit log's seal: New with
	// the verification key when this open created it.
	Sealing audit.Setup

	raw store.Store // the store itself
	// Results scans what tools return (prompt injection, secrets).
	Results *resultscan.Scanner
	// Pins are the MCP gateway's pinned tool definitions.
	Pins *mcppin.Registry
	// observers are the guards that remember what recorded actions did.
	observers []guard.Observer
	// reads remembers what the agents' read tools read (reads.go).
	reads readObserver
	// grants are delegated mode's grants, as read from the audit log.
	grants grantBook
	// pauses are the paused agents (pauses.go).
	pauses *pauses
	// usage holds the rate limits and budget caps (usage.go).
	usage *usageState
	// controls are the auto-rules and anomaly rules (controls.go).
	controls *controlState
	// shared is set for a store shared by several instances; stopWatch
	// ends the watch of its changes and waits for it.
	shared    bool
	samples   *sampleShare // repeat detection's samples, published to the other instances
	calls     callIndex    // the session and arguments' hash of recent calls, for their results
	stopWatch context.CancelFunc
	// signer signs the records that let an agent do more (signing.go).
	signer recordSigner
	// sealedThrough is the last record whose seal the verification key
	// proved (FindingsOf, for verify): signed enough.
	sealedThrough int64
	// known holds the user rules and controls this process last read, so
	// that one deleted from the database together with its records is kept
	// (evidence.go, usage.go).
	known knownState
}

// DefaultHome returns $OVERSEER_HOME, or ~/.overseer.
func DefaultHome() (string, error) {
	if h := os.Getenv("OVERSEER_HOME"); h != "" {
		return filepath.Abs(h)
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the home directory (set OVERSEER_HOME): %w", err)
	}
	return filepath.Join(u, ".overseer"), nil
}

// Paths inside the home directory.
const (
	DBFile     = "overseer.db"
	PolicyName = "policy.yaml"
	TokenFile  = "token"
	AddrFile   = "daemon.json"
)

// LoadPolicy loads the admin policy: file if given, else home/policy.yaml if
// it exists, else the built-in default. It returns the path used ("" for
// the built-in).
func LoadPolicy(home, file string) (*policy.Policy, string, error) {
	if file == "" {
		cand := filepath.Join(home, PolicyName)
		if _, err := os.Stat(cand); err == nil {
			file = cand
		}
	}
	if file == "" {
		return policy.Builtin(), "", nil
	}
	p, err := policy.Load(file, policy.Options{})
	if err != nil {
		return nil, file, err
	}
	return p, file, nil
}

// Open builds the kernel: it creates the home directory, opens the database
// (running migrations), loads the policy and builds the parts.
func Open(ctx context.Context, cfg Config) (*Kernel, error) {
	if cfg.Home == "" {
		h, err := DefaultHome()
		if err != nil {
			return nil, err
		}
		cfg.Home = h
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Guards == nil {
		cfg.Guards = DefaultGuards
	}
	if err := os.MkdirAll(cfg.Home, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", cfg.Home, err)
	}
	pol, polFile, err := LoadPolicy(cfg.Home, cfg.PolicyFile)
	if err != nil {
		return nil, err
	}
	st, err := OpenStore(ctx, cfg.Home, pol)
	if err != nil {
		return nil, err
	}
	var sealer *audit.Sealer
	if !cfg.NoSeal && os.Getenv(SealEnv) != "off" || sealedLog(ctx, st) {
		sealer = audit.NewSealer(cfg.Home, cfg.Seal)
	}
	k := &Kernel{Home: cfg.Home, PolicyFile: polFile, Clock: cfg.Clock, raw: st, pauses: &pauses{}}
	_, k.shared = st.(store.Watcher)
	k.Store = audited{Store: st, k: k}
	if k.shared {
		if err := k.checkEgressKey(ctx); err != nil {
			st.Close()
			return nil, err
		}
	}
	if sealer != nil {
		if k.Sealing, err = sealer.SetUp(ctx, st, cfg.Home, cfg.Clock.Now); err != nil {
			st.Close()
			return nil, fmt.Errorf("sealing the audit log: %w", err)
		}
	}
	k.Audit = audit.NewSealed(st, cfg.Clock, sealer)
	guards, err := cfg.Guards(pol, GuardEnv{Home: cfg.Home, PolicyFile: polFile, Store: st, Clock: cfg.Clock})
	if err != nil {
		k.Close()
		return nil, fmt.Errorf("building guards: %w", err)
	}
	if cfg.Secrets == nil {
		cfg.Secrets = secretFinder{egressOf(guards)}
	}
	k.Results, err = resultscan.FromPolicy(pol, cfg.Secrets)
	if err != nil {
		k.Close()
		return nil, fmt.Errorf("%s: %w", pol.Name, err)
	}
	for _, g := range guards {
		if o, ok := g.(guard.Observer); ok {
			k.observers = append(k.observers, o)
		}
	}
	k.reads = readObserver{t: paths.NewStoreTracker(st, cfg.Clock), hashes: paths.NewHashCache()}
	k.observers = append(k.observers, k.reads)
	k.Bus = perception.New(st, cfg.Clock)
	// A failure is kept: every call then goes to a person until a read
	// succeeds.
	k.reloadPauses(ctx)
	k.openUsage(ctx)
	k.Pins = mcppin.New(st, cfg.Clock.Now)
	if k.shared {
		k.Pins.RequireSigned(pinSigner{k})
		k.Pins.KeepLedger(&pinLedger{k: k})
	}
	protected := []string{cfg.Home}
	if polFile != "" {
		protected = append(protected, polFile)
	}
	// An unreadable tool table does not stop Overseer: the engine puts
	// every action to a person until it is fixed.
	tools, toolsErr := LoadToolTable(cfg.Home)
	// Rules that cannot be loaded put every call to a person (the
	// controls keep the error) rather than stop Overseer.
	k.controls = newControls(k)
	if err := k.controls.load(ctx); err == nil {
		_ = k.controls.sync(ctx)
	}
	k.Engine, err = firewall.New(ctx, firewall.Config{
		Policy: pol, Rules: k.Store, Guards: guards, Signals: k.signals(), Clock: cfg.Clock,
		Protected: protected, Tools: tools, ToolsErr: toolsErr, Grants: grantSource{k}, Controls: k.controls,
	})
	if err != nil {
		k.Close()
		return nil, err
	}
	gs := pol.Settings.Gate
	k.Gate = gate.New(k.Store, cfg.Clock, gate.Config{
		Timeout: time.Duration(gs.Timeout), Default: gs.Default, Poll: cfg.Poll,
		OnAnswer: k.onAnswer, Journal: journal{k}, Shared: k.shared,
	})
	k.startSamples()
	if w, ok := st.(store.Watcher); ok {
		wctx, stop := context.WithCancel(context.Background())
		done, listening := make(chan struct{}), make(chan struct{})
		k.stopWatch = func() { stop(); <-done }
		go func() { defer close(done); k.watch(wctx, w, listening) }()
		// Changes committed from now on are heard (or, should the watch
		// not start in time, seen at the next poll and reload).
		select {
		case <-listening:
		case <-time.After(5 * time.Second):
		}
	}
	return k, nil
}

// sealedLog reports whether the log's last record is sealed (then it must
// stay so, whatever the configuration says).
func sealedLog(ctx context.Context, st store.Store) bool {
	recs, err := st.QueryAudit(ctx, store.AuditQuery{Desc: true, Limit: 1})
	return err == nil && len(recs) == 1 && recs[0].Tag != ""
}

// Close stops the audit writer (which closes its sealing epoch) and closes
// the store.
func (k *Kernel) Close() error {
	// The counts are written before the audit writer stops (the pauses a
	// limit asked for are already recorded).
	uerr := k.closeUsage()
	k.stopSamples()
	var err error
	if k.stopWatch != nil {
		k.stopWatch()
	}
	if k.Audit != nil {
		err = k.Audit.Close()
	}
	return errors.Join(uerr, err, k.raw.Close())
}

// Raw returns the store without the audit checks (verify, tests).
func (k *Kernel) Raw() store.Store { return k.raw }

// NewID returns a random, URL-safe identifier with a prefix.
func NewID(prefix string) string {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// MintID gives a a fresh id of Overseer's. Action ids are never the
// caller's: an id the caller set is kept as the correlation id ClientID
// (unless it has one) and replaced, so that no caller can make two
// records share an id.
func MintID(a *action.Action) {
	if a.ID != "" && a.ClientID == "" {
		a.ClientID = a.ID
	}
	a.ID = NewActionID()
}

// actionIDEncoding keeps the order of the bytes it encodes ("0-9a-v").
var actionIDEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

// NewActionID returns a fresh action id: "act_" and 26 characters that
// encode the time in milliseconds (48 bits) and 80 random bits, as many
// as NewID's. Ids minted later sort after earlier ones, so that the audit
// log's index on action ids takes its inserts at one end (random ids put
// each record's entry on a page of its own, written again at every
// commit); the random bits keep them unguessable.
func NewActionID() string {
	var b [16]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	if _, err := rand.Read(b[6:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return "act_" + actionIDEncoding.EncodeToString(b[:])
}

// Evaluate judges an action without recording anything (eval, explain).
// The action gets a fresh id (see MintID).
func (k *Kernel) Evaluate(ctx context.Context, a *action.Action) action.Verdict {
	MintID(a)
	k.maybeReloadPauses(ctx)
	// Judged by the rules as Submit would judge it: those another process
	// changed are loaded first (a failure leaves them as they were, as
	// Submit does).
	_ = k.controls.sync(ctx)
	return k.Engine.Evaluate(ctx, a)
}

// Submission is the outcome of submitting an action.
type Submission struct {
	Action   action.Action   `json:"action"`
	Verdict  action.Verdict  `json:"verdict"`
	Approval *store.Approval `json:"approval,omitempty"` // set when a person must answer
}

// Submit judges an action, records it and its verdict durably, and opens an
// approval when a person must answer. An error means the action must not
// proceed. The action gets a fresh id (see MintID): a.ID is Overseer's
// once Submit returns.
func (k *Kernel) Submit(ctx context.Context, a *action.Action) (*Submission, error) {
	return k.SubmitBy(ctx, a, nil)
}

// SubmitBy is Submit for a caller that says who holds the call while a
// person decides (see store.Asker): an approval it opens keeps the asker,
// and is withdrawn once the asker is gone.
func (k *Kernel) SubmitBy(ctx context.Context, a *action.Action, asker *store.Asker) (*Submission, error) {
	MintID(a)
	a.Cut = nil
	k.maybeReloadPauses(ctx)
	// The auto-rules' counters read every process's calls up to now, and
	// rules changed by another process are loaded. A failure only counts
	// them later.
	_ = k.controls.sync(ctx)
	// The first evaluation counts the call against the rate limits (with
	// the check, atomically); a second one, for a grant's edge, only
	// checks — it sees the call counted already, which can only make it
	// stricter.
	counted := &countHolder{}
	v, fired := k.Engine.EvaluateControls(context.WithValue(ctx, countKey{}, counted), a)
	if ok, err := k.consumeStep(ctx, &v); err != nil {
		// A grant whose use cannot be counted is no grant.
		v, fired = k.Engine.EvaluateControls(firewall.WithoutGrants(ctx, err), a)
	} else if !ok {
		// Another call took the grant's last step: judged again, the call
		// is at the grant's edge.
		v, fired = k.Engine.EvaluateControls(ctx, a)
	}
	sub := &Submission{Action: *a, Verdict: v}
	// What is stored is bounded (settings.limits.stored_bytes): the whole
	// action was judged and its arguments hashed (v.ArgsHash) above.
	max := k.Engine.Policy().Settings.Limits.StoredBytes
	sa, rawA := a.BoundedJSON(max)
	sv, rawV := v.BoundedJSON(max)
	// The records carry the encodings the cut made (not encoded again).
	verdict := entry(audit.TypeVerdict, &sa, rawOr(rawV, sv))
	var reads []*store.PutStateEffect
	if v.Level.RunsWithoutPerson() {
		// What it reads is remembered in the same commit as its verdict
		// (one effect per record; a second file read is written after).
		var err error
		if reads, err = k.reads.effects(a); err != nil {
			return nil, err
		}
		if len(reads) > 0 {
			verdict.Effect, reads = reads[0], reads[1:]
		}
	}
	if _, err := k.Audit.AppendAll(ctx, entry(audit.TypeAction, &sa, rawOr(rawA, sa)), verdict); err != nil {
		return nil, fmt.Errorf("recording the action and its verdict: %w", err)
	}
	if err := k.reads.put(ctx, reads); err != nil {
		return nil, err
	}
	if len(counted.findings) > 0 {
		k.afterCount(ctx, a, counted.findings)
	}
	if len(fired) > 0 {
		k.controlsFired(ctx, a, &v, fired)
	}
	if err := k.observe(ctx, a, v.Level, false); err != nil {
		return nil, err
	}
	key := firewall.SessionKey(a)
	effect, writes := k.Engine.Effects(a, &v)
	tool := firewall.SampleTool(a)
	shape := firewall.LoopShape(a)
	k.Bus.RecordSample(key, perception.ActionSample{Tool: tool, ArgsHash: v.ArgsHash, Effect: effect, Writes: writes, Shape: shape})
	k.calls.put(a.ID, key, v.ArgsHash)
	k.shareSample(sharedSample{Session: key, ActionSample: perception.ActionSample{Tool: tool, ArgsHash: v.ArgsHash,
		Time: k.Clock.Now(), Effect: effect, Writes: writes, Shape: shape}})
	if refusedAgain(&v) {
		// A person refused this call before; counting the repeat is what
		// stops a session that keeps trying. A failure to count is only
		// a later stop.
		if r, ok, err := k.signals().Refusal(ctx, a, v.ArgsHash); ok && err == nil {
			_, _ = k.Bus.RecordRepeat(ctx, r)
		}
	}
	if v.Level.RunsWithoutPerson() {
		k.recordCreated(ctx, a)
	}
	if a.Confidence != nil {
		k.Bus.RecordConfidence(key, *a.Confidence)
	}
	if v.Level.NeedsPerson() {
		// The approval and its approval_request record are one transaction
		// (the gate's journal): neither is ever on disk without the other.
		// Both hold the stored (bounded) copies.
		apr, err := k.Gate.RequestBy(ctx, sa, sv, asker)
		if err != nil {
			return nil, fmt.Errorf("opening the approval: %w", err)
		}
		sub.Approval = apr
	}
	return sub, nil
}

// stored returns the copies of a and v that are stored: each cut to the
// policy's settings.limits.stored_bytes (see action.Action.Bounded).
func (k *Kernel) stored(a *action.Action, v *action.Verdict) (action.Action, action.Verdict) {
	max := k.Engine.Policy().Settings.Limits.StoredBytes
	return a.Bounded(max), v.Bounded(max)
}

// observe lets the observing guards remember a recorded action (answered:
// a person approved it). A failure stops the action: what is not
// remembered could not be judged later.
func (k *Kernel) observe(ctx context.Context, a *action.Action, level action.Level, answered bool) error {
	for _, o := range k.observers {
		if err := o.Observe(ctx, a, level, answered); err != nil {
			return fmt.Errorf("recording what the action does (%T): %w", o, err)
		}
	}
	return nil
}

// refused tells the observers that keep what an action would do that it
// did not run (see guard.RefusalObserver).
func (k *Kernel) refused(ctx context.Context, a *action.Action) error {
	for _, o := range k.observers {
		if r, ok := o.(guard.RefusalObserver); ok {
			if err := r.Refused(ctx, a); err != nil {
				return fmt.Errorf("forgetting what a refused action would do (%T): %w", o, err)
			}
		}
	}
	return nil
}

// rawOr returns raw (as encoding/json.Marshal encoded it) as a record's
// data, stored as it is, or v when raw is nil.
func rawOr(raw []byte, v any) any {
	if raw == nil {
		return v
	}
	return audit.Encoded(raw)
}

func entry(typ string, a *action.Action, data any) audit.Entry {
	return audit.Entry{Type: typ, ActionID: a.ID, Agent: a.Agent, Session: a.Session, Tool: a.Tool, Data: data}
}

// Wait blocks until the approval is answered (or times out, when the
// configured default is applied) or ctx ends.
func (k *Kernel) Wait(ctx context.Context, id string) (*store.Approval, error) {
	return k.Gate.Wait(ctx, id)
}

// Answer records a person's answer. The first terminal answer decides; a
// later one is recorded only (applied=false).
func (k *Kernel) Answer(ctx context.Context, id string, ans store.Answer) (*store.Approval, bool, error) {
	return k.Gate.Answer(ctx, id, ans)
}

// onAnswer runs for every answer the gate records, including the timeout's
// (whose audit record the gate's journal wrote with it): it feeds the
// PerceptionBus, lets the engine adapt and saves "remember" rules. Errors
// are returned to the answering caller.
func (k *Kernel) onAnswer(ctx context.Context, apr *store.Approval, ans store.Answer, applied bool) error {
	a := &apr.Action
	ans.Applied = applied
	if apr.Unaudited != "" {
		return nil // refused: nothing to learn from it
	}
	ctx = withAction(ctx, a)
	if applied && ans.Decision != "approve" && ans.Who != gate.WithdrawnActor {
		// Refused or ran out: the action did not run. A withdrawn
		// request is not known not to have run: the hooks withdraw the
		// one they hand to the agent's own permission prompt, where a
		// person may allow it.
		if err := k.refused(ctx, a); err != nil {
			return err
		}
	}
	if !applied || ans.Who == gate.TimeoutActor || ans.Who == gate.WithdrawnActor {
		return nil
	}
	if d := apr.Verdict.Decider; d != nil && d.Source == action.SourceAgent {
		// An answer to the agent's own question says nothing about the
		// person's trust in a tool: nothing to learn or remember.
		return nil
	}
	approved := ans.Decision == "approve"
	key := firewall.SessionKey(a)
	if approved {
		k.Bus.ClearStagnation(key)
		if loopLimited(&apr.Verdict) {
			// The person looked at a call a loop limit put to them:
			// counting starts again.
			tool := firewall.SampleTool(a)
			k.Bus.ForgetTool(key, tool)
			k.shareSample(sharedSample{Session: key, ActionSample: perception.ActionSample{Tool: tool}, Forget: true})
		}
		if err := k.observe(ctx, a, apr.Level, true); err != nil {
			return err
		}
	} else if ans.Decision == gate.DecisionDeny || ans.Decision == gate.DecisionAbort {
		// The same call is not asked about again in this session.
		if err := k.Bus.RecordRefusal(ctx, perception.Refusal{Session: key, ArgsHash: apr.ArgsHash, Tool: apr.Tool,
			ApprovalID: apr.ID, Who: ans.Who, Channel: ans.Channel, Reason: ans.Reason, Decision: ans.Decision, At: ans.At}); err != nil {
			return fmt.Errorf("remembering the refusal: %w", err)
		}
	}
	elapsed := ans.At.Sub(apr.CreatedAt)
	stats, err := k.Bus.RecordAnswer(ctx, apr.Tool, approved, elapsed)
	if err != nil {
		return fmt.Errorf("recording the answer's statistics: %w", err)
	}
	// An adaptive change is recorded with the rule it writes (the audited
	// store's PutUserRule and DeleteUserRule).
	if _, err := k.Engine.Adapt(ctx, apr.Tool, apr.Level, stats); err != nil {
		return fmt.Errorf("adapting the policy: %w", err)
	}
	return k.remember(ctx, apr, ans)
}

// recordCreated remembers the paths an action that runs without a person
// is about to create: those it writes that do not exist yet (for a path
// whose parents are missing too, the topmost missing one: `mkdir -p`). They
// are the session's own scratch: reading, writing and removing them later in
// the same session needs no person. A path a person let an action create is
// not scratch: the person agreed to that call only. Failures only cost a
// later question.
func (k *Kernel) recordCreated(ctx context.Context, a *action.Action) {
	var created []string
	for _, p := range a.Facts.Paths {
		if p.Intent != action.PathWrite || !filepath.IsAbs(p.Path) {
			continue
		}
		if c := topMissing(p.Path); c != "" {
			created = append(created, c)
		}
	}
	if len(created) > 0 {
		_ = k.Bus.RecordCreated(ctx, firewall.SessionKey(a), created)
	}
}

// topMissing returns the topmost missing directory on the way to p (p
// itself when only p is missing), or "" when p exists.
func topMissing(p string) string {
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	top := p
	for i := 0; i < 64; i++ {
		parent := filepath.Dir(top)
		if parent == top {
			return ""
		}
		if _, err := os.Lstat(parent); !errors.Is(err, fs.ErrNotExist) {
			return top
		}
		top = parent
	}
	return top
}

// signals is what the engine reads: the bus and the approvals store.
func (k *Kernel) signals() signals {
	return signals{Bus: k.Bus, approvals: k.Store, clock: k.Clock, pauses: k.pauses, usage: k.usage}
}

// refusedAgain reports whether v refuses a call a person refused before.
func refusedAgain(v *action.Verdict) bool {
	d := v.Decider
	return d != nil && d.Layer == "L2" && d.Source == action.SourceHuman
}

// loopLimited reports whether an L2 loop limit raised v.
func loopLimited(v *action.Verdict) bool {
	for _, r := range v.Reasons {
		if r.Layer == "L2" && r.Source == action.SourceLoop {
			return true
		}
	}
	return false
}

type answerRecord struct {
	ApprovalID string               `json:"approval_id"`
	Status     store.ApprovalStatus `json:"status"`
	ArgsHash   string               `json:"args_hash"`
	Level      action.Level         `json:"level"`
	Answer     store.Answer         `json:"answer"`
	// signed: the record carries an instance's signature (signing.go).
	signed bool
}

// PolicyChange is the audit record of a change to the user layer.
type PolicyChange struct {
	Origin string       `json:"origin"` // adaptive, human
	Tool   string       `json:"tool,omitempty"`
	Before action.Level `json:"before,omitempty"`
	After  action.Level `json:"after,omitempty"`
	Reason string       `json:"reason"`
	RuleID string       `json:"rule_id"`
	Rule   *policy.Rule `json:"rule,omitempty"`
	Who    string       `json:"who,omitempty"`
	Op     string       `json:"op"` // add, remove
	// Stored is the rule exactly as the user layer stores it (added: the
	// kernel checks the table against it).
	Stored *store.UserRule `json:"stored,omitempty"`
}

// AcceptMCPTool records a person's acceptance of a tool definition the
// MCP gateway withheld (changed since it was accepted, or suspicious at
// first sight), and audits it. hash, when not empty, must be the pending
// definition's hash the person was shown.
func (k *Kernel) AcceptMCPTool(ctx context.Context, server, tool, hash, who, channel string) (*mcppin.Pin, error) {
	return k.AcceptMCP(ctx, server, mcppin.KindTool, tool, hash, who, channel)
}

// AcceptMCP is AcceptMCPTool for a pinned definition of any kind: a tool,
// a prompt, a resource (named by its URI) or a resource template.
func (k *Kernel) AcceptMCP(ctx context.Context, server string, kind mcppin.Kind, name, hash, who, channel string) (*mcppin.Pin, error) {
	var pending *mcppin.Pending
	if pins, err := k.Pins.List(ctx); err == nil {
		for _, p := range pins {
			if p.Server == server && p.Kind == kind && p.Tool == name {
				pending = p.Pending
			}
		}
	}
	pin, err := k.Pins.AcceptKind(ctx, server, kind, name, hash, who)
	if err != nil {
		return nil, err
	}
	rec := map[string]any{"server": server, "tool": name, "hash": pin.Hash, "who": who, "channel": channel}
	if kind != mcppin.KindTool {
		rec["kind"] = string(kind)
	}
	if pending != nil && pending.Hash == pin.Hash {
		rec["reason"], rec["diff"], rec["findings"] = pending.Reason, pending.Diff, pending.Findings
	}
	tool := server + "__" + name
	if len(tool) > maxPinnedTool {
		tool = "" // a resource's long URI: in the data only (the tool column is indexed)
	}
	if _, err := k.Audit.Append(ctx, audit.Entry{Type: mcppin.TypeAccept, Tool: tool, Data: rec}); err != nil {
		return pin, fmt.Errorf("the change was accepted but recording it failed: %w", err)
	}
	return pin, nil
}
