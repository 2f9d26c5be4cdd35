// Package perception is the PerceptionBus: it records what happened and
// counts it, and never decides anything.
//
// Two kinds of signal are kept. Per-tool answer statistics (approvals,
// rejections, streaks, time to answer) are persisted in the state store and
// updated atomically, so several processes sharing one database count
// together; the firewall's adaptive layer reads them. Per-session signals
// (recent actions for loop detection, confidence values, stagnation notes,
// result classes and repeats) are kept in memory, in bounded windows for a
// bounded number of sessions; the firewall's behaviour and metacognition
// layers read them through read-only copies.
package perception

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store"
)

// StatsNamespace is the state namespace of the per-tool statistics; keys are
// tool names, values ToolStats as JSON.
const StatsNamespace = "tool_stats"

// Sentinel errors.
var (
	// ErrEmptyTool is returned when a tool name is missing.
	ErrEmptyTool = errors.New("perception: empty tool name")
	// ErrCorrupt is returned when stored statistics cannot be read. They are
	// left as they are: resetting them would forget a rejection streak.
	ErrCorrupt = errors.New("perception: stored statistics unreadable")
	// ErrNoStore is returned by the tool statistics of a bus built without
	// a state store (one that keeps session signals only).
	ErrNoStore = errors.New("perception: no state store")
)

// ToolStats are the answer statistics of one tool, across sessions and
// processes.
type ToolStats struct {
	Tool                  string
	Approvals             int
	Rejections            int
	ConsecutiveRejections int // rejections since the last approval
	ConsecutiveApprovals  int // approvals since the last rejection
	Answers               int
	TotalAnswer           time.Duration // sum of the times to answer
	LastAnswer            time.Duration
	LastAnswerAt          time.Time
}

// MeanAnswer returns the mean time to answer, or 0 with no answers.
func (s ToolStats) MeanAnswer() time.Duration {
	if s.Answers <= 0 {
		return 0
	}
	return s.TotalAnswer / time.Duration(s.Answers)
}

// toolStatsJSON is the stored form: durations in milliseconds.
type toolStatsJSON struct {
	Tool                  string    `json:"tool"`
	Approvals             int       `json:"approvals"`
	Rejections            int       `json:"rejections"`
	ConsecutiveRejections int       `json:"consecutive_rejections"`
	ConsecutiveApprovals  int       `json:"consecutive_approvals"`
	Answers               int       `json:"answers"`
	TotalAnswerMS         int64     `json:"total_answer_ms"`
	LastAnswerMS          int64     `json:"last_answer_ms"`
	LastAnswerAt          time.Time `json:"last_answer_at"`
}

// MarshalJSON encodes s with durations in milliseconds.
func (s ToolStats) MarshalJSON() ([]byte, error) {
	return json.Marshal(toolStatsJSON{
		Tool:                  s.Tool,
		Approvals:             s.Approvals,
		Rejections:            s.Rejections,
		ConsecutiveRejections: s.ConsecutiveRejections,
		ConsecutiveApprovals:  s.ConsecutiveApprovals,
		Answers:               s.Answers,
		TotalAnswerMS:         s.TotalAnswer.Milliseconds(),
		LastAnswerMS:          s.LastAnswer.Milliseconds(),
		LastAnswerAt:          s.LastAnswerAt,
	})
}

// UnmarshalJSON decodes the form MarshalJSON writes.
func (s *ToolStats) UnmarshalJSON(b []byte) error {
	var j toolStatsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = ToolStats{
		Tool:                  j.Tool,
		Approvals:             j.Approvals,
		Rejections:            j.Rejections,
		ConsecutiveRejections: j.ConsecutiveRejections,
		ConsecutiveApprovals:  j.ConsecutiveApprovals,
		Answers:               j.Answers,
		TotalAnswer:           time.Duration(j.TotalAnswerMS) * time.Millisecond,
		LastAnswer:            time.Duration(j.LastAnswerMS) * time.Millisecond,
		LastAnswerAt:          j.LastAnswerAt,
	}
	return nil
}

