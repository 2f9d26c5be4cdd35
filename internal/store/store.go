// Package store defines Overseer's storage interface and the records it
// keeps: the audit chain, the approvals queue, the user policy layer and
// small pieces of kernel state. Implementations live in sub-packages
// (sqlite, and later postgres); the kernel only sees this interface.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

// Sentinel errors callers branch on.
var (
	ErrNotFound = errors.New("store: not found")
	ErrClosed   = errors.New("store: closed")
	// ErrExists is returned by a PutStateEffect with IfAbsent whose key is
	// already set.
	ErrExists = errors.New("store: already exists")
)

// Store is everything the kernel persists. Every method is safe for
// concurrent use, and for use by several processes sharing one database.
type Store interface {
	AuditStore
	ApprovalStore
	RuleStore
	StateStore
	PauseStore
	ControlStore
	Close() error
}

// AuditRecord is one entry of the append-only, hash-chained audit log.
type AuditRecord struct {
	Seq      int64           `json:"seq"`
	Time     time.Time       `json:"time"`
	Type     string          `json:"type"` // action, verdict, answer, result, policy_change, ...
	ActionID string          `json:"action_id,omitempty"`
	Agent    string          `json:"agent,omitempty"`
	Session  string          `json:"session,omitempty"`
	Tool     string          `json:"tool,omitempty"`
	Data     json.RawMessage `json:"data"`
	PrevHash string          `json:"prev_hash"`
	Hash     string          `json:"hash"`
	// Epoch and Tag are the record's seal (package audit): Tag is the MAC of
	// the record's hash under the sealing key of Epoch. An unsealed record
	// has no Tag (and epoch 0).
	Epoch int64  `json:"epoch,omitempty"`
	Tag   string `json:"tag,omitempty"`
}

// AuditTail is the last record of the chain as AppendAuditBatch's seal
// function sees it (zero for an empty chain).
type AuditTail struct {
	Seq   int64
	Hash  string
	Type  string
	Epoch int64
	Tag   string
	Data  json.RawMessage
}

// AuditWrite is one record to append, with an optional Effect: a change to
// the approvals or the user policy layer committed in the same transaction,
// so that neither is ever on disk without the other.
type AuditWrite struct {
	Rec    AuditRecord
	Effect Effect
	// Err is set by AppendAuditBatch when the effect failed: then neither
	// the effect nor the record was written (the rest of the batch was).
	Err error
}

// AuditBatch is what AppendAuditBatch writes.
type AuditBatch struct {
	Writes []*AuditWrite
	// Seal runs inside the write transaction, after the effects, with the
	// chain's true tail and the records whose effects succeeded (in order).
	// It fills in their Seq, Time, PrevHash, Hash, Epoch and Tag, and may
	// return further records (already sealed, after recs) to append: the
	// seal markers. If it fails nothing is written. A store may also call
	// it first with the tail it expects (the one its last append left, for
	// a batch whose effects are known not to fail), before it holds its
	// write lock, and then check under the lock that the tail is that one:
	// when it is not, nothing of that call is written and Seal is called
	// again with the true tail (or another it expects and checks). Only
	// the records of the last call are written.
	Seal func(tail AuditTail, recs []*AuditRecord) (extra []AuditRecord, err error)
	// Extra is set to the further records written.
	Extra []AuditRecord
	// DeferSync asks a store that can to commit the batch without waiting
	// for the disk and to set Sync instead (a store that cannot leaves it
	// nil and commits durably as always). The caller must then call Sync,
	// and tell no one of the batch, before Sync has returned nil: only then
	// is the batch on disk. One Sync makes every batch committed before it
	// durable, so that a writer can commit the next batch while the disk
	// syncs the last (group commit with the sync out of the write lock).
	DeferSync bool
	// Sync is set by AppendAuditBatch when DeferSync was honoured.
	Sync func() error
}

