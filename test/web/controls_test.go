package webe2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// TestBrowserUnattended: the Unattended page in headless Chromium. An
// anomaly (three writes by `overseer tool run` with a rule of three) shows
// in the timeline with its rollback; the rule builder's dry run of a
// pattern rule over the recorded trail lists the two matching calls, and
// saving the rule lists it.
func TestBrowserUnattended(t *testing.T) {
	needBrowser(t)
	d := overseertest.StartDaemon(t, newHome(t, map[string]string{}))
	if code, body := d.Do(t, "POST", "/api/v1/anomaly/rules", map[string]any{"name": "write burst", "tool_name": "file_write",
		"threshold_count": 3, "window_seconds": 300, "action": "stop_and_rollback"}, true); code != 201 {
		t.Fatalf("anomaly rule: %d %s", code, body)
	}
	work := t.TempDir()
	run := func(tool, args string) map[string]any {
		t.Helper()
		r := overseertest.Run(t, d.Home, "", "tool", "run", tool, "--json", "--cwd", work, "--args", args)
		var out map[string]any
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
			t.Fatalf("tool run %s %s: exit %d %s%s", tool, args, r.Code, r.Stdout, r.Stderr)
		}
		return out
	}
	var prod []string
	for _, c := range []string{"echo prod-1", "echo other", "echo PROD-2"} {
		out := run("bash", fmt.Sprintf(`{"command":%q}`, c))
		if strings.Contains(strings.ToLower(c), "prod") {
			prod = append(prod, out["action"].(map[string]any)["id"].(string))
		}
	}
	for i := range 3 {
		run("file_write", fmt.Sprintf(`{"file_path":%q,"content":"x"}`, filepath.Join(work, fmt.Sprintf("w%d.txt", i))))
	}
	if _, err := os.Stat(filepath.Join(work, "w0.txt")); !os.IsNotExist(err) {
		t.Fatalf("the first write was not rolled back: %v", err)
	}
	dr := startDriver(t, d)
	dir := ""
	if *screenshots {
		dir = shotDir(t)
	}
	dr.send("CONTROLS " + dir)
	if dir != "" {
		dr.expect("SHOT")
		dr.expect("SHOT")
	}
	var got struct {
		Dry struct {
			Summary string
			Rows    []struct{ Action, With, What string }
		}
		Rules  []string
		Events []struct{ ID, Text string }
	}
	if err := json.Unmarshal([]byte(dr.expect("CONTROLS")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Dry.Rows) != 2 || got.Dry.Rows[0].Action != prod[0] || got.Dry.Rows[1].Action != prod[1] ||
		got.Dry.Rows[0].With != "approve" || got.Dry.Rows[0].What != "require_approval" || !strings.Contains(got.Dry.Summary, "fires on 2") {
		t.Fatalf("dry run on the page: %+v (want the calls %v)", got.Dry, prod)
	}
	if len(got.Rules) != 1 || got.Rules[0] != "no prod" {
		t.Fatalf("rules on the page: %v", got.Rules)
	}
	if len(got.Events) != 1 || !strings.Contains(got.Events[0].Text, "write burst") || !strings.Contains(got.Events[0].Text, "rolled back by overseer:controls: 2 action(s)") {
		t.Fatalf("timeline on the page: %+v", got.Events)
	}
	// The rule the page saved is in force (for another agent: the
	// anomaly paused the builtin tools' agent).
	code, body := d.Do(t, "POST", "/api/v1/actions", map[string]any{"tool": "Bash", "agent": "claude-code", "session": "s",
		"cwd": work, "args": map[string]any{"command": "echo prod-3"}}, false)
	var o outcome
	if code != 200 || json.Unmarshal(body, &o) != nil || o.Approval == nil {
		t.Fatalf("a call the saved rule puts to a person: %d %s", code, body)
	}
}