// Limits bound the in-memory session signals.
type Limits struct {
	Sessions    int           // sessions kept; the least recently active is evicted first
	Actions     int           // recent actions kept per session
	ActionAge   time.Duration // actions older than this are dropped
	Confidences int           // confidence values kept per session
	Notes       int           // stagnation notes kept per session (the count is not bounded)
	Tools       int           // tools whose last result is kept per session, for repeat detection
}

// DefaultLimits are the limits New uses.
var DefaultLimits = Limits{
	Sessions:    1024,
	Actions:     256,
	ActionAge:   time.Hour,
	Confidences: 20,
	Notes:       20,
	Tools:       128,
}

// withDefaults replaces non-positive limits by the defaults.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.Sessions <= 0 {
		l.Sessions = d.Sessions
	}
	if l.Actions <= 0 {
		l.Actions = d.Actions
	}
	if l.ActionAge <= 0 {
		l.ActionAge = d.ActionAge
	}
	if l.Confidences <= 0 {
		l.Confidences = d.Confidences
	}
	if l.Notes <= 0 {
		l.Notes = d.Notes
	}
	if l.Tools <= 0 {
		l.Tools = d.Tools
	}
	return l
}

// Bus is the PerceptionBus. It is safe for concurrent use.
type Bus struct {
	st  store.StateStore
	clk clock.Clock
	lim Limits

	mu       sync.Mutex
	sessions map[string]*list.Element // of *session
	lru      *list.List               // front: most recently active

	// statsCache keeps recently read tool statistics for StatsCacheTTL, so
	// that the engine's per-evaluation read does not cost a database query.
	// Answers recorded through this bus update it at once; answers recorded
	// by another process are seen within the TTL.
	cacheMu    sync.Mutex
	statsCache map[string]cachedStats
}

// StatsCacheTTL is how long a tool's statistics read from the store are
// reused.
const StatsCacheTTL = time.Second

type cachedStats struct {
	stats ToolStats
	at    time.Time
}

func (b *Bus) cached(tool string) (ToolStats, bool) {
	b.cacheMu.Lock()
	defer b.cacheMu.Unlock()
	c, ok := b.statsCache[tool]
	if !ok || b.clk.Now().Sub(c.at) > StatsCacheTTL || b.clk.Now().Before(c.at) {
		return ToolStats{}, false
	}
	return c.stats, true
}

func (b *Bus) remember(tool string, s ToolStats) {
	b.cacheMu.Lock()
	defer b.cacheMu.Unlock()
	if b.statsCache == nil || len(b.statsCache) > 4096 {
		b.statsCache = map[string]cachedStats{}
	}
	b.statsCache[tool] = cachedStats{stats: s, at: b.clk.Now()}
}

// New returns a bus that persists tool statistics in st, with DefaultLimits.
// A nil st makes a bus that keeps session signals only; its tool statistics
// methods return ErrNoStore.
func New(st store.StateStore, clk clock.Clock) *Bus {
	return NewWithLimits(st, clk, DefaultLimits)
}

// NewWithLimits returns a bus with the given limits; zero fields take the
// defaults.
func NewWithLimits(st store.StateStore, clk clock.Clock, lim Limits) *Bus {
	return &Bus{
		st:       st,
		clk:      clk,
		lim:      lim.withDefaults(),
		sessions: map[string]*list.Element{},
		lru:      list.New(),
	}
}

// RecordAnswer counts a person's answer about tool: approved or not, and how
// long they took. It updates the stored statistics atomically, so processes
// sharing the database count together, and returns them as updated. An
// approval resets the consecutive rejections and a rejection the consecutive
// approvals.
func (b *Bus) RecordAnswer(ctx context.Context, tool string, approved bool, elapsed time.Duration) (ToolStats, error) {
	if tool == "" {
		return ToolStats{}, ErrEmptyTool
	}
	if b.st == nil {
		return ToolStats{}, ErrNoStore
	}
	elapsed = max(elapsed, 0)
	now := b.clk.Now()
	var out ToolStats
	err := b.st.UpdateState(ctx, StatsNamespace, tool, func(old []byte) ([]byte, error) {
		s := ToolStats{Tool: tool}
		if old != nil {
			if err := json.Unmarshal(old, &s); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, tool, err)
			}
			s.Tool = tool
		}
		if approved {
			s.Approvals++
			s.ConsecutiveApprovals++
			s.ConsecutiveRejections = 0
		} else {
			s.Rejections++
			s.ConsecutiveRejections++
			s.ConsecutiveApprovals = 0
		}
		s.Answers++
		s.TotalAnswer += elapsed
		s.LastAnswer = elapsed
		s.LastAnswerAt = now
		// Return what was stored: durations are kept in milliseconds.
		raw, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		out = ToolStats{}
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, err
		}
		return raw, nil
	})
	if err != nil {
		return ToolStats{}, fmt.Errorf("perception: record answer for %s: %w", tool, err)
	}
	b.remember(tool, out)
	return out, nil
}

