package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/plugin"
)

// taskSet is a store holding one task of each kind the endpoints treat
// differently, created oldest first in the order of the fields.
type taskSet struct {
	ts                                        *task.Store
	inbox, live, stale, done, waiting, paused *task.Task
	approval                                  string
}

// seedTasks creates the tasks of a taskSet in k's store.
func seedTasks(t *testing.T, k *kernel.Kernel) *taskSet {
	t.Helper()
	ctx := context.Background()
	ts := task.NewStore(k.Store, k.Clock.Now)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	sub, err := k.Ask(ctx, &action.Action{Agent: "overseer", Session: "task_waiting", Tool: "overseer.ask_human"},
		"Which branch should I deploy?")
	if err != nil || sub.Approval == nil {
		t.Fatalf("ask: %v %+v", err, sub)
	}
	base := k.Clock.Now().Add(-time.Hour).UTC()
	conf := 0.9
	s := &taskSet{ts: ts, approval: sub.Approval.ID,
		inbox: &task.Task{ID: "task_inbox", Goal: "tidy the <script>alert(1)</script> notes", Status: task.Inbox},
		live: &task.Task{ID: "task_live", Goal: "build the site", Status: task.Running, Step: 3, MaxSteps: 20,
			Runner: &task.Runner{PID: os.Getpid(), Host: host, Heartbeat: k.Clock.Now().UTC()}},
		stale: &task.Task{ID: "task_stale", Goal: "a runner that died", Status: task.Running, Step: 1, MaxSteps: 20,
			Runner: &task.Runner{PID: os.Getpid(), Host: host, Heartbeat: k.Clock.Now().Add(-time.Minute).UTC()}},
		done: &task.Task{ID: "task_done", Goal: "say hello", Status: task.Done, Step: 2, MaxSteps: 20,
			Result: strings.Repeat("r", 2000)},
		waiting: &task.Task{ID: "task_waiting", Goal: "deploy", Status: task.WaitingPerson, Step: 4, MaxSteps: 20,
			Pending: sub.Approval.ID},
		paused: &task.Task{ID: "task_paused", Goal: "write the report", Status: task.Paused, Step: 10, MaxSteps: 10,
			Usage: plugin.Usage{InputTokens: 1200, OutputTokens: 300, CostUSD: 0.0123}, Model: "openai:gpt-x",
			Plan: &plugin.Plan{Subtasks: []plugin.Subtask{{Title: "outline", Done: true}, {Title: "draft"}}},
			Steps: []plugin.StepRecord{
				{N: 1, Action: "tool_call", Tool: "bash", Args: map[string]any{"command": "ls"}, Outcome: plugin.OutcomeRan,
					Output: "a.txt", Confidence: &conf},
				{N: 2, Action: "ask_human", Tool: "overseer.ask_human", Outcome: plugin.OutcomeAsked, Human: "use the 2025 numbers"},
			},
			HumanDecisions: []string{"step 2: use the 2025 numbers"}},
	}
	for i, tk := range []*task.Task{s.inbox, s.live, s.stale, s.done, s.waiting, s.paused} {
		tk.CreatedAt = base.Add(time.Duration(i) * time.Minute)
		if err := ts.Create(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func ids(t *testing.T, body []byte) []string {
	t.Helper()
	var list []httpapi.TaskSummary
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	return out
}

func errCode(t *testing.T, body []byte) (code, msg string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return e.Error.Code, e.Error.Message
}

func TestTaskEndpointsNeedToken(t *testing.T) {
	srv, k := server(t)
	s := seedTasks(t, k)
	for _, ep := range []struct{ method, path string }{
		{"GET", "/api/v1/tasks"},
		{"GET", "/api/v1/tasks/task_paused"},
		{"POST", "/api/v1/tasks/task_paused/abort"},
	} {
		t.Run(ep.method+" "+ep.path, func(t *testing.T) {
			if code, _ := call(t, srv, ep.method, ep.path, nil, false); code != http.StatusUnauthorized {
				t.Fatalf("without the token: %d", code)
			}
		})
	}
	got, err := s.ts.Get(context.Background(), "task_paused")
	if err != nil || got.Status != task.Paused || got.Aborts != 0 {
		t.Fatalf("an unauthorized abort changed the task: %+v %v", got, err)
	}
}

func TestTaskList(t *testing.T) {
	srv, k := server(t)
	seedTasks(t, k)
	all := []string{"task_paused", "task_waiting", "task_done", "task_stale", "task_live", "task_inbox"}
	for _, tc := range []struct {
		name, query string
		want        []string
	}{
		{"all, newest first", "", all},
		{"status all", "?status=all", all},
		{"one status", "?status=done", []string{"task_done"}},
		{"several statuses", "?status=running,paused", []string{"task_paused", "task_stale", "task_live"}},
		{"repeated and spaced statuses", "?status=inbox,%20inbox&status=done", []string{"task_done", "task_inbox"}},
		{"limit", "?limit=2", all[:2]},
		{"limit above the cap", "?limit=5000", all},
		{"status and limit", "?status=running&limit=1", []string{"task_stale"}},
		{"status with no task", "?status=aborted", []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, srv, "GET", "/api/v1/tasks"+tc.query, nil, true)
			if code != 200 {
				t.Fatalf("%d %s", code, body)
			}
			if got := ids(t, body); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("summaries", func(t *testing.T) {
		_, body := call(t, srv, "GET", "/api/v1/tasks", nil, true)
		var list []httpapi.TaskSummary
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		by := map[string]httpapi.TaskSummary{}
		for _, s := range list {
			by[s.ID] = s
		}
		if !by["task_live"].Live || by["task_stale"].Live || by["task_paused"].Live {
			t.Errorf("live: live=%v stale=%v paused=%v", by["task_live"].Live, by["task_stale"].Live, by["task_paused"].Live)
		}
		p := by["task_paused"]
		if p.Step != 10 || p.MaxSteps != 10 || p.Usage.InputTokens != 1200 || p.Usage.CostUSD != 0.0123 ||
			p.PlanDone != 1 || p.PlanTotal != 2 || p.Model != "openai:gpt-x" {
			t.Errorf("paused summary %+v", p)
		}
		if by["task_waiting"].Pending == "" {
			t.Errorf("the waiting task names no approval: %+v", by["task_waiting"])
		}
		if r := []rune(by["task_done"].Result); len(r) > 501 || len(r) < 100 {
			t.Errorf("the result is not shortened: %d runes", len(r))
		}
		if strings.Contains(string(body), `"steps"`) {
			t.Errorf("a list carries whole records: %s", body)
		}
	})

	for _, tc := range []struct{ name, query, want string }{
		{"unknown status", "?status=bogus", `status "bogus" is not one of`},
		{"unknown status among good ones", "?status=done,finished", `"finished"`},
		{"zero limit", "?limit=0", "limit"},
		{"negative limit", "?limit=-3", "limit"},
		{"limit not a number", "?limit=ten", "limit"},
	} {
		t.Run("400 "+tc.name, func(t *testing.T) {
			code, body := call(t, srv, "GET", "/api/v1/tasks"+tc.query, nil, true)
			c, msg := errCode(t, body)
			if code != http.StatusBadRequest || c != "bad_request" || !strings.Contains(msg, tc.want) {
				t.Fatalf("%d %s", code, body)
			}
			if strings.Contains(tc.name, "status") && !strings.Contains(msg, "waiting_person") {
				t.Fatalf("the message does not say which statuses are valid: %s", msg)
			}
		})
	}
}

func TestTaskGet(t *testing.T) {
	srv, k := server(t)
	s := seedTasks(t, k)
	t.Run("the whole record", func(t *testing.T) {
		code, body := call(t, srv, "GET", "/api/v1/tasks/task_paused", nil, true)
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		var v struct {
			task.Task
			Live bool `json:"live"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Steps) != 2 || v.Steps[1].Human != "use the 2025 numbers" || v.Plan == nil || !v.Plan.Subtasks[0].Done ||
			len(v.HumanDecisions) != 1 || v.Live || v.Usage.OutputTokens != 300 {
			t.Fatalf("record %s", body)
		}
	})
	t.Run("a waiting task carries its approval", func(t *testing.T) {
		code, body := call(t, srv, "GET", "/api/v1/tasks/task_waiting", nil, true)
		var v httpapi.TaskView
		if err := json.Unmarshal(body, &v); err != nil || code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		if v.PendingApproval == nil || v.PendingApproval.ID != s.approval || v.PendingApproval.Tool != "overseer.ask_human" ||
			v.PendingApproval.Action.Args["question"] != "Which branch should I deploy?" {
			t.Fatalf("pending approval %+v", v.PendingApproval)
		}
	})
	t.Run("an unambiguous prefix", func(t *testing.T) {
		code, body := call(t, srv, "GET", "/api/v1/tasks/task_pau", nil, true)
		if code != 200 || !strings.Contains(string(body), `"id":"task_paused"`) {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("an ambiguous prefix", func(t *testing.T) {
		code, body := call(t, srv, "GET", "/api/v1/tasks/task_", nil, true)
		if c, _ := errCode(t, body); code != http.StatusBadRequest || c != "ambiguous" {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		code, body := call(t, srv, "GET", "/api/v1/tasks/task_nope", nil, true)
		if c, _ := errCode(t, body); code != http.StatusNotFound || c != "not_found" {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("markup in a goal is never sent as markup", func(t *testing.T) {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/tasks/task_inbox", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var raw json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "<script>") || resp.Header.Get("Content-Type") != "application/json" ||
			resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%v %s", resp.Header, raw)
		}
		var v httpapi.TaskView
		if err := json.Unmarshal(raw, &v); err != nil || v.Goal != s.inbox.Goal {
			t.Fatalf("the goal did not survive: %q %v", v.Goal, err)
		}
	})
}

func TestTaskAbort(t *testing.T) {
	srv, k := server(t)
	s := seedTasks(t, k)
	abort := func(t *testing.T, id string) (int, httpapi.AbortView, []byte) {
		t.Helper()
		code, body := call(t, srv, "POST", "/api/v1/tasks/"+id+"/abort", nil, true)
		var v httpapi.AbortView
		if code == 200 {
			if err := json.Unmarshal(body, &v); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
		}
		return code, v, body
	}
	for _, tc := range []struct {
		name, id   string
		code       int
		status     task.Status
		aborts     int
		note, errc string
	}{
		{"a paused task ends at once", "task_paused", 200, task.Aborted, 1, "not running", ""},
		{"an aborted task cannot be aborted again", "task_paused", 409, task.Aborted, 1, "", "ended"},
		{"a running task whose runner died ends at once", "task_stale", 200, task.Aborted, 1, "not running", ""},
		{"a waiting task without a runner ends at once", "task_waiting", 200, task.Aborted, 1, "not running", ""},
		{"a live task stops after its step", "task_live", 200, task.Running, 1, "after its current step", ""},
		{"a second abort stops it at once", "task_live", 200, task.Running, 2, "stopped now", ""},
		{"a done task: conflict", "task_done", 409, task.Done, 0, "", "ended"},
		{"an unknown task", "task_nope", 404, "", 0, "", "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, v, body := abort(t, tc.id)
			if code != tc.code {
				t.Fatalf("%d, want %d: %s", code, tc.code, body)
			}
			if tc.errc != "" {
				if c, _ := errCode(t, body); c != tc.errc {
					t.Fatalf("code %q: %s", c, body)
				}
			} else if v.Status != tc.status || v.Aborts != tc.aborts || !strings.Contains(v.Note, tc.note) {
				t.Fatalf("after the abort: status %s aborts %d note %q", v.Status, v.Aborts, v.Note)
			}
			if tc.status == "" {
				return
			}
			stored, err := s.ts.Get(context.Background(), tc.id)
			if err != nil || stored.Status != tc.status || stored.Aborts != tc.aborts {
				t.Fatalf("stored: %+v %v", stored, err)
			}
		})
	}
	t.Run("409 names the status", func(t *testing.T) {
		_, _, body := abort(t, "task_done")
		if _, msg := errCode(t, body); !strings.Contains(msg, "task_done has ended (done)") {
			t.Fatalf("%s", body)
		}
	})
	t.Run("GET does not abort", func(t *testing.T) {
		code, _ := call(t, srv, "GET", "/api/v1/tasks/task_inbox/abort", nil, true)
		if code != http.StatusMethodNotAllowed {
			t.Fatalf("%d", code)
		}
		if got, _ := s.ts.Get(context.Background(), "task_inbox"); got.Status != task.Inbox {
			t.Fatalf("status %s", got.Status)
		}
	})
}

// A store that fails answers an error, never a list, a record or an abort.
func TestTaskStoreFailure(t *testing.T) {
	srv, k := server(t)
	seedTasks(t, k)
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ep := range []struct{ method, path string }{
		{"GET", "/api/v1/tasks"},
		{"GET", "/api/v1/tasks/task_paused"},
		{"POST", "/api/v1/tasks/task_paused/abort"},
	} {
		t.Run(ep.method+" "+ep.path, func(t *testing.T) {
			code, body := call(t, srv, ep.method, ep.path, nil, true)
			if code != http.StatusInternalServerError {
				t.Fatalf("%d %s", code, body)
			}
			if c, _ := errCode(t, body); c != "store" {
				t.Fatalf("%s", body)
			}
		})
	}
}

// parseCases are ParseTaskQuery's table, and the fuzzer's seeds.
var parseCases = []struct {
	raw      string
	statuses string
	limit    int
	bad      bool
}{
	{"", "", httpapi.DefaultTaskLimit, false},
	{"status=all", "", httpapi.DefaultTaskLimit, false},
	{"status=done", "done", httpapi.DefaultTaskLimit, false},
	{"status=running,waiting_person&limit=5", "running waiting_person", 5, false},
	{"status=done,done,,", "done", httpapi.DefaultTaskLimit, false},
	{"status=inbox&status=someday", "inbox someday", httpapi.DefaultTaskLimit, false},
	{"limit=1001", "", httpapi.MaxTaskLimit, false},
	{"limit=+7", "", 7, false},
	{"status=DONE", "", 0, true},
	{"status=finished", "", 0, true},
	{"limit=0", "", 0, true},
	{"limit=1e3", "", 0, true},
	{"limit=99999999999999999999", "", 0, true},
}

func TestParseTaskQuery(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.raw, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.raw)
			got, err := httpapi.ParseTaskQuery(q)
			if tc.bad {
				if !errors.Is(err, httpapi.ErrBadTaskQuery) {
					t.Fatalf("got %+v, %v; want ErrBadTaskQuery", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var st []string
			for _, s := range got.Statuses {
				st = append(st, string(s))
			}
			if strings.Join(st, " ") != tc.statuses || got.Limit != tc.limit {
				t.Fatalf("got %v limit %d", st, got.Limit)
			}
		})
	}
}

func FuzzParseTaskQuery(f *testing.F) {
	for _, tc := range parseCases {
		f.Add(tc.raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		got, err := httpapi.ParseTaskQuery(q)
		if err != nil {
			if !errors.Is(err, httpapi.ErrBadTaskQuery) {
				t.Fatalf("%q: unwrapped error %v", raw, err)
			}
			if len(err.Error()) > 600 {
				t.Fatalf("%q: an error of %d bytes echoes the input", raw, len(err.Error()))
			}
			return
		}
		if got.Limit < 1 || got.Limit > httpapi.MaxTaskLimit {
			t.Fatalf("%q: limit %d", raw, got.Limit)
		}
		seen := map[task.Status]bool{}
		for _, s := range got.Statuses {
			if !s.Valid() || seen[s] {
				t.Fatalf("%q: statuses %v", raw, got.Statuses)
			}
			seen[s] = true
		}
	})
}

// BenchmarkTaskList lists 200 tasks of 20 steps each, as the console's
// Tasks page does on every refresh.
func BenchmarkTaskList(b *testing.B) {
	k, err := kernel.Open(context.Background(), kernel.Config{Home: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	ts := task.NewStore(k.Store, k.Clock.Now)
	steps := make([]plugin.StepRecord, 20)
	for i := range steps {
		steps[i] = plugin.StepRecord{N: i + 1, Action: "tool_call", Tool: "bash", Outcome: plugin.OutcomeRan,
			Args: map[string]any{"command": "make test"}, Output: strings.Repeat("ok\n", 200)}
	}
	for i := 0; i < 200; i++ {
		if err := ts.Create(context.Background(), &task.Task{Goal: "task", Status: task.Done, Steps: steps}); err != nil {
			b.Fatal(err)
		}
	}
	h := httpapi.NewTasks(ts, k.Gate)
	req := httptest.NewRequest("GET", "/api/v1/tasks?limit=50", nil)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.List(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}