// Effect is a write committed with an audit record (see AuditWrite). The
// effects are CreateApprovalEffect, AnswerApprovalEffect,
// PutUserRuleEffect, DeleteUserRuleEffect, PutStateEffect, PauseAgentEffect,
// ResumeAgentEffect, PutControlEffect and DeleteControlEffect.
type Effect interface{ isEffect() }

// CreateApprovalEffect creates Approval (see ApprovalStore.CreateApproval).
type CreateApprovalEffect struct{ Approval *Approval }

// AnswerApprovalEffect records an answer (see ApprovalStore.AnswerApproval).
// Describe, when set, returns the record's data from the outcome; Result
// and Applied are set to the outcome.
type AnswerApprovalEffect struct {
	ID       string
	Status   ApprovalStatus
	Answer   Answer
	Describe func(ap *Approval, applied bool) (json.RawMessage, error)
	Result   *Approval
	Applied  bool
}

// PutUserRuleEffect puts Rule (see RuleStore.PutUserRule). Describe, when
// set, returns the record's data from the rule as stored.
type PutUserRuleEffect struct {
	Rule     *UserRule
	Describe func(r *UserRule) (json.RawMessage, error)
}

// DeleteUserRuleEffect deletes rule ID (see RuleStore.DeleteUserRule).
// Describe, when set, returns the record's data from the rule deleted.
type DeleteUserRuleEffect struct {
	ID       string
	Describe func(r *UserRule) (json.RawMessage, error)
}

// PutStateEffect sets (NS, Key) of the state store to Value (valid JSON)
// with the record. With IfAbsent a key that is already set fails the effect
// with ErrExists, and the record is not written either: what a record
// claims happened once (an ingested call) is recorded once, however often
// and by however many processes it is offered.
type PutStateEffect struct {
	NS, Key  string
	Value    json.RawMessage
	IfAbsent bool
}

func (*PutStateEffect) isEffect()       {}
func (*CreateApprovalEffect) isEffect() {}
func (*AnswerApprovalEffect) isEffect() {}
func (*PutUserRuleEffect) isEffect()    {}
func (*DeleteUserRuleEffect) isEffect() {}
func (*PauseAgentEffect) isEffect()     {}
func (*ResumeAgentEffect) isEffect()    {}
func (*PutControlEffect) isEffect()     {}
func (*DeleteControlEffect) isEffect()  {}

// AuditQuery filters audit records. Zero fields do not filter.
type AuditQuery struct {
	AfterSeq int64 // only records with Seq > AfterSeq
	Types    []string
	ActionID string
	Agent    string
	Session  string
	Tool     string
	Since    time.Time
	Until    time.Time
	Text     string // substring of the record's data
	Limit    int    // 0 means no limit
	Desc     bool   // newest first
}

// AuditStore persists the audit chain. The chain's hashing lives in package
// audit; the store only guarantees that a batch is sealed against the true
// tail of the chain, atomically, even with several writing processes.
type AuditStore interface {
	// AppendAudit opens a write transaction, reads the chain's tail, calls
	// seal to fill in Seq, PrevHash and Hash of recs, inserts them and commits
	// durably. If seal fails nothing is written.
	AppendAudit(ctx context.Context, recs []AuditRecord, seal func(tailSeq int64, tailHash string, recs []AuditRecord) error) error
	// AppendAuditBatch is AppendAudit with effects and seal markers (see
	// AuditBatch). With no writes it still runs Seal in a write transaction
	// (which may append markers, or do work that needs the write lock).
	// An effect that fails sets its write's Err and leaves the rest of the
	// batch to be written; the error is for the batch as a whole.
	AppendAuditBatch(ctx context.Context, b *AuditBatch) error
	// ScanAudit calls fn for every record with Seq > afterSeq in Seq order.
	ScanAudit(ctx context.Context, afterSeq int64, fn func(AuditRecord) error) error
	// QueryAudit returns the records matching q.
	QueryAudit(ctx context.Context, q AuditQuery) ([]AuditRecord, error)
}

// ApprovalStatus is the state of a pending approval.
type ApprovalStatus string

