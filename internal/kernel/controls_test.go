package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/autorule"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/plugins/tool/builtin"
)

// controlsEnv is a kernel on a fake clock with the builtin tools.
type controlsEnv struct {
	*env
	clk *clock.Fake
}

func newControlsEnv(t *testing.T, at time.Time, policyYAML ...string) *controlsEnv {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{home: filepath.Join(root, "ovh"), proj: filepath.Join(root, "proj"), other: filepath.Join(root, "other")}
	for _, d := range []string{e.proj, e.other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if len(policyYAML) > 0 {
		if err := os.MkdirAll(e.home, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.home, kernel.PolicyName), []byte(policyYAML[0]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	clk := clock.NewFake(at)
	k, err := kernel.Open(context.Background(), kernel.Config{Home: e.home, Clock: clk, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	e.k = k
	if e.tools, err = builtin.New(builtin.Config{Home: filepath.Join(root, "userhome")}); err != nil {
		t.Fatal(err)
	}
	return &controlsEnv{env: e, clk: clk}
}

func (e *controlsEnv) call(t *testing.T, agent, tool string, args map[string]any) (*kernel.ToolRun, error) {
	t.Helper()
	a := &action.Action{Agent: agent, Session: "night", Tool: tool, Args: args, Cwd: e.proj}
	return e.k.RunTool(context.Background(), e.tools, a, kernel.RunOptions{})
}

func auditOf(t *testing.T, k *kernel.Kernel, types ...string) []store.AuditRecord {
	t.Helper()
	recs, err := k.Store.QueryAudit(context.Background(), store.AuditQuery{Types: types})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A burst of writes by one agent is stopped at the threshold, and the
// agent's earlier writes are rolled back, newest first, byte for byte; a
// shell command's change is never reversed; every step is audited.
func TestAnomalyStopsAndRollsBack(t *testing.T) {
	ctx := context.Background()
	e := newControlsEnv(t, time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC))
	rule, err := e.k.PutAnomalyRule(ctx, autorule.AnomalyRule{Name: "write burst", Tool: "file_write", ThresholdCount: 5,
		WindowSeconds: 60, Action: autorule.AnomalyStopRollback, Rollback: 10, Enabled: true}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	original := map[string][]byte{}
	for i := range 4 {
		p := filepath.Join(e.proj, fmt.Sprintf("f%d.txt", i))
		original[p] = []byte(fmt.Sprintf("original %d\x00\xff\n", i))
		e.write(t, p, string(original[p]))
	}
	// A shell command that writes a file (its content kept by the undo
	// store) is never reversed.
	shellFile := filepath.Join(e.proj, "shell.txt")
	if run, err := e.call(t, "nightly", "bash", map[string]any{"command": "echo shell > " + shellFile}); err != nil || !run.Ran {
		t.Fatalf("shell write: %v %+v", err, run)
	}
	for i := range 4 {
		p := filepath.Join(e.proj, fmt.Sprintf("f%d.txt", i))
		if _, err := e.call(t, "nightly", "file_read", map[string]any{"file_path": p}); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Second)
		run, err := e.call(t, "nightly", "file_write", map[string]any{"file_path": p, "content": fmt.Sprintf("clobbered %d", i)})
		if err != nil || !run.Ran || run.Result.IsError {
			t.Fatalf("write %d: %v %+v", i, err, run)
		}
		if got := content(t, p); got != fmt.Sprintf("clobbered %d", i) {
			t.Fatalf("write %d wrote %q", i, got)
		}
	}
	// Another agent's writes are its own: not counted, not rolled back.
	other := filepath.Join(e.proj, "other.txt")
	if run, err := e.call(t, "daytime", "file_write", map[string]any{"file_path": other, "content": "mine"}); err != nil || !run.Ran || run.Result.IsError {
		t.Fatalf("other agent: %v %+v", err, run)
	}
	// The fifth write is the anomaly.
	fifth := filepath.Join(e.proj, "f4.txt")
	run, err := e.call(t, "nightly", "file_write", map[string]any{"file_path": fifth, "content": "five"})
	if !errors.Is(err, kernel.ErrBlocked) || run.Ran || !run.Verdict.Stop {
		t.Fatalf("fifth write: err %v, ran %v, verdict %+v", err, run.Ran, run.Verdict)
	}
	if d := run.Verdict.Decider; d == nil || d.Source != action.SourceAnomaly || d.Name != firewall.AnomalyPrefix+rule.ID {
		t.Fatalf("decider %+v", run.Verdict.Decider)
	}
	if _, err := os.Stat(fifth); !os.IsNotExist(err) {
		t.Fatalf("the refused write ran: %v", err)
	}
	for p, want := range original {
		got, err := os.ReadFile(p)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s = %q, %v; want %q (rolled back)", p, got, err, want)
		}
	}
	if got := content(t, shellFile); got != "shell\n" {
		t.Errorf("the shell command's file was touched: %q", got)
	}
	if got := content(t, other); got != "mine" {
		t.Errorf("the other agent's file was rolled back: %q", got)
	}
	evs, err := e.k.AnomalyEvents(ctx)
	if err != nil || len(evs) != 1 {
		t.Fatalf("events %v %+v", err, evs)
	}
	ev := evs[0]
	if ev.Count != 5 || ev.Agent != "nightly" || !ev.Stopped || len(ev.Rollbacks) != 1 {
		t.Fatalf("event %+v", ev)
	}
	rb := ev.Rollbacks[0]
	if len(rb.Undone) != 4 || len(rb.Skipped) != 1 || rb.Skipped[0].Tool != "bash" {
		t.Fatalf("rollback %+v", rb)
	}
	// Newest first.
	for i, u := range rb.Undone {
		want := filepath.Join(e.proj, fmt.Sprintf("f%d.txt", 3-i))
		if len(u.Paths) != 1 || u.Paths[0] != want || u.Error != "" {
			t.Errorf("undone[%d] = %+v, want %s", i, u, want)
		}
	}
	if n := len(auditOf(t, e.k, kernel.TypeAnomalyDetected)); n != 1 {
		t.Errorf("%d anomaly_detected records", n)
	}
	rolled := auditOf(t, e.k, kernel.TypeRolledBack)
	if len(rolled) != 4 {
		t.Fatalf("%d rolled_back records", len(rolled))
	}
	var first kernel.RolledBack
	_ = json.Unmarshal(rolled[0].Data, &first)
	if first.EventID != ev.ID || first.Paths[0] != filepath.Join(e.proj, "f3.txt") {
		t.Errorf("first rolled_back record %+v", first)
	}
	// The agent is paused: its next call is refused, and opens no second
	// event.
	if !ev.Paused || ev.PauseError != "" {
		t.Fatalf("not paused: %+v", ev)
	}
	if paused, _ := e.k.AgentPaused("nightly"); !paused {
		t.Fatal("AgentPaused(nightly) = false")
	}
	if run, err := e.call(t, "nightly", "file_write", map[string]any{"file_path": fifth, "content": "six"}); !errors.Is(err, kernel.ErrBlocked) || run.Ran {
		t.Fatalf("a paused agent's call: %v", err)
	}
	if evs, _ := e.k.AnomalyEvents(ctx); len(evs) != 1 {
		t.Errorf("%d events after the next call", len(evs))
	}
	// A second rollback finds nothing left to undo.
	again, err := e.k.RollbackAnomaly(ctx, ev.ID, 0, "alice")
	if err != nil || len(again.Undone) != 0 {
		t.Errorf("second rollback: %v %+v", err, again)
	}
}

// A rollback never follows a directory replaced by a symbolic link since
// the content was kept: it refuses, and writes nothing there.
func TestRollbackRefusesPlantedSymlink(t *testing.T) {
	ctx := context.Background()
	e := newControlsEnv(t, time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC))
	if _, err := e.k.PutAnomalyRule(ctx, autorule.AnomalyRule{Name: "burst", Tool: "file_write", ThresholdCount: 2,
		WindowSeconds: 60, Action: autorule.AnomalyStopRollback, Enabled: true}, "alice"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.proj, "sub")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "a.txt")
	if run, err := e.call(t, "nightly", "file_write", map[string]any{"file_path": p, "content": "new"}); err != nil || !run.Ran || run.Result.IsError {
		t.Fatalf("write: %v %+v", err, run)
	}
	// The agent moves the directory away and plants a link to a place
	// outside the project.
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e.other, dir); err != nil {
		t.Fatal(err)
	}
	run, err := e.call(t, "nightly", "file_write", map[string]any{"file_path": filepath.Join(e.proj, "b.txt"), "content": "x"})
	if !errors.Is(err, kernel.ErrBlocked) {
		t.Fatalf("second write: %v %+v", err, run.Verdict)
	}
	evs, _ := e.k.AnomalyEvents(ctx)
	if len(evs) != 1 || len(evs[0].Rollbacks) != 1 || len(evs[0].Rollbacks[0].Undone) != 1 ||
		!strings.Contains(evs[0].Rollbacks[0].Undone[0].Error, "moved") {
		t.Fatalf("events %+v", evs)
	}
	if ents, _ := os.ReadDir(e.other); len(ents) != 0 {
		t.Fatalf("the rollback wrote through the planted link: %v", ents)
	}
}

// A time-based rule blocks shell at night by the kernel's clock (never the
// caller's time), and lets it run by day; the rule log counts firings.
func TestTimeBasedRuleWithClock(t *testing.T) {
	ctx := context.Background()
	e := newControlsEnv(t, time.Date(2026, 11, 25, 21, 59, 0, 0, time.UTC))
	rs, err := e.k.AddTemplate(ctx, "night-mode", "alice")
	if err != nil || len(rs) != 3 {
		t.Fatalf("template: %v %d", err, len(rs))
	}
	ls := map[string]any{"command": "ls " + e.proj}
	if run, err := e.call(t, "a", "bash", ls); err != nil || !run.Ran {
		t.Fatalf("21:59: %v %+v", err, run.Verdict)
	}
	e.clk.Advance(2 * time.Minute)
	// The caller's own time says noon: it is not what counts.
	a := &action.Action{Agent: "a", Session: "s", Tool: "bash", Args: ls, Cwd: e.proj, Time: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	run, err := e.k.RunTool(ctx, e.tools, a, kernel.RunOptions{})
	if !errors.Is(err, kernel.ErrBlocked) || run.Ran {
		t.Fatalf("22:01: %v %+v", err, run.Verdict)
	}
	if d := run.Verdict.Decider; d == nil || d.Source != action.SourceAutoRule {
		t.Fatalf("decider %+v", d)
	}
	e.clk.Advance(8 * time.Hour) // 06:01
	if run, err := e.call(t, "a", "bash", ls); err != nil || !run.Ran {
		t.Fatalf("06:01: %v %+v", err, run.Verdict)
	}
	log, err := e.k.RuleLog(ctx, rs[0].ID, 0)
	if err != nil || len(log) != 1 {
		t.Fatalf("rule log %v %d", err, len(log))
	}
	r, _ := e.k.AutoRule(ctx, rs[0].ID)
	if r.TimesTriggered != 1 || !r.LastTriggered.Equal(time.Date(2026, 11, 25, 22, 1, 0, 0, time.UTC)) {
		t.Errorf("times triggered %d, last %s", r.TimesTriggered, r.LastTriggered)
	}
	if n := len(auditOf(t, e.k, kernel.TypeAutoRuleChange)); n != 3 {
		t.Errorf("%d auto_rule_change records, want 3", n)
	}
}

// A loosening auto-rule lives in the user layer: it lowers a default, but
// never an admin rule nor a hard guard's floor.
func TestAutoApproveStaysAboveFloors(t *testing.T) {
	ctx := context.Background()
	e := newControlsEnv(t, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC), `version: 1
rules:
  - name: admin-docker-build
    tool: Bash
    when: 'args.command.startsWith("docker build")'
    level: approve
`)
	judge := func(cmd string) action.Verdict {
		t.Helper()
		a := &action.Action{Agent: "a", Session: "s", Tool: "Bash", Args: map[string]any{"command": cmd}, Cwd: e.proj}
		return e.k.Evaluate(ctx, a)
	}
	cmds := []string{"docker run alpine", "docker build .", "rm -rf ~", "curl -X POST http://127.0.0.1:7777/api/v1/approvals/x/approve"}
	before := map[string]action.Level{}
	for _, c := range cmds {
		before[c] = judge(c).Level
	}
	if before["docker run alpine"] != action.Confirm || before["docker build ."] != action.Approve {
		t.Fatalf("the test's premise changed: %v", before)
	}
	for _, c := range cmds {
		if _, err := e.k.PutAutoRule(ctx, autorule.Rule{Name: "ok " + c, Enabled: true, Priority: 1,
			Trigger: autorule.Trigger{Type: autorule.TriggerPattern, Tool: "shell", Text: c},
			Action:  autorule.Action{Type: autorule.ActAutoApprove}}, "alice"); err != nil {
			t.Fatal(err)
		}
	}
	if v := judge("docker run alpine"); v.Level != action.Auto || v.Decider.Source != action.SourceAutoRule {
		t.Errorf("docker run with auto_approve: %s by %+v", v.Level, v.Decider)
	}
	for _, c := range cmds[1:] {
		if v := judge(c); v.Level != before[c] || v.Level < action.Approve {
			t.Errorf("%s: %s with the rule, %s without: a floor was lowered", c, v.Level, before[c])
		}
	}
	// downgrade_risk lowers one step, and not below the admin rule.
	for _, r := range mustList(t, e.k) {
		if err := e.k.DeleteAutoRule(ctx, r.ID, "alice"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.k.PutAutoRule(ctx, autorule.Rule{Name: "less docker", Enabled: true, Priority: 1,
		Trigger: autorule.Trigger{Type: autorule.TriggerPattern, Tool: "shell", Text: "docker"},
		Action:  autorule.Action{Type: autorule.ActDowngradeRisk}}, "alice"); err != nil {
		t.Fatal(err)
	}
	if v := judge("docker run alpine"); v.Level != action.Notify {
		t.Errorf("docker run downgraded: %s, want notify", v.Level)
	}
	if v := judge("docker build ."); v.Level != action.Approve {
		t.Errorf("docker build downgraded below the admin rule: %s", v.Level)
	}
}

func mustList(t *testing.T, k *kernel.Kernel) []autorule.Rule {
	t.Helper()
	rs, err := k.AutoRules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// Rules changed by another process sharing the database are in force at
// this process's next submission; counts include the other's calls.
func TestControlsAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	e := newControlsEnv(t, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	k2, err := kernel.Open(ctx, kernel.Config{Home: e.home, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	if _, err := k2.PutAutoRule(ctx, autorule.Rule{Name: "three reads", Enabled: true, Priority: 1,
		Trigger: autorule.Trigger{Type: autorule.TriggerCount, Tool: "file_read", Count: 2, WindowMinutes: 5},
		Action:  autorule.Action{Type: autorule.ActBlockTool, DurationMinutes: 30}}, "alice"); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(e.proj, "r.txt")
	e.write(t, p, "r")
	read := func(k *kernel.Kernel) action.Level {
		sub, err := k.Submit(ctx, &action.Action{Agent: "a", Session: "s", Tool: "Read", Args: map[string]any{"file_path": p}, Cwd: e.proj})
		if err != nil {
			t.Fatal(err)
		}
		return sub.Verdict.Level
	}
	if l := read(e.k); l == action.Block {
		t.Fatal("first read blocked")
	}
	if l := read(k2); l == action.Block {
		t.Fatal("second read blocked")
	}
	if l := read(e.k); l != action.Block {
		t.Fatalf("third read (two in the other process) is %s", l)
	}
	// The hold lasts 30 minutes, in both processes.
	e.clk.Advance(10 * time.Minute)
	if l := read(k2); l != action.Block {
		t.Fatalf("within the hold: %s", l)
	}
	e.clk.Advance(25 * time.Minute)
	if l := read(e.k); l == action.Block {
		t.Fatalf("after the hold: %s", l)
	}
}

// The dry run of an auto-rule replays the recorded audit trail call by
// call: at each call's own time, with counts rebuilt from the calls and
// results before it; holds and pauses carry over; nothing changes.
func TestDryRunAutoRuleCallByCall(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 25, 21, 0, 0, 0, time.UTC)
	e := newControlsEnv(t, start)
	type step struct {
		after  time.Duration // since start
		agent  string
		cmd    string
		failed bool
	}
	steps := []step{
		{0, "a", "ls", false},                  // 21:00
		{90 * time.Minute, "a", "ls", true},    // 22:30
		{91 * time.Minute, "b", "ls", true},    // 22:31
		{92 * time.Minute, "a", "pwd", true},   // 22:32
		{93 * time.Minute, "a", "ls", false},   // 22:33
		{10 * time.Hour, "a", "ls -la", false}, // 07:00 next day
	}
	var ids []string
	for _, s := range steps {
		e.clk.Advance(start.Add(s.after).Sub(e.clk.Now()))
		sub, err := e.k.Submit(ctx, &action.Action{Agent: s.agent, Session: "s", Tool: "Bash", Args: map[string]any{"command": s.cmd}, Cwd: e.proj})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sub.Action.ID)
		if _, err := e.k.RecordResult(ctx, kernel.Result{ActionID: sub.Action.ID, Agent: s.agent, Session: "s", Tool: "Bash", Output: "out", IsError: s.failed}); err != nil {
			t.Fatal(err)
		}
	}
	before := len(auditOf(t, e.k))
	night := autorule.Rule{Name: "night", Trigger: autorule.Trigger{Type: autorule.TriggerTime, Tool: "shell", From: "22:00", To: "06:00"},
		Action: autorule.Action{Type: autorule.ActBlockTool}}
	rep, err := e.k.DryRunAutoRule(ctx, night, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range rep.Cases {
		got = append(got, fmt.Sprintf("%s:%s:%s", c.ActionID, c.With, c.Fired[0].Action))
	}
	want := []string{ids[1] + ":block:block_tool", ids[2] + ":block:block_tool", ids[3] + ":block:block_tool", ids[4] + ":block:block_tool"}
	if fmt.Sprint(got) != fmt.Sprint(want) || rep.Examined != 6 || rep.Blocked != 4 {
		t.Fatalf("night: examined %d blocked %d cases %v, want %v", rep.Examined, rep.Blocked, got, want)
	}
	// Two failures of a's last three results pause a; b is not a.
	pause := autorule.Rule{Name: "failing", Trigger: autorule.Trigger{Type: autorule.TriggerErrors, Percent: 60, MinCalls: 2, WindowMinutes: 30},
		Action: autorule.Action{Type: autorule.ActPauseAgent}}
	rep, err = e.k.DryRunAutoRule(ctx, pause, 1)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, c := range rep.Cases {
		got = append(got, fmt.Sprintf("%s:%s:fired=%d:paused=%v", c.ActionID, c.With, len(c.Fired), c.Paused))
	}
	// Within 30 minutes: at 22:32 a has one result (an error), under
	// min_calls; at 22:33 two, both errors: pause. The 07:00 call is
	// refused (paused); b's failure is b's.
	want = []string{ids[4] + ":block:fired=1:paused=false", ids[5] + ":block:fired=0:paused=true"}
	if fmt.Sprint(got) != fmt.Sprint(want) || rep.Paused != 1 {
		t.Fatalf("pause: %v, want %v", got, want)
	}
	if after := len(auditOf(t, e.k)); after != before {
		t.Fatalf("the dry run wrote %d audit records", after-before)
	}
}

// A cost_threshold rule reads what the agent's model calls cost.
func TestCostThresholdRule(t *testing.T) {
	ctx := context.Background()
	e := newControlsEnv(t, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	r, err := e.k.PutAutoRule(ctx, autorule.Rule{Name: "spend", Enabled: true, Priority: 1,
		Trigger: autorule.Trigger{Type: autorule.TriggerCost, USD: 1, WindowMinutes: 60},
		Action:  autorule.Action{Type: autorule.ActRequireApproval}}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	ls := &action.Action{Agent: "loop", Session: "s", Tool: "Bash", Args: map[string]any{"command": "ls"}, Cwd: e.proj}
	if v := e.k.Evaluate(ctx, ls); v.Level != action.Auto {
		t.Fatalf("before spending: %s", v.Level)
	}
	e.k.RecordUse(ctx, kernel.Use{Agent: "loop", Session: "s", Model: "m", CostUSD: 0.6})
	e.k.RecordUse(ctx, kernel.Use{Agent: "loop", Session: "s", Model: "m", CostUSD: 0.6})
	sub, err := e.k.Submit(ctx, ls)
	if err != nil {
		t.Fatal(err)
	}
	if sub.Verdict.Level != action.Approve || sub.Verdict.Decider.Name != firewall.AutoRulePrefix+r.ID {
		t.Fatalf("after $1.20: %s by %+v", sub.Verdict.Level, sub.Verdict.Decider)
	}
	e.clk.Advance(61 * time.Minute)
	if v := e.k.Evaluate(ctx, ls); v.Level != action.Auto {
		t.Fatalf("an hour later: %s", v.Level)
	}
}

// A cost_threshold rule counts what another process on the same database
// recorded (an `overseer run` task, a hooked agent's report to the
// daemon): the spend is the budget store's, read back after that
// process's flush. The dry run reads the same record, call by call.
func TestCostThresholdSeesOtherProcess(t *testing.T) {
	defer kernel.SetSpendReread(0)()
	ctx := context.Background()
	e := newControlsEnv(t, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	rule := autorule.Rule{Name: "spend", Enabled: true, Priority: 1,
		Trigger: autorule.Trigger{Type: autorule.TriggerCost, USD: 1, WindowMinutes: 60},
		Action:  autorule.Action{Type: autorule.ActRequireApproval}}
	r, err := e.k.PutAutoRule(ctx, rule, "alice")
	if err != nil {
		t.Fatal(err)
	}
	other, err := kernel.Open(ctx, kernel.Config{Home: e.k.Home, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ls := func() *action.Action {
		return &action.Action{Agent: "loop", Session: "s", Tool: "Bash", Args: map[string]any{"command": "ls"}, Cwd: e.proj}
	}
	before, err := e.k.Submit(ctx, ls())
	if err != nil || before.Verdict.Level != action.Auto {
		t.Fatalf("before spending: %+v %v", before, err)
	}
	e.clk.Advance(2 * time.Minute)
	other.RecordUse(ctx, kernel.Use{Agent: "loop", Session: "s", Model: "m", CostUSD: 0.7})
	other.RecordUse(ctx, kernel.Use{Agent: "elsewhere", Session: "x", Model: "m", CostUSD: 5})
	other.RecordUse(ctx, kernel.Use{Agent: "loop", Session: "s", Model: "m", CostUSD: 0.6})
	if err := other.FlushUsage(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.k.FlushUsage(ctx); err != nil { // reads the spend again
		t.Fatal(err)
	}
	e.clk.Advance(30 * time.Second)
	after, err := e.k.Submit(ctx, ls())
	if err != nil || after.Verdict.Level != action.Approve || after.Verdict.Decider.Name != firewall.AutoRulePrefix+r.ID {
		t.Fatalf("after $1.30 spent by another process: %+v %v", after.Verdict, err)
	}
	// The dry run of the same rule over the trail: the first call (before
	// the spend) does not fire, the second does.
	dry, err := e.k.DryRunAutoRule(ctx, rule, 1)
	if err != nil {
		t.Fatal(err)
	}
	var fired []string
	for _, c := range dry.Cases {
		if len(c.Fired) > 0 {
			fired = append(fired, c.ActionID)
		}
	}
	if fmt.Sprint(fired) != fmt.Sprint([]string{after.Action.ID}) {
		t.Fatalf("dry run fired on %v, want only %s (before: %s)", fired, after.Action.ID, before.Action.ID)
	}
	// An hour after the spend the window no longer holds it.
	e.clk.Advance(61 * time.Minute)
	if v := e.k.Evaluate(ctx, ls()); v.Level != action.Auto {
		t.Fatalf("an hour later: %s", v.Level)
	}
}

// A tightening auto-rule is never undone by a loosening one, whatever
// their priorities; patterns match text as written (< > & included).
func TestTighteningBeatsLoosening(t *testing.T) {
	ctx := context.Background()
	e := newControlsEnv(t, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	for _, r := range []autorule.Rule{
		{Name: "ask for redirects", Priority: 1, Trigger: autorule.Trigger{Type: autorule.TriggerPattern, Tool: "shell", Text: "> out.txt"},
			Action: autorule.Action{Type: autorule.ActRequireApproval}},
		{Name: "docker is fine", Priority: 2, Trigger: autorule.Trigger{Type: autorule.TriggerPattern, Tool: "shell", Text: "docker"},
			Action: autorule.Action{Type: autorule.ActAutoApprove}},
	} {
		r.Enabled = true
		if _, err := e.k.PutAutoRule(ctx, r, "alice"); err != nil {
			t.Fatal(err)
		}
	}
	judge := func(cmd string) action.Level {
		return e.k.Evaluate(ctx, &action.Action{Agent: "a", Session: "s", Tool: "Bash", Args: map[string]any{"command": cmd}, Cwd: e.proj}).Level
	}
	if l := judge("docker run alpine"); l != action.Auto {
		t.Errorf("docker run: %s, want auto", l)
	}
	if l := judge("docker run alpine > out.txt"); l != action.Approve {
		t.Errorf("docker run > out.txt: %s, want approve (the stricter rule holds)", l)
	}
}

// The baseline is the agent's own history, read from the audit trail: a
// burst that is usual for a busy agent is not an anomaly; the same burst
// by an agent that is usually quiet is.
func TestAnomalyBaselineFromHistory(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	e := newControlsEnv(t, start)
	ls := func(agent string) action.Verdict {
		t.Helper()
		sub, err := e.k.Submit(ctx, &action.Action{Agent: agent, Session: "s", Tool: "Bash", Args: map[string]any{"command": "ls"}, Cwd: e.proj})
		if err != nil {
			t.Fatal(err)
		}
		return sub.Verdict
	}
	// The busy agent's history: 10 calls an hour for 30 hours.
	for range 30 * 10 {
		ls("busy")
		e.clk.Advance(6 * time.Minute)
	}
	e.clk.Advance(2 * time.Hour)
	// The rule comes after the history it reads.
	if _, err := e.k.PutAnomalyRule(ctx, autorule.AnomalyRule{Name: "burst", Tool: "shell", ThresholdCount: 6, WindowSeconds: 3600,
		BaselineMultiplier: 2, BaselineDays: 2, Action: autorule.AnomalyNotify, Enabled: true}, "alice"); err != nil {
		t.Fatal(err)
	}
	anomalies := func(v action.Verdict) int {
		n := 0
		for _, r := range v.Reasons {
			if r.Source == action.SourceAnomaly {
				n++
			}
		}
		return n
	}
	fired := 0
	for range 7 {
		fired += anomalies(ls("busy"))
		e.clk.Advance(time.Minute)
	}
	if fired != 0 {
		t.Fatalf("7 calls in an hour is the busy agent's usual rate, yet %d anomalies", fired)
	}
	quiet := 0
	for range 7 {
		quiet += anomalies(ls("quiet"))
		e.clk.Advance(time.Minute)
	}
	if quiet != 1 {
		t.Fatalf("the quiet agent's burst: %d anomalies, want 1 (held after the first)", quiet)
	}
	evs, _ := e.k.AnomalyEvents(ctx)
	if len(evs) != 1 || evs[0].Agent != "quiet" || evs[0].Baseline != 0 || evs[0].Stopped {
		t.Fatalf("events %+v", evs)
	}
}

// A link the agent planted at a path since it was kept is replaced by the
// kept content, never followed: the link's target outside is untouched.
func TestRollbackReplacesPlantedLink(t *testing.T) {
	ctx := context.Background()
	e := newControlsEnv(t, time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC))
	if _, err := e.k.PutAnomalyRule(ctx, autorule.AnomalyRule{Name: "burst", Tool: "file_write", ThresholdCount: 2,
		WindowSeconds: 60, Action: autorule.AnomalyStopRollback, Enabled: true}, "alice"); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(e.proj, "a.txt")
	e.write(t, p, "kept\n")
	if _, err := e.call(t, "nightly", "file_read", map[string]any{"file_path": p}); err != nil {
		t.Fatal(err)
	}
	if run, err := e.call(t, "nightly", "file_write", map[string]any{"file_path": p, "content": "new"}); err != nil || !run.Ran || run.Result.IsError {
		t.Fatalf("write: %v %+v", err, run)
	}
	outside := filepath.Join(e.other, "target.txt")
	e.write(t, outside, "outside\n")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, p); err != nil {
		t.Fatal(err)
	}
	if _, err := e.call(t, "nightly", "file_write", map[string]any{"file_path": filepath.Join(e.proj, "b.txt"), "content": "x"}); !errors.Is(err, kernel.ErrBlocked) {
		t.Fatalf("second write: %v", err)
	}
	if got := content(t, outside); got != "outside\n" {
		t.Fatalf("the rollback wrote through the link: %q", got)
	}
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&os.ModeSymlink != 0 || content(t, p) != "kept\n" {
		t.Fatalf("%s: %v %v, want the kept regular file", p, fi.Mode(), err)
	}
}

// Rules that cannot be read put every call to a person (fail closed),
// until they can.
func TestUnreadableRulesFailClosed(t *testing.T) {
	ctx := context.Background()
	e := newControlsEnv(t, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	ls := &action.Action{Agent: "a", Session: "s", Tool: "Bash", Args: map[string]any{"command": "ls"}, Cwd: e.proj}
	if v := e.k.Evaluate(ctx, ls); v.Level != action.Auto {
		t.Fatalf("before: %s", v.Level)
	}
	if err := e.k.Raw().UpdateState(ctx, kernel.AutoRuleNS, "ar_bad", func([]byte) ([]byte, error) {
		return []byte(`{"id":"ar_bad","name":"x","enabled":true,"trigger":{"type":"nope"}}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	k2, err := kernel.Open(ctx, kernel.Config{Home: e.home, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	v := k2.Evaluate(ctx, &action.Action{Agent: "a", Session: "s", Tool: "Bash", Args: map[string]any{"command": "ls"}, Cwd: e.proj})
	if v.Level != action.Approve || v.Decider == nil || v.Decider.Source != action.SourceError {
		t.Fatalf("with an unreadable rule: %s by %+v", v.Level, v.Decider)
	}
	if err := k2.Raw().UpdateState(ctx, kernel.AutoRuleNS, "ar_bad", func([]byte) ([]byte, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if err := k2.DeleteAutoRule(ctx, "ar_missing", "alice"); err == nil {
		t.Fatal("deleting a missing rule succeeded")
	}
	// Any change reloads: a valid rule added makes the set readable again.
	if _, err := k2.PutAutoRule(ctx, autorule.Rule{Name: "ok", Enabled: true, Trigger: autorule.Trigger{Type: autorule.TriggerPattern, Text: "zzz"},
		Action: autorule.Action{Type: autorule.ActNotify}}, "alice"); err != nil {
		t.Fatal(err)
	}
	if v := k2.Evaluate(ctx, &action.Action{Agent: "a", Session: "s", Tool: "Bash", Args: map[string]any{"command": "ls"}, Cwd: e.proj}); v.Level != action.Auto {
		t.Fatalf("after the fix: %s by %+v", v.Level, v.Decider)
	}
}

// A dry run (Kernel.Evaluate: judged, not recorded) judges by the rules
// as they are, including those another process changed: its verdict is
// the one a submission would get.
func TestDryRunSeesOtherProcessRules(t *testing.T) {
	ctx := context.Background()
	e := newControlsEnv(t, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	shell := func() *action.Action {
		return &action.Action{Agent: "a", Session: "s", Tool: "Bash", Args: map[string]any{"command": "ls"}, Cwd: e.proj}
	}
	if v := e.k.Evaluate(ctx, shell()); v.Level == action.Block {
		t.Fatalf("blocked before any rule: %+v", v)
	}
	k2, err := kernel.Open(ctx, kernel.Config{Home: e.home, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	if _, err := k2.PutAutoRule(ctx, autorule.Rule{Name: "midday", Enabled: true, Priority: 1,
		Trigger: autorule.Trigger{Type: autorule.TriggerTime, Tool: "shell", From: "11:00", To: "13:00"},
		Action:  autorule.Action{Type: autorule.ActBlockTool}}, "alice"); err != nil {
		t.Fatal(err)
	}
	if v := e.k.Evaluate(ctx, shell()); v.Level != action.Block {
		t.Fatalf("the dry run missed the other process's rule: %s", v.Level)
	}
	sub, err := e.k.Submit(ctx, shell())
	if err != nil {
		t.Fatal(err)
	}
	if sub.Verdict.Level != action.Block {
		t.Fatalf("the submission missed the other process's rule: %s", sub.Verdict.Level)
	}
}
