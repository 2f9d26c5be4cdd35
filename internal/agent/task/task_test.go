package task_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
	"github.com/overseer-dev/overseer/plugin"
)

func open(t *testing.T, path string, now func() time.Time) (*task.Store, func()) {
	t.Helper()
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return task.NewStore(db, now), func() { db.Close() }
}

func TestLifecycleAndCheckpoint(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "overseer.db")
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ts, closeDB := open(t, path, clock)
	if err := ts.Create(ctx, &task.Task{}); err == nil {
		t.Fatal("a task without a goal was created")
	}
	if err := ts.Create(ctx, &task.Task{Goal: "x", Status: "sleeping"}); !errors.Is(err, task.ErrBadStatus) {
		t.Fatalf("bad status: %v", err)
	}
	a := &task.Task{Goal: "write the report", MaxSteps: 5, Budget: 5, Cwd: "/src"}
	if err := ts.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	if a.Status != task.Created || a.Session != a.ID {
		t.Fatalf("defaults: %+v", a)
	}
	now = now.Add(time.Minute)
	b := &task.Task{Goal: "someday: tidy up", Status: task.Someday}
	if err := ts.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	c := 0.7
	a.Status, a.Step = task.Running, 2
	a.Steps = []plugin.StepRecord{{N: 1, Tool: "file_read", Outcome: plugin.OutcomeRan, Confidence: &c}, {N: 2, Outcome: plugin.OutcomeAsked, Human: "是的，继续"}}
	a.Usage = plugin.Usage{InputTokens: 100, OutputTokens: 20, CostUSD: 0.01}
	a.Plan = &plugin.Plan{Subtasks: []plugin.Subtask{{Title: "read", Done: true}, {Title: "write"}}}
	if err := ts.Save(ctx, a); err != nil {
		t.Fatal(err)
	}
	closeDB()

	// Another process (a restart) sees the whole checkpoint.
	ts2, closeDB2 := open(t, path, clock)
	defer closeDB2()
	got, err := ts2.Get(ctx, a.ID[:9])
	if err != nil {
		t.Fatal(err)
	}
	if got.Step != 2 || len(got.Steps) != 2 || *got.Steps[0].Confidence != 0.7 || got.Steps[1].Human != "是的，继续" ||
		got.Usage.CostUSD != 0.01 || got.Plan.Current() != 1 || got.Cwd != "/src" {
		t.Fatalf("checkpoint not restored: %+v", got)
	}
	list, err := ts2.List(ctx, nil)
	if err != nil || len(list) != 2 || list[0].ID != b.ID {
		t.Fatalf("list newest first: %v %v", list, err)
	}
	list, _ = ts2.List(ctx, []task.Status{task.Someday, task.Inbox})
	if len(list) != 1 || list[0].ID != b.ID {
		t.Fatalf("status filter: %v", list)
	}
	if _, err := ts2.Get(ctx, "task_"); !errors.Is(err, task.ErrAmbiguous) {
		t.Fatalf("ambiguous prefix: %v", err)
	}
	if _, err := ts2.Get(ctx, "nope"); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
}

func TestAbort(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	ts, closeDB := open(t, filepath.Join(t.TempDir(), "o.db"), func() time.Time { return now })
	defer closeDB()

	idle := &task.Task{Goal: "paused one", Status: task.Paused}
	if err := ts.Create(ctx, idle); err != nil {
		t.Fatal(err)
	}
	got, err := ts.Abort(ctx, idle.ID, 5*time.Second)
	if err != nil || got.Status != task.Aborted {
		t.Fatalf("a task that is not running ends at once: %v %v", got, err)
	}
	if _, err := ts.Abort(ctx, idle.ID, 5*time.Second); !errors.Is(err, task.ErrEnded) {
		t.Fatalf("aborting an ended task: %v", err)
	}

	live := &task.Task{Goal: "running one", Status: task.Running, Runner: &task.Runner{PID: 1, Heartbeat: now}}
	if err := ts.Create(ctx, live); err != nil {
		t.Fatal(err)
	}
	got, _ = ts.Abort(ctx, live.ID, 5*time.Second)
	if got.Status != task.Running || got.Aborts != 1 {
		t.Fatalf("first abort of a running task: %+v", got)
	}
	// The runner's checkpoint must not lose the request.
	live.Step = 3
	if err := ts.Save(ctx, live); err != nil {
		t.Fatal(err)
	}
	if live.Aborts != 1 {
		t.Fatalf("checkpoint dropped the abort request: %d", live.Aborts)
	}
	got, _ = ts.Abort(ctx, live.ID, 5*time.Second)
	if got.Aborts != 2 {
		t.Fatalf("second abort: %+v", got)
	}
	// A runner that stopped sending heartbeats is dead: abort ends the task.
	now = now.Add(time.Minute)
	dead := &task.Task{Goal: "dead runner", Status: task.Running, Runner: &task.Runner{PID: 1, Heartbeat: now.Add(-time.Minute)}}
	if err := ts.Create(ctx, dead); err != nil {
		t.Fatal(err)
	}
	if got, _ := ts.Abort(ctx, dead.ID, 5*time.Second); got.Status != task.Aborted {
		t.Fatalf("dead runner: %+v", got)
	}
}

func TestLiveNeedsTheRunnerProcess(t *testing.T) {
	now := time.Now()
	ts, closeDB := open(t, filepath.Join(t.TempDir(), "o.db"), func() time.Time { return now })
	defer closeDB()
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name")
	}
	alive := &task.Task{Runner: &task.Runner{PID: os.Getpid(), Host: host, Heartbeat: now}}
	if !ts.Live(alive, 5*time.Second) {
		t.Fatal("this process counts as dead")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot run true:", err)
	}
	gone := &task.Task{Runner: &task.Runner{PID: cmd.Process.Pid, Host: host, Heartbeat: now}}
	if ts.Live(gone, 5*time.Second) {
		t.Fatal("a runner whose process ended counts as alive")
	}
	stale := &task.Task{Runner: &task.Runner{PID: os.Getpid(), Host: host, Heartbeat: now.Add(-time.Minute)}}
	if ts.Live(stale, 5*time.Second) {
		t.Fatal("a stale heartbeat counts as alive")
	}
}