// RecentToolStats is ToolStats served from a cache of up to StatsCacheTTL:
// for readers on a hot path (the engine reads it on every evaluation) that
// can accept statistics up to a second old from other processes. Answers
// recorded through this bus are reflected at once.
func (b *Bus) RecentToolStats(ctx context.Context, tool string) (ToolStats, error) {
	if s, ok := b.cached(tool); ok {
		return s, nil
	}
	return b.ToolStats(ctx, tool)
}

// ToolStats returns the statistics of tool, read from the store; a tool
// never answered about has zero statistics.
func (b *Bus) ToolStats(ctx context.Context, tool string) (ToolStats, error) {
	if tool == "" {
		return ToolStats{}, ErrEmptyTool
	}
	if b.st == nil {
		return ToolStats{}, ErrNoStore
	}
	raw, err := b.st.GetState(ctx, StatsNamespace, tool)
	if errors.Is(err, store.ErrNotFound) {
		b.remember(tool, ToolStats{Tool: tool})
		return ToolStats{Tool: tool}, nil
	}
	if err != nil {
		return ToolStats{}, fmt.Errorf("perception: tool stats for %s: %w", tool, err)
	}
	var s ToolStats
	if err := json.Unmarshal(raw, &s); err != nil {
		return ToolStats{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, tool, err)
	}
	s.Tool = tool
	b.remember(tool, s)
	return s, nil
}

// AllToolStats returns the statistics of every tool answered about, by tool
// name.
func (b *Bus) AllToolStats(ctx context.Context) ([]ToolStats, error) {
	if b.st == nil {
		return nil, ErrNoStore
	}
	all, err := b.st.ListState(ctx, StatsNamespace)
	if err != nil {
		return nil, fmt.Errorf("perception: list tool stats: %w", err)
	}
	out := make([]ToolStats, 0, len(all))
	for tool, raw := range all {
		var s ToolStats
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, tool, err)
		}
		s.Tool = tool
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out, nil
}

// ActionSample is one action a session took.
type ActionSample struct {
	Tool     string    `json:"tool"`
	ArgsHash string    `json:"args_hash"`
	Time     time.Time `json:"time"`
	// Effect is true when the action writes, deletes, executes or sends
	// (the firewall's reading of its facts); L2 counts only such actions
	// of a tool. Reads are not counted, but identical repeats of them are.
	Effect bool `json:"effect,omitempty"`
	// Writes is true when the action writes or deletes a file: progress
	// that ends a run of identical repeats of other calls.
	Writes bool `json:"writes,omitempty"`
	// Shape names what kind of call it was (the firewall's hash of the
	// programs a command runs and the hosts it reaches, or of the call's
	// kind): same_tool counts a tool's calls of one shape. Empty in a
	// sample of an instance that did not record it: such a sample is
	// counted with every shape.
	Shape string `json:"shape,omitempty"`
}

// lastResult is what repeat detection remembers of a tool's last result.
type lastResult struct {
	hash    [32]byte
	repeats int
}

// session holds one session's in-memory signals.
type session struct {
	id         string
	lastSeen   time.Time
	actions    []ActionSample // oldest first
	confidence []float64      // oldest first
	stagnation int
	notes      []string // oldest first
	results    map[ResultClass]int
	last       map[string]*lastResult // by tool
	lastOrder  []string               // tools in first-seen order, for eviction
	// loopOK counts, by tool, the calls a loop limit put to a person that
	// the person approved (see ForgetTool and LoopApprovals).
	loopOK map[string]int
	// calls are the last results of calls, by arguments' hash
	// (RecordCallResult); callOrder their hashes in first-seen order.
	calls     map[string]*lastResult
	callOrder []string
}

