package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/grant"
	"github.com/overseer-dev/overseer/internal/kernel"
)

func TestGrantsView(t *testing.T) {
	d := newDaemon(t)
	ctx := context.Background()
	g, err := d.k.IssueGrant(ctx, kernel.GrantSpec{
		Subject: grant.Subject{Agent: "claude-code", SubagentType: "Explore"},
		Allow:   []grant.Permit{{Kinds: []action.Kind{action.KindFileRead}, Under: []string{"/proj/docs"}, ReadOnly: true}},
		Budget:  grant.Budget{Steps: 9},
		Expires: time.Now().Add(time.Hour),
	}, "ann", "cli")
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(t, d)
	m = run(t, m, key("G"))
	s := screen(m)
	for _, want := range []string{"Active grants", g.ID, "sub-agents of type Explore", "0/9 steps", "file_read read-only under /proj/docs", "R revoke"} {
		if !strings.Contains(s, want) {
			t.Fatalf("screen lacks %q:\n%s", want, s)
		}
	}
	m = run(t, m, key("R"))
	if s := screen(m); !strings.Contains(s, "revoked") || strings.Contains(s, g.ID+"  ") {
		t.Fatalf("after R:\n%s", s)
	}
	v, err := d.k.GetGrant(ctx, g.ID)
	if err != nil || v.Revoked == nil || v.Revoked.Channel != "tui" {
		t.Fatalf("grant %+v %v", v, err)
	}
	m = run(t, m, key("esc"))
	if s := screen(m); !strings.Contains(s, "Waiting for you") {
		t.Fatalf("back to the queue:\n%s", s)
	}
}