const (
	StatusPending  ApprovalStatus = "pending"
	StatusApproved ApprovalStatus = "approved"
	StatusDenied   ApprovalStatus = "denied"
	StatusExpired  ApprovalStatus = "expired" // timed out; the default answer was applied
	StatusAborted  ApprovalStatus = "aborted" // the person asked to abort the whole task
	// StatusWithdrawn: nobody waits for the answer any more (the asker gave
	// up or is gone). Not a refusal: it says nothing about the person's
	// trust in the action.
	StatusWithdrawn ApprovalStatus = "withdrawn"
)

// Terminal reports whether the status is final.
func (s ApprovalStatus) Terminal() bool { return s != StatusPending && s != "" }

// Answer is one person's (or the timeout's) answer to an approval request.
type Answer struct {
	Decision string          `json:"decision"`           // approve, deny, abort
	Who      string          `json:"who"`                // person or "timeout"
	Channel  string          `json:"channel"`            // cli, web, tui, webhook, mcp, timeout, ...
	Reason   string          `json:"reason,omitempty"`   // the person's words, for the agent
	Remember string          `json:"remember,omitempty"` // "", once, session, rule
	Rule     json.RawMessage `json:"rule,omitempty"`     // the rule saved with Remember=rule
	At       time.Time       `json:"at"`
	// Applied is false for an answer that came after the request was already
	// answered: it is recorded only.
	Applied bool `json:"applied"`
}

// Approval is a request for a person's decision, kept until answered.
type Approval struct {
	ID        string         `json:"id"`
	ActionID  string         `json:"action_id"`
	Tool      string         `json:"tool"`
	Kind      action.Kind    `json:"kind"`
	Agent     string         `json:"agent,omitempty"`
	Session   string         `json:"session,omitempty"`
	Level     action.Level   `json:"level"`
	ArgsHash  string         `json:"args_hash"`
	Action    action.Action  `json:"action"`
	Verdict   action.Verdict `json:"verdict"`
	Status    ApprovalStatus `json:"status"`
	CreatedAt time.Time      `json:"created_at"`
	Deadline  time.Time      `json:"deadline"`
	// DefaultDecision is applied when the deadline passes: "deny" unless configured.
	DefaultDecision string `json:"default_decision"`
	// Asker is who waits for the answer, when the caller said: a request
	// whose asker is gone is withdrawn.
	Asker   *Asker   `json:"asker,omitempty"`
	Answer  *Answer  `json:"answer,omitempty"`  // the terminal answer
	Answers []Answer `json:"answers,omitempty"` // every answer, in order, including late ones
	// Unaudited is set (by the kernel, when it reads the approval) when the
	// approval or one of its answers has no audited record behind it: the
	// gate then refuses it, whatever its status.
	Unaudited string `json:"unaudited,omitempty"`
}

// Asker is who holds the agent's call while a person decides: a hook
// process, an MCP client. It lets the daemon tell a request somebody still
// waits for from a dead one (its process ended, its wait ran out, nobody
// polls for it), and withdraw the dead ones.
type Asker struct {
	// Kind is hook, mcp or api.
	Kind string `json:"kind"`
	// PID and Start identify the waiting process (Start is its start time
	// as the operating system counts it, so a reused pid is not mistaken
	// for it); Host says where they are meaningful (see package proc).
	PID   int    `json:"pid,omitempty"`
	Start string `json:"start,omitempty"`
	Host  string `json:"host,omitempty"`
	// Until is when the asker stops waiting (a hook's max_wait); zero: it
	// waits until the request's deadline.
	Until time.Time `json:"until,omitzero"`
	// Hold means the asker keeps a long-poll open on the daemon while it
	// waits; a request nobody polls for is given up.
	Hold bool `json:"hold,omitempty"`
	// KeyHash is the SHA-256 (hex) of the secret with which the asker may
	// withdraw its own request.
	KeyHash string `json:"key_hash,omitempty"`
}

// ApprovalFilter selects approvals. Zero fields do not filter.
type ApprovalFilter struct {
	Status   ApprovalStatus
	ArgsHash string
	Session  string
	Limit    int
}