// maxLoopTools bounds the tools a session's loop approvals are kept for.
const maxLoopTools = 32

// touch returns the session id, creating it and evicting the least recently
// active session when there are too many. Callers hold b.mu.
func (b *Bus) touch(id string) *session {
	now := b.clk.Now()
	if el, ok := b.sessions[id]; ok {
		b.lru.MoveToFront(el)
		s := el.Value.(*session)
		s.lastSeen = now
		return s
	}
	for b.lru.Len() >= b.lim.Sessions {
		old := b.lru.Back()
		b.lru.Remove(old)
		delete(b.sessions, old.Value.(*session).id)
	}
	s := &session{id: id, lastSeen: now, results: map[ResultClass]int{}, last: map[string]*lastResult{}}
	b.sessions[id] = b.lru.PushFront(s)
	return s
}

// lookup returns session id without creating or refreshing it. Callers hold b.mu.
func (b *Bus) lookup(id string) *session {
	if el, ok := b.sessions[id]; ok {
		return el.Value.(*session)
	}
	return nil
}

// pruneActions drops actions older than the age limit. Callers hold b.mu.
func (b *Bus) pruneActions(s *session, now time.Time) {
	cut := now.Add(-b.lim.ActionAge)
	i := 0
	for i < len(s.actions) && s.actions[i].Time.Before(cut) {
		i++
	}
	if i > 0 {
		s.actions = append(s.actions[:0], s.actions[i:]...)
	}
}

// keepLast appends v to xs, keeping only the last n values.
func keepLast[T any](xs []T, v T, n int) []T {
	xs = append(xs, v)
	if len(xs) > n {
		xs = append(xs[:0], xs[len(xs)-n:]...)
	}
	return xs
}

// RecordAction notes that session took an action (tool with args hash) now,
// whose effects are not known: it is counted as one that has effects.
func (b *Bus) RecordAction(session, tool, argsHash string) {
	b.RecordSample(session, ActionSample{Tool: tool, ArgsHash: argsHash, Effect: true})
}

// RecordSample notes that session took the action s now (its Time is set
// from the bus's clock).
func (b *Bus) RecordSample(session string, s ActionSample) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ss := b.touch(session)
	now := b.clk.Now()
	b.pruneActions(ss, now)
	s.Time = now
	ss.actions = keepLast(ss.actions, s, b.lim.Actions)
}

// RecordSampleAt notes that session took the action s at s.Time: an
// action another process sharing the database recorded (it may arrive
// late, and is put in time order).
func (b *Bus) RecordSampleAt(session string, s ActionSample) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ss := b.touch(session)
	b.pruneActions(ss, b.clk.Now())
	if s.Time.Before(b.clk.Now().Add(-b.lim.ActionAge)) {
		return
	}
	i := len(ss.actions)
	for i > 0 && ss.actions[i-1].Time.After(s.Time) {
		i--
	}
	ss.actions = append(ss.actions, ActionSample{})
	copy(ss.actions[i+1:], ss.actions[i:])
	ss.actions[i] = s
	if len(ss.actions) > b.lim.Actions {
		ss.actions = append(ss.actions[:0], ss.actions[len(ss.actions)-b.lim.Actions:]...)
	}
}

// ForgetTool drops session's recorded actions of tool: a person approved a
// call of it that a loop limit had put to them, so counting starts again.
// The approval is remembered (LoopApprovals): the session's limit for the
// tool grows with each one.
func (b *Bus) ForgetTool(session, tool string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.touch(session)
	if s.loopOK == nil {
		s.loopOK = map[string]int{}
	}
	if _, ok := s.loopOK[tool]; ok || len(s.loopOK) < maxLoopTools {
		s.loopOK[tool]++
	}
	kept := s.actions[:0]
	for _, a := range s.actions {
		if a.Tool != tool {
			kept = append(kept, a)
		}
	}
	s.actions = kept
}

