package web

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/store"
)

func TestConsoleProposals(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	b := e.newBrowser().login()
	for range 3 {
		apr := e.submit("Bash", map[string]any{"command": "mytool sync --all"})
		if _, _, err := e.k.Answer(ctx, apr.ID, store.Answer{Decision: "approve", Who: "ann", Channel: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	st, body := b.get("/ui/api/proposals")
	if st != 200 {
		t.Fatalf("proposals: %d %s", st, body)
	}
	var list []struct {
		ID, Version string
		DryRun      struct {
			PromptsSaved int `json:"prompts_saved"`
		} `json:"dry_run"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list) != 1 || list[0].DryRun.PromptsSaved != 3 {
		t.Fatalf("proposals: %v %s", err, body)
	}
	id := list[0].ID
	// A change needs the session's CSRF token.
	if st, _ := b.send("POST", "/ui/api/proposals/"+id+"/accept", map[string]any{}, map[string]string{CSRFHeader: ""}); st != http.StatusForbidden {
		t.Fatalf("accept without CSRF: %d", st)
	}
	// The dry run of any rule.
	st, body = b.send("POST", "/ui/api/policy/replay", map[string]any{"rule": map[string]any{
		"name": "x", "kind": []string{"shell"}, "level": "auto"}}, nil)
	if st != 200 {
		t.Fatalf("replay: %d %s", st, body)
	}
	// The signed-in person accepts, whatever the body says.
	st, body = b.send("POST", "/ui/api/proposals/"+id+"/accept", map[string]any{"who": "mallory", "version": list[0].Version}, nil)
	if st != http.StatusCreated {
		t.Fatalf("accept: %d %s", st, body)
	}
	rules, err := e.k.Store.ListUserRules(ctx, e.clk.Now())
	if err != nil || len(rules) != 1 || rules[0].CreatedBy != "ann" || rules[0].Origin != "learned" {
		t.Fatalf("rules: %v %+v", err, rules)
	}
	a := &action.Action{Tool: "Bash", Agent: "agent-x", Session: "s-2", Cwd: "/home/agent/proj", Args: map[string]any{"command": "mytool sync --all"}}
	if v := e.k.Evaluate(ctx, a); v.Level != action.Auto {
		t.Fatalf("after accepting: %s", v.Summary())
	}
	if st, _ := b.send("POST", "/ui/api/proposals/"+id+"/dismiss", map[string]any{}, nil); st != http.StatusNotFound {
		t.Fatalf("dismissing an accepted proposal: %d", st)
	}
}
