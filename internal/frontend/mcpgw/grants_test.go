package mcpgw_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/grant"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// A grant for the gateway's client lets its writes under one directory run
// without a person, for one step; the next is held again.
func TestGrantForClient(t *testing.T) {
	e := newEnv(t, envOpts{})
	cs := e.client(nil, "")
	if _, err := e.k.IssueGrant(context.Background(), kernel.GrantSpec{
		Subject: grant.Subject{Agent: "test-agent"},
		Allow:   []grant.Permit{{Tools: []string{"up__write_note"}, Under: []string{e.dir}}},
		Budget:  grant.Budget{Steps: 1},
		Expires: e.clk.Now().Add(time.Hour),
	}, "ann", "cli"); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(e.dir, "a.txt")
	if res := e.call(cs, "up__write_note", map[string]any{"path": a, "text": "granted"}); res.IsError {
		t.Fatalf("the granted call failed: %s", text(res))
	}
	if b, err := os.ReadFile(a); err != nil || string(b) != "granted" {
		t.Fatalf("file %q %v", b, err)
	}
	ch := e.callAsync(cs, "up__write_note", map[string]any{"path": filepath.Join(e.dir, "b.txt"), "text": "x"})
	aps := e.pending(1)
	edge := false
	for _, r := range aps[0].Verdict.Reasons {
		edge = edge || r.Source == action.SourceGrant && strings.Contains(r.Message, "budget of 1 steps")
	}
	if aps[0].Level != action.Confirm || !edge {
		t.Fatalf("after the budget: %+v", aps[0].Verdict.Reasons)
	}
	e.answer(aps[0].ID, "deny", "no more")
	if res := <-ch; !res.IsError {
		t.Fatal("the denied call ran")
	}
}
