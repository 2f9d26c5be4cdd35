package webe2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/overseertest"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
	"github.com/overseer-dev/overseer/plugin"
)

// markupGoal would run script and add elements if the console parsed it as
// HTML.
const markupGoal = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"><b class="x">bold</b> tidy notes`

// taskStore opens the running daemon's database from the test, as a second
// process sharing it (the daemon reads tasks from it on every request).
func taskStore(t *testing.T, d *overseertest.Daemon) *task.Store {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(d.Home, kernel.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return task.NewStore(db, nil)
}

// keepAlive refreshes a task's runner heartbeat, as a runner process does,
// until the test ends.
func keepAlive(t *testing.T, ts *task.Store, id string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // ends when the test's cleanup cancels ctx
		defer close(done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_, _ = ts.Update(ctx, id, func(tk *task.Task) error {
				if tk.Runner != nil {
					tk.Runner.Heartbeat = time.Now().UTC()
				}
				return nil
			})
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// TestBrowserTasks: tasks written into the daemon's database while it runs
// show on the console's Tasks page and in their detail (plan, steps,
// people's words); a goal made of markup shows as text; a waiting task leads
// to its approval in the queue; Abort ends a paused task at once and asks a
// live one to stop after its step, then at once; the pages fit a phone.
func TestBrowserTasks(t *testing.T) {
	needBrowser(t)
	d := overseertest.StartDaemon(t, newHome(t, map[string]string{}))
	ts := taskStore(t, d)
	ctx := context.Background()

	st, body := d.Do(t, "POST", "/api/v1/actions", map[string]any{"tool": "deploy", "agent": "overseer",
		"session": "task_waiting", "args": map[string]any{"target": "prod"}}, false)
	var o outcome
	if err := json.Unmarshal(body, &o); err != nil || st != 200 || o.Approval == nil {
		t.Fatalf("%d %s", st, body)
	}
	apr := o.Approval.ID

	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("line of output\n", 100)
	base := time.Now().Add(-time.Hour).UTC()
	for i, tk := range []*task.Task{
		{ID: "task_done", Goal: "say hello", Status: task.Done, Step: 1, MaxSteps: 10, Result: "said hello"},
		{ID: "task_paused", Goal: "write the quarterly report", Status: task.Paused, Step: 3, MaxSteps: 3,
			Usage: plugin.Usage{InputTokens: 1500, OutputTokens: 250, CostUSD: 0.0042}, Model: "openai:gpt-test",
			Plan: &plugin.Plan{Subtasks: []plugin.Subtask{{Title: "gather the numbers", Done: true}, {Title: "draft the text"}}},
			Steps: []plugin.StepRecord{
				{N: 1, Action: "tool_call", Tool: "bash", Args: map[string]any{"command": "ls data"}, Outcome: plugin.OutcomeRan, Output: long},
				{N: 2, Action: "tool_call", Tool: "bash", Args: map[string]any{"command": "rm -rf data"}, Outcome: plugin.OutcomeBlocked,
					Note: "blocked by guard shell.rm_recursive"},
				{N: 3, Action: "ask_human", Tool: "overseer.ask_human", Outcome: plugin.OutcomeAsked, Human: "use the <b>2025</b> numbers"},
			},
			HumanDecisions: []string{"step 3: use the <b>2025</b> numbers"}, Result: "stopped at the step limit"},
		{ID: "task_waiting", Goal: "deploy the site", Status: task.WaitingPerson, Step: 2, MaxSteps: 20, Pending: apr},
		{ID: "task_live", Goal: "build the site", Status: task.Running, Step: 5, MaxSteps: 20,
			Runner: &task.Runner{PID: os.Getpid(), Host: host, Heartbeat: time.Now().UTC()}},
		{ID: "task_markup", Goal: markupGoal, Status: task.Inbox, MaxSteps: 50},
	} {
		tk.CreatedAt = base.Add(time.Duration(i) * time.Minute)
		if err := ts.Create(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	keepAlive(t, ts, "task_live")

	dr := startDriver(t, d)

	t.Run("list", func(t *testing.T) {
		dr.send("TASKLIST 5")
		var got struct {
			Rows []struct {
				ID, Status, Goal, Meta, Waits string
				Live                          bool
			}
			Injected bool
		}
		if err := json.Unmarshal([]byte(dr.expect("LIST")), &got); err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, r := range got.Rows {
			order = append(order, r.ID)
		}
		if strings.Join(order, " ") != "task_markup task_live task_waiting task_paused task_done" {
			t.Fatalf("order %v", order)
		}
		if got.Injected || got.Rows[0].Goal != markupGoal {
			t.Fatalf("the markup goal was not shown as text: injected=%v goal=%q", got.Injected, got.Rows[0].Goal)
		}
		if r := got.Rows[3]; r.Status != "paused" || !strings.Contains(r.Meta, "step 3/3") ||
			!strings.Contains(r.Meta, "1,750 tokens") || !strings.Contains(r.Meta, "$0.0042") || !strings.Contains(r.Meta, "plan 1/2") {
			t.Fatalf("paused row %+v", r)
		}
		if !got.Rows[1].Live || got.Rows[3].Live || got.Rows[2].Waits != "#/queue/"+apr || got.Rows[2].Status != "waiting person" {
			t.Fatalf("rows %+v", got.Rows)
		}
	})

	t.Run("detail", func(t *testing.T) {
		dr.send("TASK task_paused")
		var got struct {
			Status, Goal, Abort string
			Facts               map[string]string
			Plan                []struct {
				Title   string
				Checked bool
			}
			Decisions []string
			Steps     []struct {
				N                          int
				Tool, Outcome, Human, Note string
				Output                     string
				Full                       bool
			}
			Injected bool
		}
		if err := json.Unmarshal([]byte(dr.expect("TASK")), &got); err != nil {
			t.Fatal(err)
		}
		if got.Status != "paused" || got.Goal != "write the quarterly report" || got.Abort != "Abort task" ||
			got.Facts["progress"] != "step 3/3" || got.Facts["model"] != "openai:gpt-test" {
			t.Fatalf("detail %+v", got)
		}
		if len(got.Plan) != 2 || !got.Plan[0].Checked || got.Plan[1].Checked || got.Plan[1].Title != "draft the text" {
			t.Fatalf("plan %+v", got.Plan)
		}
		if len(got.Decisions) != 1 || got.Decisions[0] != "step 3: use the <b>2025</b> numbers" || got.Injected {
			t.Fatalf("decisions %q injected=%v", got.Decisions, got.Injected)
		}
		if len(got.Steps) != 3 { // newest first
			t.Fatalf("steps %+v", got.Steps)
		}
		s3, s2, s1 := got.Steps[0], got.Steps[1], got.Steps[2]
		if s3.N != 3 || s3.Outcome != "asked" || s3.Human != "use the <b>2025</b> numbers" {
			t.Errorf("step 3 %+v", s3)
		}
		if s2.Outcome != "blocked" || s2.Note != "blocked by guard shell.rm_recursive" {
			t.Errorf("step 2 %+v", s2)
		}
		if s1.Tool != "bash" || s1.Outcome != "ran" || len(s1.Output) > 410 || !s1.Full {
			t.Errorf("step 1: output of %d characters shown, full output offered: %v", len(s1.Output), s1.Full)
		}
	})

	t.Run("a waiting task leads to its approval", func(t *testing.T) {
		dr.send("TASK task_waiting")
		var got struct{ Waiting, Approval string }
		if err := json.Unmarshal([]byte(dr.expect("TASK")), &got); err != nil {
			t.Fatal(err)
		}
		if got.Approval != "#/queue/"+apr || !strings.Contains(got.Waiting, "deploy") {
			t.Fatalf("%+v", got)
		}
		dr.send("JUMP task_waiting " + apr)
		if id := dr.expect("JUMPED"); id != apr {
			t.Fatalf("selected %s", id)
		}
	})

	type aborted struct{ Before, Title, Body, After, Toast string }
	abort := func(t *testing.T, id, status, aborts string) aborted {
		t.Helper()
		dr.send("ABORT " + id + " " + status + " " + aborts)
		var got aborted
		if err := json.Unmarshal([]byte(dr.expect("ABORTED")), &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	stored := func(t *testing.T, id string) *task.Task {
		t.Helper()
		tk, err := ts.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}

	t.Run("abort a paused task", func(t *testing.T) {
		got := abort(t, "task_paused", "aborted", "1")
		if !strings.Contains(got.Body, "ends as aborted now") || got.After != "" || !strings.Contains(got.Toast, "aborted") {
			t.Fatalf("%+v", got)
		}
		if tk := stored(t, "task_paused"); tk.Status != task.Aborted || tk.Aborts != 1 {
			t.Fatalf("stored %s %d", tk.Status, tk.Aborts)
		}
	})

	t.Run("abort a live task twice", func(t *testing.T) {
		got := abort(t, "task_live", "running", "1")
		if got.Before != "Abort task" || !strings.Contains(got.Body, "stops after its current step") || got.After != "Stop now" {
			t.Fatalf("first press %+v", got)
		}
		got = abort(t, "task_live", "running", "2")
		if got.Title != "Stop this task now?" || !strings.Contains(got.Body, "stops the task at once") ||
			!strings.Contains(got.Toast, "stopped now") {
			t.Fatalf("second press %+v", got)
		}
		if tk := stored(t, "task_live"); tk.Status != task.Running || tk.Aborts != 2 {
			t.Fatalf("stored %s %d", tk.Status, tk.Aborts)
		}
	})

	t.Run("phone", func(t *testing.T) {
		dir := ""
		if *screenshots {
			dir = shotDir(t)
		}
		dr.send(strings.TrimSpace("PHONE task_paused " + dir))
		var got struct {
			List, Detail int
			Button       bool
		}
		if err := json.Unmarshal([]byte(dr.expect("PHONE")), &got); err != nil {
			t.Fatal(err)
		}
		if got.List > 0 || got.Detail > 0 || !got.Button {
			t.Fatalf("wider than a phone: %+v", got)
		}
	})
}
