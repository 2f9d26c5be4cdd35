package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/agent"
	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/plugin"
)

// Defaults and caps of the task endpoints.
const (
	// TaskStale is how long a task's runner may go without a heartbeat
	// before the task counts as not running (as `overseer abort` counts it).
	TaskStale = agent.StaleAfter
	// DefaultTaskLimit is the number of tasks a list returns when the
	// request names no limit; MaxTaskLimit is the most it returns.
	DefaultTaskLimit = 100
	MaxTaskLimit     = 1000
	// summaryTextRunes caps the result and error a list shows per task; the
	// task's own record holds them whole.
	summaryTextRunes = 500
)

// ErrBadTaskQuery means a task list's query could not be read.
var ErrBadTaskQuery = errors.New("invalid task query")

// TaskQuery is what a task list asks for.
type TaskQuery struct {
	// Statuses keeps the tasks in any of these statuses (all when empty).
	Statuses []task.Status
	// Limit is the most tasks returned, newest first.
	Limit int
}

// ParseTaskQuery reads ?status=a,b&limit=N. An unknown status or a limit
// that is not a positive number is an error wrapping ErrBadTaskQuery whose
// text says what is accepted; a limit above MaxTaskLimit is capped.
func ParseTaskQuery(q url.Values) (TaskQuery, error) {
	tq := TaskQuery{Limit: DefaultTaskLimit}
	seen := map[task.Status]bool{}
	for _, raw := range q["status"] {
		for _, part := range strings.Split(raw, ",") {
			part = strings.TrimSpace(part)
			if part == "" || part == "all" {
				continue
			}
			st := task.Status(part)
			if !st.Valid() {
				return TaskQuery{}, fmt.Errorf("%w: status %q is not one of %s (or all)", ErrBadTaskQuery,
					truncate(part, 40), statusList())
			}
			if !seen[st] {
				seen[st] = true
				tq.Statuses = append(tq.Statuses, st)
			}
		}
	}
	if raw := strings.TrimSpace(q.Get("limit")); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n <= 0 {
			return TaskQuery{}, fmt.Errorf("%w: limit %q is not a positive number", ErrBadTaskQuery, truncate(raw, 20))
		}
		tq.Limit = min(n, MaxTaskLimit)
	}
	return tq, nil
}