// LoopApprovals returns how many calls of tool a loop limit put to a
// person in session that the person approved (see ForgetTool).
func (b *Bus) LoopApprovals(session, tool string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.lookup(session); s != nil {
		return s.loopOK[tool]
	}
	return 0
}

// Recent returns session's actions of the last window, oldest first.
func (b *Bus) Recent(session string, window time.Duration) []ActionSample {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.lookup(session)
	if s == nil {
		return nil
	}
	cut := b.clk.Now().Add(-window)
	var out []ActionSample
	for _, a := range s.actions {
		if !a.Time.Before(cut) {
			out = append(out, a)
		}
	}
	return out
}

// RecordConfidence notes the decider's confidence for session. Values are
// clamped to [0,1]; a NaN counts as 0: an unreadable confidence is no
// confidence.
func (b *Bus) RecordConfidence(session string, c float64) {
	switch {
	case math.IsNaN(c) || c < 0:
		c = 0
	case c > 1:
		c = 1
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.touch(session)
	s.confidence = keepLast(s.confidence, c, b.lim.Confidences)
}

// ConfidenceWindow returns session's latest confidence values, oldest first.
func (b *Bus) ConfidenceWindow(session string) []float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.lookup(session); s != nil {
		return append([]float64(nil), s.confidence...)
	}
	return nil
}

// LowConfidenceStreak returns how many of session's latest confidence values
// in a row are below the threshold (within the window kept).
func (b *Bus) LowConfidenceStreak(session string, below float64) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.lookup(session)
	if s == nil {
		return 0
	}
	n := 0
	for i := len(s.confidence) - 1; i >= 0 && s.confidence[i] < below; i-- {
		n++
	}
	return n
}

// RecordStagnation notes that session made no progress, with a note (for
// example the agent's reflection).
func (b *Bus) RecordStagnation(session, note string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.touch(session)
	s.stagnation++
	s.notes = keepLast(s.notes, note, b.lim.Notes)
}

// StagnationCount returns how many times session was noted as stagnating.
func (b *Bus) StagnationCount(session string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.lookup(session); s != nil {
		return s.stagnation
	}
	return 0
}

// ClearStagnation forgets session's no-progress count (its notes are
// kept): a person has looked at the session since.
func (b *Bus) ClearStagnation(session string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.lookup(session); s != nil {
		s.stagnation = 0
	}
}

// SessionStats is a read-only copy of one session's signals.
type SessionStats struct {
	Session         string              `json:"session"`
	LastSeen        time.Time           `json:"last_seen,omitempty"`
	Actions         []ActionSample      `json:"actions,omitempty"`    // within the age limit, oldest first
	Confidence      []float64           `json:"confidence,omitempty"` // oldest first
	Stagnation      int                 `json:"stagnation"`
	StagnationNotes []string            `json:"stagnation_notes,omitempty"` // oldest first
	Results         map[ResultClass]int `json:"results,omitempty"`          // results by class
	Repeats         map[string]int      `json:"repeats,omitempty"`          // by tool: current run of identical results
}

// Snapshot returns a copy of session's signals; an unknown session has zero
// signals.
func (b *Bus) Snapshot(session string) SessionStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := SessionStats{Session: session}
	s := b.lookup(session)
	if s == nil {
		return out
	}
	b.pruneActions(s, b.clk.Now())
	out.LastSeen = s.lastSeen
	out.Actions = append([]ActionSample(nil), s.actions...)
	out.Confidence = append([]float64(nil), s.confidence...)
	out.Stagnation = s.stagnation
	out.StagnationNotes = append([]string(nil), s.notes...)
	if len(s.results) > 0 {
		out.Results = make(map[ResultClass]int, len(s.results))
		for c, n := range s.results {
			out.Results[c] = n
		}
	}
	for tool, lr := range s.last {
		if lr.repeats > 0 {
			if out.Repeats == nil {
				out.Repeats = map[string]int{}
			}
			out.Repeats[tool] = lr.repeats
		}
	}
	return out
}

// Sessions returns how many sessions are held.
func (b *Bus) Sessions() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lru.Len()
}
