// Package task keeps the tasks of Overseer's own agent loop as stored
// objects with a lifecycle: captured (inbox, someday, waiting), created,
// running, waiting for a person, paused, and ended (done, failed, aborted).
// A task's record is also its checkpoint: it holds everything the loop
// needs to go on after a restart.
package task

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/plugin"
)

// Status is where a task is in its lifecycle.
type Status string

// Statuses. Inbox, Someday and Waiting are for captured tasks (not yet
// assessed, deferred, blocked on something outside); the rest belong to a
// task the loop works on.
const (
	Inbox         Status = "inbox"
	Someday       Status = "someday"
	Waiting       Status = "waiting"
	Created       Status = "created"
	Running       Status = "running"
	WaitingPerson Status = "waiting_person"
	Paused        Status = "paused"
	Done          Status = "done"
	Failed        Status = "failed"
	Aborted       Status = "aborted"
)

// Statuses lists every status, in lifecycle order.
var Statuses = []Status{Inbox, Someday, Waiting, Created, Running, WaitingPerson, Paused, Done, Failed, Aborted}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// Ended reports whether the task is over.
func (s Status) Ended() bool { return s == Done || s == Failed || s == Aborted }

// Startable reports whether the loop may start or resume a task in s (a
// failed task may be retried; a waiting_person or running one whose runner
// died is resumed from its checkpoint).
func (s Status) Startable() bool {
	switch s {
	case Inbox, Someday, Waiting, Created, Paused, WaitingPerson, Failed:
		return true
	}
	return false
}

// Sentinel errors.
var (
	ErrNotFound  = errors.New("no such task")
	ErrEnded     = errors.New("the task has ended")
	ErrRunning   = errors.New("the task is running in another process")
	ErrBadStatus = errors.New("invalid task status")
	ErrAmbiguous = errors.New("task ID prefix matches several tasks")
)

// Task is one task and its checkpoint.
type Task struct {
	ID        string    `json:"id"`
	Goal      string    `json:"goal"`
	Status    Status    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Model is the model specification the task runs with.
	Model    string `json:"model,omitempty"`
	MaxSteps int    `json:"max_steps"`
	// Budget is the number of steps each run may take; a task paused at
	// its limit gets Budget more steps when resumed.
	Budget int `json:"budget"`
	// Step is the number of steps taken so far.
	Step  int                 `json:"step"`
	Steps []plugin.StepRecord `json:"steps,omitempty"`
	Usage plugin.Usage        `json:"usage"`
	// StepUsage is the usage of each model call, in order.
	StepUsage []StepUsage  `json:"step_usage,omitempty"`
	Plan      *plugin.Plan `json:"plan,omitempty"`
	// Planned is true once planning was tried (a plan may still be nil).
	Planned        bool     `json:"planned,omitempty"`
	HumanDecisions []string `json:"human_decisions,omitempty"`
	Signals        []string `json:"signals,omitempty"`
	// Corrections are messages for the next step only.
	Corrections    []string `json:"corrections,omitempty"`
	Summary        string   `json:"summary,omitempty"`
	SummaryThrough int      `json:"summary_through,omitempty"`
	// MaxTokens is the reply limit in force (0: the model's default);
	// TokensRaised is true once it was raised after a cut-off reply.
	MaxTokens    int  `json:"max_tokens,omitempty"`
	TokensRaised bool `json:"tokens_raised,omitempty"`
	// Rejections counts replies the response validator rejected in a row.
	Rejections int `json:"rejections,omitempty"`
	// Cwd is the working directory the task's tools run in.
	Cwd string `json:"cwd"`
	// Session is the session the task's actions are judged in.
	Session string `json:"session"`
	// Parent is the task that started this one as a sub-task (empty: a
	// task of its own). A sub-task acts in its parent's session as the
	// sub-agent of type "subtask" with its own id, may call only Tools,
	// and runs under Grant (carved out of its parent's) when its parent
	// held one.
	Parent string   `json:"parent,omitempty"`
	Tools  []string `json:"tools,omitempty"`
	Grant  string   `json:"grant,omitempty"`
	// Aborts counts abort requests: 1 stops after the current step, 2 forces.
	Aborts int `json:"aborts,omitempty"`
	// Runner is the process running the task, while it runs.
	Runner *Runner `json:"runner,omitempty"`
	// Result is the summary of an ended or paused task; Error why it failed.
	Result  string        `json:"result,omitempty"`
	Error   string        `json:"error,omitempty"`
	Elapsed time.Duration `json:"elapsed"`
	// Pending is the approval the task waits on, while it waits.
	Pending string `json:"pending,omitempty"`
	// PendingStep is the step that waits for a person, kept so that a task
	// resumed after its process died waits for the same answer instead of
	// asking the model (and the person) again.
	PendingStep *PendingStep `json:"pending_step,omitempty"`
}

