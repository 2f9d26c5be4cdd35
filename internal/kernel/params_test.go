package kernel_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// L1: arguments a builtin tool's schema does not know are stripped before
// the call is judged and run, recorded, and the model is told.
func TestRunToolStripsUnknownArguments(t *testing.T) {
	e := newEnv(t)
	run, err := e.run(t, "bash", map[string]any{"command": "echo stripped-ok", "sudo": true, "env": map[string]any{"LD_PRELOAD": "/x.so"}}, kernel.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(run.Stripped, []string{"env", "sudo"}) {
		t.Fatalf("stripped %v", run.Stripped)
	}
	if _, ok := run.Action.Args["sudo"]; ok || run.Action.Args["command"] != "echo stripped-ok" {
		t.Fatalf("judged with %v", run.Action.Args)
	}
	if !strings.Contains(run.Result.Output, "stripped-ok") || !strings.Contains(run.Result.Output, "ignored unknown argument(s) env, sudo") {
		t.Fatalf("the model is not told: %q", run.Result.Output)
	}
	recs, err := e.k.Store.QueryAudit(context.Background(), store.AuditQuery{Types: []string{audit.TypeAction}, ActionID: run.Action.ID})
	if err != nil || len(recs) != 1 {
		t.Fatalf("%v %v", recs, err)
	}
	if d := string(recs[0].Data); strings.Contains(d, "LD_PRELOAD") || !strings.Contains(d, "env, sudo") {
		t.Fatalf("the recorded action: %s", d)
	}

	// Known arguments only: nothing is said.
	run, err = e.run(t, "bash", map[string]any{"command": "echo plain"}, kernel.RunOptions{})
	if err != nil || len(run.Stripped) > 0 || strings.Contains(run.Result.Output, "ignored") {
		t.Fatalf("%+v %v", run, err)
	}
}
