package run

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/llmtest"
	"github.com/overseer-dev/overseer/internal/overseertest"
)

// auditRecords reads the audit log through `overseer audit export` and
// returns its records of the given types, in order.
func (e *env) auditRecords(types ...string) []map[string]any {
	e.t.Helper()
	r := e.run("audit", "export")
	if r.Code != 0 {
		e.t.Fatalf("audit export: %s%s", r.Stdout, r.Stderr)
	}
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		for _, t := range types {
			if rec["type"] == t {
				out = append(out, rec)
			}
		}
	}
	return out
}

// TestAnomalyStopsTheLoopAndRollsBack: the own loop with a scripted model
// (Anthropic wire format) reads and rewrites four files, then a fifth
// write crosses an anomaly rule (5 writes in 2 minutes): the call is
// refused, the agent paused, the task paused, and the four writes rolled
// back newest first, byte for byte; the audit log names every step.
func TestAnomalyStopsTheLoopAndRollsBack(t *testing.T) {
	overseertest.Binary(t) // built before the first command's deadline starts
	e := newEnv(t)
	if r := e.run("anomaly", "add", "--who", "alice", "--json",
		`{"name":"write burst","tool_name":"file_write","threshold_count":5,"window_seconds":120,"action":"stop_and_rollback","rollback":10}`); r.Code != 0 {
		t.Fatalf("anomaly add: %s%s", r.Stdout, r.Stderr)
	}
	original := map[string]string{}
	var script []llmtest.Reply
	for i := range 4 {
		name := fmt.Sprintf("f%d.txt", i)
		original[name] = fmt.Sprintf("original %d\x00\xff\xfe\nsecond line\n", i)
		if err := os.WriteFile(filepath.Join(e.work, name), []byte(original[name]), 0o640); err != nil {
			t.Fatal(err)
		}
		script = append(script,
			decision("", toolCall("file_read", map[string]any{"file_path": name}, "read "+name)),
			decision("", toolCall("file_write", map[string]any{"file_path": name, "content": "clobbered\n"}, "rewrite "+name)))
	}
	script = append(script, decision("", toolCall("file_write", map[string]any{"file_path": "f4.txt", "content": "five\n"}, "write a fifth")))
	srv := llmtest.NewAnthropic(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		if n < len(script) {
			return script[n]
		}
		return llmtest.Fail("request %d after the anomaly: the task should have paused", n)
	}))
	p := e.start("run", "--no-plan", "--model", "anthropic:test-model@"+srv.URL, "Rewrite the four files")
	p.wait(t, 60*time.Second)
	out := p.out.String()
	if !strings.Contains(out, "the agent is paused") {
		t.Fatalf("the loop did not pause its task:\n%s", out)
	}
	for name, want := range original {
		got, err := os.ReadFile(filepath.Join(e.work, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want the original %q", name, got, err, want)
		}
		if fi, err := os.Stat(filepath.Join(e.work, name)); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("%s mode %v, %v; want 0640", name, fi.Mode(), err)
		}
	}
	if _, err := os.Stat(filepath.Join(e.work, "f4.txt")); !os.IsNotExist(err) {
		t.Errorf("the refused fifth write ran: %v", err)
	}
	tasks := e.tasks()
	if len(tasks) != 1 || tasks[0].Status != "paused" {
		t.Fatalf("tasks %+v", tasks)
	}
	// The anomaly and its rollback, as the CLI shows them.
	r := e.run("anomaly", "events")
	var evs []struct {
		ID        string `json:"id"`
		Agent     string `json:"agent"`
		Count     int    `json:"count"`
		Paused    bool   `json:"paused"`
		Rollbacks []struct {
			Undone []struct {
				ActionID string   `json:"action_id"`
				Paths    []string `json:"paths"`
			} `json:"undone"`
		} `json:"rollbacks"`
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &evs) != nil || len(evs) != 1 {
		t.Fatalf("anomaly events: %s%s", r.Stdout, r.Stderr)
	}
	ev := evs[0]
	if ev.Count != 5 || !ev.Paused || len(ev.Rollbacks) != 1 || len(ev.Rollbacks[0].Undone) != 4 {
		t.Fatalf("event %+v", ev)
	}
	for i, u := range ev.Rollbacks[0].Undone {
		if want := filepath.Join(e.work, fmt.Sprintf("f%d.txt", 3-i)); len(u.Paths) != 1 || u.Paths[0] != want {
			t.Errorf("undone[%d] = %v, want %s (newest first)", i, u.Paths, want)
		}
	}
	// The audit log names every step: the rule, the refused call, the
	// anomaly, the pause, each rollback.
	recs := e.auditRecords("anomaly_rule_change", "anomaly_detected", "agent_paused", "rolled_back")
	var types []string
	for _, rec := range recs {
		types = append(types, rec["type"].(string))
	}
	want := "anomaly_rule_change anomaly_detected agent_paused rolled_back rolled_back rolled_back rolled_back"
	if strings.Join(types, " ") != want {
		t.Fatalf("audit %v, want %s", types, want)
	}
	e.verifyAudit()
}