// PendingStep is a step interrupted while it waited for a person.
type PendingStep struct {
	N int `json:"n"`
	// Decision is the model's decision of the step, as the loop parsed it.
	Decision json.RawMessage `json:"decision"`
	// Text is the model's reply; Rejected and Looped say why a person was
	// asked instead of acting on it.
	Text     string `json:"text,omitempty"`
	Rejected string `json:"rejected,omitempty"`
	Looped   bool   `json:"looped,omitempty"`
	// Approval is the approval the step waits on.
	Approval string `json:"approval"`
}

// StepUsage is one model call's usage.
type StepUsage struct {
	Step    int          `json:"step"`
	Purpose string       `json:"purpose"`
	Model   string       `json:"model,omitempty"`
	Usage   plugin.Usage `json:"usage"`
}

// Runner names the process that runs a task.
type Runner struct {
	PID       int       `json:"pid"`
	Host      string    `json:"host"`
	Heartbeat time.Time `json:"heartbeat"`
}

// ns is the state namespace tasks are kept in.
const ns = "task"

// Store keeps tasks in the kernel's state store, so every process sharing
// the database sees them.
type Store struct {
	st    store.StateStore
	now   func() time.Time
	audit *audit.Log
}

// WithAudit makes the store record each task's lifecycle (created, started,
// abort requested, ended) in the audit log, and returns it.
func (s *Store) WithAudit(l *audit.Log) *Store {
	s.audit = l
	return s
}

