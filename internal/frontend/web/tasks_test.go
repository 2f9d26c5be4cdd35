package web

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/plugin"
)

// seedTasks stores a paused task, a live running one, a done one and one
// whose goal is markup, oldest first.
func (e *env) seedTasks() *task.Store {
	e.t.Helper()
	ts := task.NewStore(e.k.Store, e.clk.Now)
	host, err := os.Hostname()
	if err != nil {
		e.t.Fatal(err)
	}
	for i, tk := range []*task.Task{
		{ID: "task_paused", Goal: "write the report", Status: task.Paused, Step: 10, MaxSteps: 10,
			Plan:  &plugin.Plan{Subtasks: []plugin.Subtask{{Title: "outline", Done: true}, {Title: "draft"}}},
			Steps: []plugin.StepRecord{{N: 1, Action: "tool_call", Tool: "bash", Outcome: plugin.OutcomeRan, Output: "ok"}}},
		{ID: "task_live", Goal: "build the site", Status: task.Running, Step: 2, MaxSteps: 20,
			Runner: &task.Runner{PID: os.Getpid(), Host: host, Heartbeat: e.clk.Now().UTC()}},
		{ID: "task_done", Goal: "say hello", Status: task.Done},
		{ID: "task_markup", Goal: `<script>alert("x")</script><img src=x onerror=alert(1)>`, Status: task.Inbox},
	} {
		tk.CreatedAt = e.clk.Now().Add(time.Duration(i) * time.Minute)
		if err := ts.Create(context.Background(), tk); err != nil {
			e.t.Fatal(err)
		}
	}
	return ts
}

func TestTasksNeedASession(t *testing.T) {
	e := newEnv(t)
	ts := e.seedTasks()
	b := e.newBrowser() // not signed in
	for _, ep := range []struct{ method, path string }{
		{"GET", "/ui/api/tasks"},
		{"GET", "/ui/api/tasks/task_paused"},
		{"POST", "/ui/api/tasks/task_paused/abort"},
	} {
		t.Run(ep.method+" "+ep.path, func(t *testing.T) {
			if st, body := b.send(ep.method, ep.path, nil, nil); st != http.StatusUnauthorized {
				t.Fatalf("%d %s", st, body)
			}
		})
	}
	if got, _ := ts.Get(context.Background(), "task_paused"); got.Status != task.Paused {
		t.Fatalf("status %s", got.Status)
	}
}

func TestTasksAPI(t *testing.T) {
	e := newEnv(t)
	e.seedTasks()
	b := e.newBrowser().login()
	t.Run("list", func(t *testing.T) {
		st, body := b.get("/ui/api/tasks")
		var list []httpapi.TaskSummary
		if err := json.Unmarshal(body, &list); err != nil || st != 200 {
			t.Fatalf("%d %s", st, body)
		}
		var got []string
		for _, s := range list {
			got = append(got, s.ID)
		}
		if strings.Join(got, " ") != "task_markup task_done task_live task_paused" || !list[2].Live || list[3].Live {
			t.Fatalf("%s", body)
		}
	})
	t.Run("filtered", func(t *testing.T) {
		st, body := b.get("/ui/api/tasks?status=done,failed,aborted")
		if st != 200 || !strings.Contains(string(body), "task_done") || strings.Contains(string(body), "task_paused") {
			t.Fatalf("%d %s", st, body)
		}
	})
	t.Run("bad status", func(t *testing.T) {
		st, body := b.get("/ui/api/tasks?status=finished")
		if st != http.StatusBadRequest || !strings.Contains(string(body), "finished") {
			t.Fatalf("%d %s", st, body)
		}
	})
	t.Run("detail", func(t *testing.T) {
		st, body := b.get("/ui/api/tasks/task_paused")
		if st != 200 || !strings.Contains(string(body), `"title":"outline","done":true`) || !strings.Contains(string(body), `"steps":[`) {
			t.Fatalf("%d %s", st, body)
		}
	})
	t.Run("markup is escaped in JSON", func(t *testing.T) {
		st, body := b.get("/ui/api/tasks/task_markup")
		if st != 200 || strings.Contains(string(body), "<script>") || strings.Contains(string(body), "<img") {
			t.Fatalf("%d %s", st, body)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		if st, body := b.get("/ui/api/tasks/task_nope"); st != http.StatusNotFound {
			t.Fatalf("%d %s", st, body)
		}
	})
}

func TestTaskAbortNeedsCSRFAndSameOrigin(t *testing.T) {
	e := newEnv(t)
	ts := e.seedTasks()
	b := e.newBrowser().login()
	good := b.csrf
	for _, tc := range []struct {
		name   string
		csrf   string
		hdr    map[string]string
		status int
	}{
		{"no token", "", nil, http.StatusForbidden},
		{"wrong token", "AAAA" + good[4:], nil, http.StatusForbidden},
		{"another session's token", e.con.csrfToken("someone-else"), nil, http.StatusForbidden},
		{"cross-site fetch", good, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"foreign origin", good, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.csrf = tc.csrf
			if st, body := b.send("POST", "/ui/api/tasks/task_live/abort", nil, tc.hdr); st != tc.status {
				t.Fatalf("%d %s", st, body)
			}
			if got, _ := ts.Get(context.Background(), "task_live"); got.Aborts != 0 || got.Status != task.Running {
				t.Fatalf("a refused request changed the task: %+v", got)
			}
		})
	}
	b.csrf = good
	for _, tc := range []struct {
		name, id string
		status   int
		want     string
	}{
		{"a live task stops after its step", "task_live", 200, `"note":"the task will stop after its current step`},
		{"a second abort stops it now", "task_live", 200, `"note":"the task is being stopped now"`},
		{"a paused task ends at once", "task_paused", 200, `"status":"aborted"`},
		{"an ended task", "task_done", http.StatusConflict, `"code":"ended"`},
		{"an unknown task", "task_nope", http.StatusNotFound, `"code":"not_found"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, body := b.send("POST", "/ui/api/tasks/"+tc.id+"/abort", nil, map[string]string{"Sec-Fetch-Site": "same-origin"})
			if st != tc.status || !strings.Contains(string(body), tc.want) {
				t.Fatalf("%d %s", st, body)
			}
		})
	}
	if got, _ := ts.Get(context.Background(), "task_live"); got.Aborts != 2 || got.Status != task.Running {
		t.Fatalf("live task after two aborts: %+v", got)
	}
}

// The console shows untrusted text (goals, outputs, people's words) only
// as text: its script never parses a string as HTML.
func TestConsoleScriptNeverParsesHTML(t *testing.T) {
	js, err := asset("assets/static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(string(js), sink) {
			t.Errorf("app.js uses %s", sink)
		}
	}
	page, err := asset("assets/app.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`href="#/tasks"`, `id="page-tasks"`, `id="tasks"`, `id="task-detail"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the console page lacks %s", want)
		}
	}
}