func statusList() string {
	names := make([]string, len(task.Statuses))
	for i, s := range task.Statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// truncate cuts s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// TaskSummary is a task as a list shows it.
type TaskSummary struct {
	ID     string      `json:"id"`
	Goal   string      `json:"goal"`
	Status task.Status `json:"status"`
	// Live is true while a runner process works on the task (its heartbeat
	// is fresh and, on this machine, its process exists).
	Live      bool         `json:"live"`
	Step      int          `json:"step"`
	MaxSteps  int          `json:"max_steps"`
	Usage     plugin.Usage `json:"usage"`
	Model     string       `json:"model,omitempty"`
	CreatedAt time.Time    `json:"created_at"`
	UpdatedAt time.Time    `json:"updated_at"`
	// Pending is the approval the task waits on, while it waits.
	Pending string `json:"pending,omitempty"`
	// Aborts counts abort requests so far.
	Aborts int `json:"aborts,omitempty"`
	// PlanDone and PlanTotal count the plan's subtasks (0 without a plan).
	PlanDone  int `json:"plan_done"`
	PlanTotal int `json:"plan_total"`
	// Result and Error are shortened to a few hundred characters.
	Result string `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Summarize returns t as a list shows it; live says whether it has a
// runner.
func Summarize(t *task.Task, live bool) TaskSummary {
	s := TaskSummary{ID: t.ID, Goal: t.Goal, Status: t.Status, Live: live, Step: t.Step, MaxSteps: t.MaxSteps,
		Usage: t.Usage, Model: t.Model, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, Pending: t.Pending,
		Aborts: t.Aborts, Result: truncate(t.Result, summaryTextRunes), Error: truncate(t.Error, summaryTextRunes)}
	if t.Plan != nil {
		s.PlanTotal = len(t.Plan.Subtasks)
		for _, st := range t.Plan.Subtasks {
			if st.Done {
				s.PlanDone++
			}
		}
	}
	return s
}

// TaskView is a task's whole record (steps, plan, people's decisions,
// usage) with what the store alone does not say.
type TaskView struct {
	*task.Task
	// Live is true while a runner process works on the task.
	Live bool `json:"live"`
	// PendingApproval is the approval the task waits on, when it waits and
	// the approval could be read.
	PendingApproval *store.Approval `json:"pending_approval,omitempty"`
}

// AbortView is the task after an abort request, with what will happen.
type AbortView struct {
	TaskView
	// Note says what the request does: ended at once, stops after the
	// current step, or stops now.
	Note string `json:"note"`
}

// approvalReader reads an approval (the kernel's HumanGate).
type approvalReader interface {
	Get(ctx context.Context, id string) (*store.Approval, error)
}

// Tasks serves the tasks of Overseer's own agent loop over HTTP. The API
// mounts it behind the token; the web console mounts the same handlers
// behind its session (and CSRF for Abort), so both answer alike.
type Tasks struct {
	tasks     *task.Store
	approvals approvalReader
	stale     time.Duration
	k         *kernel.Kernel // withdraws an aborted task's pending request
}

// WithKernel lets an abort withdraw the request an idle task was waiting
// on, and returns h.
func (h *Tasks) WithKernel(k *kernel.Kernel) *Tasks {
	h.k = k
	return h
}

// NewTasks returns the task handlers over ts; approvals, when not nil,
// fills in the approval a waiting task waits on.
func NewTasks(ts *task.Store, approvals approvalReader) *Tasks {
	return &Tasks{tasks: ts, approvals: approvals, stale: TaskStale}
}

// List serves GET …/tasks?status=a,b&limit=N: task summaries, newest first.
func (h *Tasks) List(w http.ResponseWriter, r *http.Request) {
	q, err := ParseTaskQuery(r.URL.Query())
	if err != nil {
		writeErr(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	list, err := h.tasks.List(r.Context(), q.Statuses)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	out := make([]TaskSummary, 0, min(len(list), q.Limit))
	for _, t := range list {
		if len(out) >= q.Limit {
			break
		}
		out = append(out, Summarize(t, h.tasks.Live(t, h.stale)))
	}
	writeJSON(w, http.StatusOK, out)
}

// Get serves GET …/tasks/{id}: the task's whole record. An unambiguous
// prefix of the ID is accepted, as the CLI accepts it.
func (h *Tasks) Get(w http.ResponseWriter, r *http.Request) {
	t, err := h.tasks.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		writeTaskErr(w, r.PathValue("id"), err)
		return
	}
	writeJSON(w, http.StatusOK, h.view(r.Context(), t))
}

// Abort serves POST …/tasks/{id}/abort: a task not running ends as aborted
// at once; a running one stops after its current step (first request) or
// at once (second). It answers with the task after the request, 404 for an
// unknown task and 409 for one that has ended.
func (h *Tasks) Abort(w http.ResponseWriter, r *http.Request) {
	h.AbortAs(w, r, "api", "api")
}

// AbortAs is Abort on behalf of who, through channel (recorded in the
// audit log).
func (h *Tasks) AbortAs(w http.ResponseWriter, r *http.Request, who, channel string) {
	var t *task.Task
	var err error
	if h.k != nil {
		t, err = agent.Abort(r.Context(), h.k, h.tasks, r.PathValue("id"), who, channel)
	} else {
		t, err = h.tasks.AbortBy(r.Context(), r.PathValue("id"), h.stale, who, channel)
	}
	if err != nil && t != nil {
		// The abort took effect; what failed afterwards is reported.
		writeJSON(w, http.StatusOK, AbortView{TaskView: h.view(r.Context(), t), Note: err.Error()})
		return
	}
	if errors.Is(err, task.ErrEnded) {
		msg := "the task has ended: there is nothing to abort"
		if cur, gerr := h.tasks.Get(r.Context(), r.PathValue("id")); gerr == nil {
			msg = fmt.Sprintf("task %s has ended (%s): there is nothing to abort", cur.ID, cur.Status)
		}
		writeErr(w, http.StatusConflict, "ended", msg)
		return
	}
	if err != nil {
		writeTaskErr(w, r.PathValue("id"), err)
		return
	}
	v := AbortView{TaskView: h.view(r.Context(), t)}
	switch {
	case t.Status == task.Aborted:
		v.Note = "the task was not running: it is aborted"
	case t.Aborts <= 1:
		v.Note = "the task will stop after its current step (abort again to stop it at once)"
	default:
		v.Note = "the task is being stopped now"
	}
	writeJSON(w, http.StatusOK, v)
}

func (h *Tasks) view(ctx context.Context, t *task.Task) TaskView {
	v := TaskView{Task: t, Live: h.tasks.Live(t, h.stale)}
	if t.Pending != "" && h.approvals != nil {
		if apr, err := h.approvals.Get(ctx, t.Pending); err == nil {
			v.PendingApproval = apr
		}
	}
	return v
}

// writeTaskErr maps the task store's errors to coded API errors.
func writeTaskErr(w http.ResponseWriter, id string, err error) {
	switch {
	case errors.Is(err, task.ErrNotFound):
		writeErr(w, http.StatusNotFound, "not_found", "no task "+truncate(id, 80))
	case errors.Is(err, task.ErrEnded):
		writeErr(w, http.StatusConflict, "ended", err.Error())
	case errors.Is(err, task.ErrAmbiguous):
		writeErr(w, http.StatusBadRequest, "ambiguous", err.Error())
	default:
		writeErr(w, http.StatusInternalServerError, "store", err.Error())
	}
}

// taskRoutes registers the task endpoints (people's side: token required).
func (s *Server) taskRoutes() {
	h := NewTasks(agent.NewTaskStore(s.k, nil), s.k.Gate).WithKernel(s.k)
	s.r.HandleFunc("GET /api/v1/tasks", AccessToken, s.auth(h.List))
	s.r.HandleFunc("GET /api/v1/tasks/{id}", AccessToken, s.auth(h.Get))
	s.r.HandleFunc("POST /api/v1/tasks/{id}/abort", AccessToken, s.auth(h.Abort))
}