// Event is the audit record of a task's lifecycle event.
type Event struct {
	Event   string `json:"event"` // created, started, abort_requested, ended
	TaskID  string `json:"task_id"`
	Goal    string `json:"goal,omitempty"`
	Status  Status `json:"status"`
	Step    int    `json:"step"`
	Who     string `json:"who,omitempty"`
	Channel string `json:"channel,omitempty"`
	Aborts  int    `json:"aborts,omitempty"`
	Result  string `json:"result,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Record writes a lifecycle event of t to the audit log (when the store has
// one).
func (s *Store) Record(ctx context.Context, t *Task, ev Event) error {
	if s.audit == nil {
		return nil
	}
	ev.TaskID, ev.Status, ev.Step = t.ID, t.Status, t.Step
	if ev.Event == "created" {
		ev.Goal = t.Goal
	}
	_, err := s.audit.Append(context.WithoutCancel(ctx), audit.Entry{Type: audit.TypeTask, Agent: "overseer", Session: t.Session, Data: ev})
	if err != nil {
		return fmt.Errorf("recording the task's %s in the audit log: %w", ev.Event, err)
	}
	return nil
}

// NewStore returns a Store over st; now defaults to time.Now.
func NewStore(st store.StateStore, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{st: st, now: now}
}

// NewID returns a new task ID.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "task_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// Create stores a new task. ID, CreatedAt and UpdatedAt are filled in when
// empty; Status defaults to Created.
func (s *Store) Create(ctx context.Context, t *Task) error {
	if strings.TrimSpace(t.Goal) == "" {
		return errors.New("a task needs a goal")
	}
	if t.ID == "" {
		t.ID = NewID()
	}
	if t.Status == "" {
		t.Status = Created
	}
	if !t.Status.Valid() {
		return fmt.Errorf("%w: %q", ErrBadStatus, t.Status)
	}
	now := s.now().UTC()
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	t.UpdatedAt = now
	if t.Session == "" {
		t.Session = t.ID
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := s.st.UpdateState(ctx, ns, t.ID, func(old []byte) ([]byte, error) {
		if old != nil {
			return nil, fmt.Errorf("task %s already exists", t.ID)
		}
		return b, nil
	}); err != nil {
		return err
	}
	return s.Record(ctx, t, Event{Event: "created"})
}

// Get returns the task with id, or one whose ID starts with id when that is
// unambiguous.
func (s *Store) Get(ctx context.Context, id string) (*Task, error) {
	b, err := s.st.GetState(ctx, ns, id)
	if err == nil {
		return decode(b)
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	all, err := s.List(ctx, nil)
	if err != nil {
		return nil, err
	}
	var found *Task
	for _, t := range all {
		if id != "" && (strings.HasPrefix(t.ID, id) || strings.HasPrefix(t.ID, "task_"+id)) {
			if found != nil {
				return nil, fmt.Errorf("%w: %q", ErrAmbiguous, id)
			}
			found = t
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return found, nil
}

func decode(b []byte) (*Task, error) {
	var t Task
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("reading a task record: %w", err)
	}
	return &t, nil
}

// List returns the tasks whose status is in statuses (all when empty),
// newest first.
func (s *Store) List(ctx context.Context, statuses []Status) ([]*Task, error) {
	m, err := s.st.ListState(ctx, ns)
	if err != nil {
		return nil, err
	}
	want := map[Status]bool{}
	for _, st := range statuses {
		want[st] = true
	}
	var out []*Task
	for _, b := range m {
		t, err := decode(b)
		if err != nil {
			return nil, err
		}
		if len(want) == 0 || want[t.Status] {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// Update atomically applies fn to the stored task id and saves the result.
// fn's error leaves the task unchanged.
func (s *Store) Update(ctx context.Context, id string, fn func(t *Task) error) (*Task, error) {
	var out *Task
	err := s.st.UpdateState(ctx, ns, id, func(old []byte) ([]byte, error) {
		if old == nil {
			return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		t, err := decode(old)
		if err != nil {
			return nil, err
		}
		if err := fn(t); err != nil {
			return nil, err
		}
		if !t.Status.Valid() {
			return nil, fmt.Errorf("%w: %q", ErrBadStatus, t.Status)
		}
		t.UpdatedAt = s.now().UTC()
		out = t
		return json.Marshal(t)
	})
	return out, err
}

// Save writes t as the checkpoint of its task, keeping abort requests that
// arrived meanwhile (they only ever grow).
func (s *Store) Save(ctx context.Context, t *Task) error {
	saved, err := s.Update(ctx, t.ID, func(cur *Task) error {
		aborts := max(cur.Aborts, t.Aborts)
		*cur = *t
		cur.Aborts = aborts
		return nil
	})
	if err == nil {
		t.Aborts, t.UpdatedAt = saved.Aborts, saved.UpdatedAt
	}
	return err
}

// Abort records an abort request and returns the task afterwards. A task
// that is not running ends as aborted at once; a running one is told to
// stop after its current step (first request) or at once (second).
func (s *Store) Abort(ctx context.Context, id string, stale time.Duration) (*Task, error) {
	return s.AbortBy(ctx, id, stale, "", "")
}

// AbortBy is Abort that records who asked, through which channel, in the
// audit log.
func (s *Store) AbortBy(ctx context.Context, id string, stale time.Duration, who, channel string) (*Task, error) {
	t, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	t, err = s.Update(ctx, t.ID, func(t *Task) error {
		if t.Status.Ended() {
			return fmt.Errorf("%w: %s is %s", ErrEnded, t.ID, t.Status)
		}
		t.Aborts++
		if !s.Live(t, stale) {
			t.Status = Aborted
			t.Runner = nil
			t.Result = "aborted while not running"
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, s.Record(ctx, t, Event{Event: "abort_requested", Who: who, Channel: channel, Aborts: t.Aborts})
}

// Live reports whether t has a runner that sent a heartbeat within stale
// and, when it runs on this machine, whose process still exists.
func (s *Store) Live(t *Task, stale time.Duration) bool {
	if t.Runner == nil || s.now().Sub(t.Runner.Heartbeat) >= stale {
		return false
	}
	if host, err := os.Hostname(); err == nil && host == t.Runner.Host {
		return processAlive(t.Runner.PID)
	}
	return true
}
