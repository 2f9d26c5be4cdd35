package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRuleCommands drives add, edit, test and rm of auto-rules and anomaly
// rules on the database (no daemon): an ID in the added JSON is not kept,
// edit replaces the rule it names, the dry run reports, rm removes once.
func TestRuleCommands(t *testing.T) {
	for _, c := range []struct {
		cmd, noun, rule string
		list            []string
	}{
		{"auto-rules", "auto-rule",
			`{"id":"mine","name":"costly agent","trigger":{"type":"cost_threshold","tool":"Bash","agent":"claude-code","usd":1.5,"window_minutes":60},"action":{"type":"block_tool"}}`, []string{"list", "--json"}},
		{"anomaly", "anomaly rule",
			`{"id":"mine","name":"write burst","tool_name":"file_[we]*","agent":"claude-code","threshold_count":5,"window_seconds":300,"action":"stop_and_rollback","rollback":10}`, []string{"rules"}},
	} {
		t.Run(c.cmd, func(t *testing.T) {
			home := hookHome(t)
			run := func(args ...string) (int, string, string) {
				t.Helper()
				return runHookCLI(t, home, "", append([]string{c.cmd}, args...)...)
			}
			var added struct{ ID, Name string }
			code, out, errOut := run("add", "--json", c.rule, "--who", "ann")
			if code != 0 || json.Unmarshal([]byte(out), &added) != nil || added.ID == "" || added.ID == "mine" {
				t.Fatalf("add: exit %d %s %s", code, out, errOut)
			}
			if code, _, errOut := run("add"); code == 0 || !strings.Contains(errOut, "--json") {
				t.Fatalf("add without a rule: exit %d %s", code, errOut)
			}
			if code, _, errOut := run("edit", "--json", c.rule); code == 0 || !strings.Contains(errOut, "name the rule to edit") {
				t.Fatalf("edit without an ID: exit %d %s", code, errOut)
			}
			renamed := strings.Replace(c.rule, `"name":"`, `"name":"renamed `, 1)
			var edited struct{ ID, Name string }
			code, out, errOut = run("edit", added.ID, "--json", renamed, "--who", "ann")
			if code != 0 || json.Unmarshal([]byte(out), &edited) != nil || edited.ID != added.ID || !strings.HasPrefix(edited.Name, "renamed ") {
				t.Fatalf("edit: exit %d %s %s", code, out, errOut)
			}
			if code, out, errOut := run(c.list...); code != 0 || !strings.Contains(out, "renamed ") {
				t.Fatalf("%s after the edit: exit %d %s %s", c.list, code, out, errOut)
			}
			if code, out, errOut := run("test", "--json", c.rule, "--days", "1"); code != 0 || !strings.Contains(out, "Replayed 0 calls of the last 1 days") {
				t.Fatalf("test: exit %d %s %s", code, out, errOut)
			}
			if code, out, errOut := run("test", "--json", c.rule, "--out-json"); code != 0 || !strings.Contains(out, `"days"`) {
				t.Fatalf("test --out-json: exit %d %s %s", code, out, errOut)
			}
			if code, out, errOut := run("rm", added.ID, "--who", "ann"); code != 0 || strings.TrimSpace(out) != "Removed "+c.noun+" "+added.ID+"." {
				t.Fatalf("rm: exit %d %q %s", code, out, errOut)
			}
			if code, _, _ := run("rm", added.ID); code == 0 {
				t.Fatal("removed twice")
			}
			if code, out, _ := run(c.list...); code != 0 || strings.Contains(out, added.ID) {
				t.Fatalf("%s after the removal: %s", c.list, out)
			}
		})
	}
}
