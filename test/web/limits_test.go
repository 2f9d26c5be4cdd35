package webe2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// TestBrowserLimits: the Limits page shows a paused agent with why, the
// budget's 80% banner, gauges of the rate limit's and the cap's use and the
// cost chart; a rate limit added with the form is saved as the person
// signed in; the Resume button resumes the agent.
func TestBrowserLimits(t *testing.T) {
	needBrowser(t)
	d := overseertest.StartDaemon(t, newHome(t, map[string]string{}))
	do := func(method, path string, body any, auth bool) []byte {
		t.Helper()
		st, b := d.Do(t, method, path, body, auth)
		if st >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, st, b)
		}
		return b
	}
	do("POST", "/api/v1/rate-limits", map[string]any{"agent": "codex", "max_calls": 2, "window_seconds": 3600, "action_on_limit": "block"}, true)
	for _, f := range []string{"a", "b"} {
		do("POST", "/api/v1/actions", map[string]any{"tool": "Read", "agent": "codex", "session": "s1", "cwd": "/p",
			"args": map[string]any{"file_path": "/p/" + f}}, false)
	}
	do("PUT", "/api/v1/budget/prices", map[string]any{"prices": map[string]any{"m": map[string]any{"input_per_mtok": 10, "output_per_mtok": 10}}}, true)
	do("POST", "/api/v1/budget/caps", map[string]any{"max_cost_usd": 1, "period": "daily", "action_on_limit": "notify"}, true)
	do("POST", "/api/v1/usage", map[string]any{"agent": "codex", "session": "s1", "model": "m", "input_tokens": 90000, "cumulative": true}, false)
	do("POST", "/api/v1/agents/claude-code/pause", map[string]any{"reason": "away for the weekend", "who": "bob"}, true)

	dr := startDriver(t, d)
	shot := filepath.Join(t.TempDir(), "limits.png")
	if *screenshots {
		shot = filepath.Join(shotDir(t), "limits.png")
	}
	dr.send("LIMITS " + shot)
	dr.expect("SHOT")
	var got struct {
		Banner      string
		Paused      []struct{ Agent, Text string }
		PausedCount string
		Gauges      []struct {
			Value, Max float64
			Text       string
		}
		Bars        int
		Totals      string
		Limits      []string
		AfterResume string
	}
	if err := json.Unmarshal([]byte(dr.expect("LIMITS")), &got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Banner, "Budget at 80%") || !strings.Contains(got.Banner, "$0.90 of $1.00") {
		t.Errorf("banner %q", got.Banner)
	}
	if len(got.Paused) != 1 || got.Paused[0].Agent != "claude-code" || !strings.Contains(got.Paused[0].Text, "away for the weekend") ||
		!strings.Contains(got.Paused[0].Text, "paused by bob") || got.PausedCount != "1" {
		t.Errorf("paused %+v (count %q)", got.Paused, got.PausedCount)
	}
	var gauges []string
	for _, g := range got.Gauges {
		gauges = append(gauges, g.Text)
	}
	if len(got.Gauges) != 2 || !strings.Contains(strings.Join(gauges, " "), "2 / 2") || !strings.Contains(strings.Join(gauges, " "), "$0.90 of $1.00 (90%)") {
		t.Errorf("gauges %+v", got.Gauges)
	}
	if got.Bars != 30 || !strings.Contains(got.Totals, "$0.90today") {
		t.Errorf("chart bars %d, totals %q", got.Bars, got.Totals)
	}
	if len(got.Limits) != 2 || !strings.Contains(got.Limits[1], "tool WebFetch") || !strings.Contains(got.Limits[1], "effect new_host") ||
		!strings.Contains(got.Limits[1], "at most 5") || !strings.Contains(got.Limits[1], "then ask") {
		t.Errorf("limits %q", got.Limits)
	}
	if !strings.Contains(got.AfterResume, "No agent is paused") {
		t.Errorf("after the resume: %q", got.AfterResume)
	}
	// The changes are recorded as the person signed in.
	b := do("GET", "/api/v1/audit?type=agent_resumed", nil, true)
	if !strings.Contains(string(b), `alice`) {
		t.Errorf("no change recorded as alice: %s", b)
	}
	b = do("GET", "/api/v1/agents/paused", nil, true)
	if strings.Contains(string(b), "claude-code") {
		t.Errorf("still paused: %s", b)
	}
}