// ApprovalStore persists the human gate's queue.
type ApprovalStore interface {
	CreateApproval(ctx context.Context, a *Approval) error
	GetApproval(ctx context.Context, id string) (*Approval, error)
	// ListApprovals returns matching approvals, oldest first.
	ListApprovals(ctx context.Context, f ApprovalFilter) ([]*Approval, error)
	// AnswerApproval records ans. If the approval is still pending and status
	// is terminal, it atomically moves it to status with ans as its terminal
	// answer and reports applied=true; otherwise the answer is only appended to
	// Answers (with Applied=false) and applied=false. Returns the approval as
	// stored afterwards.
	AnswerApproval(ctx context.Context, id string, status ApprovalStatus, ans Answer) (a *Approval, applied bool, err error)
}

// UserRule is one rule of the user policy layer, as stored. The rule itself
// is kept in the policy package's JSON form; the store does not interpret it.
type UserRule struct {
	ID        string          `json:"id"`
	Position  int             `json:"position"` // rules are read in ascending position
	Rule      json.RawMessage `json:"rule"`
	Origin    string          `json:"origin"` // human, adaptive
	CreatedBy string          `json:"created_by,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	ExpiresAt time.Time       `json:"expires_at,omitempty"` // zero: never
}

// RuleStore persists the user policy layer.
type RuleStore interface {
	// ListUserRules returns the rules that have not expired at now, by position.
	ListUserRules(ctx context.Context, now time.Time) ([]UserRule, error)
	// PutUserRule inserts or replaces (by ID) a rule. A zero Position appends.
	PutUserRule(ctx context.Context, r *UserRule) error
	DeleteUserRule(ctx context.Context, id string) error
	// RulesVersion changes whenever the user layer changes; readers use it to
	// know when to reload a compiled snapshot.
	RulesVersion(ctx context.Context) (int64, error)
}

// StateStore keeps small named pieces of kernel state (perception counters,
// for example) as JSON values.
type StateStore interface {
	// GetState returns the value of (ns, key), or ErrNotFound.
	GetState(ctx context.Context, ns, key string) ([]byte, error)
	// UpdateState atomically replaces (ns, key) with fn's result; fn receives
	// nil when there is no value yet. Returning nil from fn deletes the key.
	UpdateState(ctx context.Context, ns, key string, fn func(old []byte) ([]byte, error)) error
	// ListState returns every key and value of ns.
	ListState(ctx context.Context, ns string) (map[string][]byte, error)
	// UpdateStates is UpdateState for several keys of ns in one
	// transaction (write-behind counters flush so): fn is called once per
	// key, in order; an error from fn changes nothing at all.
	UpdateStates(ctx context.Context, ns string, keys []string, fn func(key string, old []byte) ([]byte, error)) error
}

// AgentPause says that an agent is paused: none of its calls runs until a
// person resumes it.
type AgentPause struct {
	// Agent is the agent's name as its actions carry it ("claude-code",
	// "overseer", ...), or "*" for every agent.
	Agent  string    `json:"agent"`
	Reason string    `json:"reason"`
	By     string    `json:"by"` // a person, or what paused it ("rate-limit rl_…")
	At     time.Time `json:"at"`
}

// PauseAgentEffect pauses Pause.Agent, replacing a pause it already has
// (see PauseStore). Describe, when set, returns the record's data from the
// pause replaced (nil when the agent was not paused).
type PauseAgentEffect struct {
	Pause    *AgentPause
	Describe func(old *AgentPause) (json.RawMessage, error)
}

// ResumeAgentEffect resumes Agent; an agent that is not paused is
// ErrNotFound (and nothing is recorded). Describe, when set, returns the
// record's data from the pause lifted.
type ResumeAgentEffect struct {
	Agent    string
	Describe func(old *AgentPause) (json.RawMessage, error)
}

// PauseStore keeps the paused agents. Pauses change only with an audit
// record (PauseAgentEffect, ResumeAgentEffect).
type PauseStore interface {
	// ListAgentPauses returns every paused agent, by name.
	ListAgentPauses(ctx context.Context) ([]AgentPause, error)
	// PausesVersion changes whenever a pause is added, replaced or lifted,
	// whichever process did it; readers use it to know when to reload.
	PausesVersion(ctx context.Context) (int64, error)
}

// Control is one definition of the hybrid controls for unattended hours:
// a rate limit, a budget cap (and, by their kinds, other controls that are
// definitions a person writes). The store keeps Body, the control's JSON,
// without interpreting it.
type Control struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"` // rate_limit, budget_cap, ...
	Body      json.RawMessage `json:"body"`
	CreatedBy string          `json:"created_by,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// PutControlEffect inserts or replaces (by ID) Control. Describe, when
// set, returns the record's data from the control replaced (nil when new).
type PutControlEffect struct {
	Control  *Control
	Describe func(old *Control) (json.RawMessage, error)
}

// DeleteControlEffect deletes control ID of Kind; a missing one is
// ErrNotFound. Describe, when set, returns the record's data from the
// control deleted.
type DeleteControlEffect struct {
	ID       string
	Kind     string
	Describe func(old *Control) (json.RawMessage, error)
}

// ControlStore keeps the controls. They change only with an audit record
// (PutControlEffect, DeleteControlEffect).
type ControlStore interface {
	// ListControls returns the controls of kind ("" for every kind), by
	// creation time then ID.
	ListControls(ctx context.Context, kind string) ([]Control, error)
	// ControlsVersion changes whenever a control changes, whichever
	// process changed it.
	ControlsVersion(ctx context.Context) (int64, error)
}

// Change is a change committed to a store shared by several processes,
// which the others may have to act on at once: Kind "approval" (an
// approval was created or answered; ID is its id) or "rules" (the user
// policy layer changed). Kind "resync" means changes may have been missed
// (the watch starts, or starts again after an interruption): re-read
// everything waited on. Kind "state" is a change of a namespace of the
// state (UpdateStates; ID is the namespace). Kinds "pauses" and
// "controls" are changes of the paused agents and of the controls.
type Change struct {
	Kind string
	ID   string
}

// Change kinds.
const (
	ChangeApproval = "approval"
	ChangeRules    = "rules"
	ChangeResync   = "resync"
	ChangeState    = "state"
	ChangePauses   = "pauses"
	ChangeControls = "controls"
)

// Locker is an optional ability of a Store shared by several processes:
// one of them at a time leads a named task (listening to a notification
// channel's bot, say), and another takes over when it stops or dies.
type Locker interface {
	// Lead waits until this process leads name (or ctx ends: its error).
	// The channel returned is closed when the lead is lost: ctx ended, the
	// store was closed, or the process could no longer show the database
	// it still holds the lead (the others may then take it over).
	Lead(ctx context.Context, name string) (lost <-chan struct{}, err error)
}

// Publisher is an optional ability of a Store shared by several
// processes: messages to every process's Watch (its own included), each as
// a Change of kind with the payload as its ID, in order, delivered at most
// once and not kept (a process that does not listen then never hears
// them). Payloads are bounded (MaxPublish bytes each); several are sent
// together, in one exchange with the store (identical ones in one call
// may be delivered once).
type Publisher interface {
	Publish(ctx context.Context, kind string, payloads ...string) error
}

// MaxPublish bounds a published payload.
const MaxPublish = 7000

// Sizer is an optional ability of a Store whose size is not a file's: the
// bytes its tables and their indexes take (PostgreSQL).
type Sizer interface {
	Size(ctx context.Context) (int64, error)
}

// Watcher is an optional ability of a Store shared by several processes
// (found by type assertion): it tells of the changes every process commits,
// its own included. Watchers may miss changes; they say so with a resync,
// and readers that must not miss one also poll.
type Watcher interface {
	// Watch calls fn for each change until ctx ends, from one goroutine,
	// and with a resync each time it starts listening (the first time
	// included): changes committed after that resync are heard. It returns
	// when ctx ends.
	Watch(ctx context.Context, fn func(Change))
}
