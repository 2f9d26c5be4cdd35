package kernel_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
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

// L4: with sandbox.output_dir, a builtin write outside the working
// directory lands under the output directory, and the model is told where.
func TestRunToolRedirectsWritesIntoTheOutputDirectory(t *testing.T) {
	e := newEnv(t)
	out := filepath.Join(filepath.Dir(e.proj), "out")
	if err := os.WriteFile(filepath.Join(e.home, kernel.PolicyName), []byte("version: 1\nsettings:\n  sandbox:\n    output_dir: "+out+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := kernel.Open(context.Background(), kernel.Config{Home: e.home})
	if err != nil {
		t.Fatal(err)
	}
	e.k.Close()
	e.k = k
	asked := filepath.Join(e.other, "report.txt")
	run, err := e.run(t, "file_write", map[string]any{"file_path": asked, "content": "hello"}, kernel.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(out, strings.TrimPrefix(asked, "/"))
	if run.Redirected != want || run.Verdict.Level != action.Notify {
		t.Fatalf("redirected to %q, level %s", run.Redirected, run.Verdict.Level)
	}
	if b, err := os.ReadFile(want); err != nil || string(b) != "hello" {
		t.Fatalf("the redirected file: %q %v", b, err)
	}
	if _, err := os.Stat(asked); !os.IsNotExist(err) {
		t.Fatalf("the path asked for was written: %v", err)
	}
	if !strings.Contains(run.Result.Output, want) || !strings.Contains(run.Result.Output, "instead") {
		t.Fatalf("the model is not told: %q", run.Result.Output)
	}
	// Inside the working directory nothing moves.
	run, err = e.run(t, "file_write", map[string]any{"file_path": filepath.Join(e.proj, "in.txt"), "content": "x"}, kernel.RunOptions{})
	if err != nil || run.Redirected != "" {
		t.Fatalf("%+v %v", run, err)
	}
}