// TestAutoRulesThroughTheDaemon: a time-based rule (its window around the
// daemon's own clock) blocks the own loop's shell call and a window that
// excludes now does not fire; then the dry run of a pattern rule over the
// recorded audit trail, through the HTTP API, is checked call by call.
func TestAutoRulesThroughTheDaemon(t *testing.T) {
	overseertest.Binary(t)
	e := newEnv(t)
	d := overseertest.StartDaemon(t, e.home)
	now := time.Now().UTC()
	in := map[string]any{"name": "now", "trigger": map[string]any{"type": "time_based", "tool": "shell",
		"from": now.Add(-time.Hour).Format("15:04"), "to": now.Add(time.Hour).Format("15:04")}, "action": map[string]any{"type": "block_tool"}}
	out := map[string]any{"name": "not now", "trigger": map[string]any{"type": "time_based", "tool": "shell",
		"from": now.Add(2 * time.Hour).Format("15:04"), "to": now.Add(4 * time.Hour).Format("15:04")}, "action": map[string]any{"type": "require_approval"}}
	var ids []string
	for _, rule := range []map[string]any{in, out} {
		code, body := d.Do(t, "POST", "/api/v1/auto-rules", rule, true)
		var got struct {
			ID string `json:"id"`
		}
		if code != 201 || json.Unmarshal(body, &got) != nil || got.ID == "" {
			t.Fatalf("POST /api/v1/auto-rules: %d %s", code, body)
		}
		ids = append(ids, got.ID)
	}
	// Without the token: refused.
	if code, _ := d.Do(t, "POST", "/api/v1/auto-rules", in, false); code != 401 {
		t.Fatalf("POST without the token: %d", code)
	}
	// Calls recorded through the CLI (another process sharing the
	// database): the shell call is blocked by the time rule.
	calls := []string{"echo alpha", "echo prod-beta", "echo gamma", "echo PROD again"}
	var actionIDs []string
	for _, c := range calls {
		r := e.run("tool", "run", "bash", "--json", "--args", fmt.Sprintf(`{"command":%q}`, c))
		var run struct {
			Action struct {
				ID string `json:"id"`
			} `json:"action"`
			Verdict struct {
				Level   string `json:"level"`
				Decider struct {
					Name string `json:"name"`
				} `json:"decider"`
			} `json:"verdict"`
			Ran bool `json:"ran"`
		}
		if json.Unmarshal([]byte(r.Stdout), &run) != nil || run.Ran || run.Verdict.Level != "block" || run.Verdict.Decider.Name != "auto-rule:"+ids[0] {
			t.Fatalf("%s: exit %d, %s%s", c, r.Code, r.Stdout, r.Stderr)
		}
		actionIDs = append(actionIDs, run.Action.ID)
	}
	// The rule log names the time rule on every call, never the other.
	code, body := d.Do(t, "GET", "/api/v1/auto-rules/log", nil, true)
	var log []struct {
		ActionID string `json:"action_id"`
		Fired    struct {
			RuleID string `json:"rule_id"`
		} `json:"fired"`
	}
	if code != 200 || json.Unmarshal(body, &log) != nil || len(log) != 4 {
		t.Fatalf("rule log: %d %s", code, body)
	}
	for i, l := range log {
		if l.Fired.RuleID != ids[0] || l.ActionID != actionIDs[3-i] {
			t.Errorf("log[%d] = %+v", i, l)
		}
	}
	// The dry run of a pattern rule over that trail, call by call.
	code, body = d.Do(t, "POST", "/api/v1/auto-rules/test", map[string]any{"days": 1, "rule": map[string]any{
		"name": "no prod", "trigger": map[string]any{"type": "pattern_match", "tool": "shell", "text": "prod"},
		"action": map[string]any{"type": "require_approval", "level": "confirm"}}}, true)
	var rep struct {
		Examined int `json:"examined"`
		Fired    int `json:"fired"`
		Cases    []struct {
			ActionID string `json:"action_id"`
			Then     string `json:"then"`
			Without  string `json:"without"`
			With     string `json:"with"`
			Fired    []struct {
				Action string `json:"action"`
			} `json:"fired"`
		} `json:"cases"`
	}
	if code != 200 || json.Unmarshal(body, &rep) != nil {
		t.Fatalf("dry run: %d %s", code, body)
	}
	if rep.Examined != 4 || rep.Fired != 2 || len(rep.Cases) != 2 {
		t.Fatalf("dry run: %s", body)
	}
	for i, want := range []string{actionIDs[1], actionIDs[3]} {
		c := rep.Cases[i]
		// Then: blocked by the time rule; without the tested rule (and
		// without the saved ones, which a dry run does not apply) echo
		// runs; with it, a person is asked.
		if c.ActionID != want || c.Then != "block" || c.With != "confirm" || len(c.Fired) != 1 || c.Fired[0].Action != "require_approval" {
			t.Errorf("case %d = %+v, want %s", i, c, want)
		}
	}
	// Removing the rules is audited, and shell runs again.
	for _, id := range ids {
		if code, body := d.Do(t, "DELETE", "/api/v1/auto-rules/"+id, nil, true); code != 200 {
			t.Fatalf("DELETE: %d %s", code, body)
		}
	}
	if r := e.run("tool", "run", "bash", "--args", `{"command":"echo again"}`); r.Code != 0 {
		t.Fatalf("after removing the rules: exit %d %s%s", r.Code, r.Stdout, r.Stderr)
	}
	if n := len(e.auditRecords("auto_rule_change")); n != 4 {
		t.Errorf("%d auto_rule_change records, want 4", n)
	}
}

// TestCostRuleSeesRunSpend: a cost_threshold auto-rule of the daemon counts
// what an `overseer run` task (another process on the same database) spent:
// once the task's two model calls ($1 each by the budget's price table) are
// written behind and the daemon has read the spend again, the daemon blocks
// the own loop's shell calls with the rule's reason; before the task it
// does not.
func TestCostRuleSeesRunSpend(t *testing.T) {
	overseertest.Binary(t)
	e := newEnv(t)
	e.initDB()
	e.mustRun("budget", "prices", "--set", `{"big": {"input_per_mtok": 1000}}`)
	d := overseertest.StartDaemon(t, e.home)
	rule := map[string]any{"name": "big spender", "trigger": map[string]any{"type": "cost_threshold", "usd": 1.5, "window_minutes": 60, "tool": "shell"},
		"action": map[string]any{"type": "block_tool"}}
	code, body := d.Do(t, "POST", "/api/v1/auto-rules", rule, true)
	var saved struct {
		ID string `json:"id"`
	}
	if code != 201 || json.Unmarshal(body, &saved) != nil || saved.ID == "" {
		t.Fatalf("POST /api/v1/auto-rules: %d %s", code, body)
	}
	shell := map[string]any{"tool": "bash", "kind": "shell", "agent": "overseer", "session": "probe", "args": map[string]any{"command": "echo probe"}}
	judge := func() (string, string) {
		t.Helper()
		code, body := d.Do(t, "POST", "/api/v1/evaluate?dry_run=1", shell, false)
		var v struct {
			Level  string `json:"level"`
			Reason string `json:"reason"`
		}
		if code != 200 || json.Unmarshal(body, &v) != nil {
			t.Fatalf("evaluate: %d %s", code, body)
		}
		return v.Level, v.Reason
	}
	if lv, why := judge(); lv == "block" {
		t.Fatalf("blocked before any spend: %s", why)
	}
	big := llmtest.NewOpenAI(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		if n < 2 {
			return costly(decision("", toolCall("file_read", map[string]any{"file_path": "notes.txt", "offset": n + 1}, "read the notes")))
		}
		return decision("", done("Read the notes"))
	}))
	cfg := filepath.Join(t.TempDir(), "llm.json")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`{"default": {"plugin": "llm.openai", "config": {"model": "big", "base_url": %q}}}`, big.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The task's process writes its spend behind every second; the daemon
	// reads the stored spend again every 10 s or so. (The task then waits
	// for a person to confirm it is done; it is ended with the test.)
	p := e.start("run", "--no-plan", "--llm-config", cfg, "Read the notes")
	deadline := time.Now().Add(45 * time.Second)
	for {
		lv, why := judge()
		if lv == "block" {
			if !strings.Contains(why, "big spender") && !strings.Contains(why, "$2.00") {
				t.Fatalf("blocked, but not for the spend: %s", why)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's rule never saw the task's spend (%s: %s)\n%s\n%s", lv, why, d.Log(), p.out.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Another agent spent nothing: not blocked.
	shell["agent"] = "someone-else"
	if lv, why := judge(); lv == "block" {
		t.Fatalf("another agent was blocked: %s", why)
	}
}

// TestNightModeWithInjectedClock: the "night mode" template (22:00–06:00
// UTC: shell blocked) in a daemon built for tests with an injected clock
// (tag overseer_testclock, OVERSEER_TEST_CLOCK): at 23:00 a shell call is
// blocked by the rule and the rule log names it, a file read is not; the
// same home's daemon started at 09:00 the next morning lets the shell
// call through. The release binary does not carry the variable's name and
// a daemon built from it judges by the real clock whatever it says.
func TestNightModeWithInjectedClock(t *testing.T) {
	testBin := overseertest.TestClockBinary(t)
	release := overseertest.Binary(t)
	e := newEnv(t)
	const clockEnv = "OVERSEER_TEST_CLOCK"
	shell := map[string]any{"tool": "bash", "kind": "shell", "agent": "nightly", "session": "n1", "args": map[string]any{"command": "echo tidy-up"}}
	read := map[string]any{"tool": "file_read", "kind": "file_read", "agent": "nightly", "session": "n1", "args": map[string]any{"file_path": filepath.Join(e.work, "notes.txt")}}
	type verdict struct {
		Level   string `json:"level"`
		Reason  string `json:"reason"`
		Verdict struct {
			Decider struct {
				Name string `json:"name"`
			} `json:"decider"`
		} `json:"verdict"`
	}
	judge := func(d *overseertest.Daemon, call map[string]any, query string) verdict {
		t.Helper()
		code, body := d.Do(t, "POST", "/api/v1/evaluate"+query, call, false)
		var v verdict
		if code != 200 || json.Unmarshal(body, &v) != nil {
			t.Fatalf("evaluate: %d %s", code, body)
		}
		return v
	}

	night := overseertest.StartDaemonWith(t, testBin, []string{clockEnv + "=2031-03-04T23:00:00Z"}, e.home)
	if !strings.Contains(night.Log(), "TEST BUILD") {
		t.Fatalf("the test build does not say its clock is injected:\n%s", night.Log())
	}
	code, body := night.Do(t, "POST", "/api/v1/auto-rules/templates/night-mode", map[string]any{}, true)
	var rules []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	if code != 201 || json.Unmarshal(body, &rules) != nil || len(rules) == 0 {
		t.Fatalf("night-mode template: %d %s", code, body)
	}
	noShell := ""
	for _, r := range rules {
		if r.Name == "night mode: no shell" {
			noShell = r.ID
		}
	}
	v := judge(night, shell, "")
	if v.Level != "block" || v.Verdict.Decider.Name != "auto-rule:"+noShell {
		t.Fatalf("at 23:00 the shell call was not blocked by %s: %+v", noShell, v)
	}
	if v := judge(night, read, "?dry_run=1"); v.Level == "block" {
		t.Fatalf("at 23:00 a file read was blocked: %+v", v)
	}
	code, body = night.Do(t, "GET", "/api/v1/auto-rules/log", nil, true)
	var log []struct {
		Time  time.Time `json:"time"`
		Fired struct {
			RuleID string `json:"rule_id"`
		} `json:"fired"`
	}
	if code != 200 || json.Unmarshal(body, &log) != nil || len(log) != 1 || log[0].Fired.RuleID != noShell ||
		log[0].Time.Year() != 2031 || log[0].Time.UTC().Hour() != 23 {
		t.Fatalf("rule log at 23:00: %d %s", code, body)
	}
	night.Kill()

	morning := overseertest.StartDaemonWith(t, testBin, []string{clockEnv + "=2031-03-05T09:00:00Z"}, e.home)
	if v := judge(morning, shell, "?dry_run=1"); v.Level == "block" || strings.HasPrefix(v.Verdict.Decider.Name, "auto-rule:") {
		t.Fatalf("at 09:00 the shell call was judged by the night rule: %+v", v)
	}
	morning.Kill()

	// The release binary: no trace of the variable, and the real clock.
	b, err := os.ReadFile(release)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), clockEnv) {
		t.Fatalf("the release binary carries %s", clockEnv)
	}
	real := overseertest.StartDaemonWith(t, release, []string{clockEnv + "=2031-03-04T23:00:00Z"}, e.home)
	h := time.Now().UTC().Hour()
	isNight := h >= 22 || h < 6
	if v := judge(real, shell, "?dry_run=1"); (v.Level == "block") != isNight || strings.Contains(real.Log(), "TEST BUILD") {
		t.Fatalf("the release daemon at real hour %d (night %v): %+v\n%s", h, isNight, v, real.Log())
	}
}
