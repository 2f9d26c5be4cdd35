package bench

import (
	"context"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/grant"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// BenchmarkEvaluateDelegation measures Evaluate with the kernel's real
// store (SQLite), where the grant lookup (the grant records appended since
// the last look, the use of the caller's grants) and the conflict guard's
// lookup (the touches of each path written) happen, in one run:
//
//   - baseline: a write by a session that holds no grant, no touches;
//   - inside-grant: a read inside a grant of the caller (lookup + use);
//   - conflict: a write of a file another session wrote a minute ago.
//
// The goal: grants and conflicts do not noticeably slow Evaluate — each
// case within 100 µs of the baseline's median on the shared machine.
func BenchmarkEvaluateDelegation(b *testing.B) {
	ctx := context.Background()
	k, err := kernel.Open(ctx, kernel.Config{Home: b.TempDir(), NoSeal: true})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	spec := kernel.GrantSpec{
		Subject: grant.Subject{Agent: "claude-code", Session: "g1", SubagentType: "general-purpose"},
		Allow:   []grant.Permit{{Kinds: []action.Kind{action.KindFileRead}, Under: []string{"/proj/docs"}, ReadOnly: true}},
		Expires: time.Now().Add(time.Hour),
	}
	for i := 0; i < 20; i++ { // other subjects' grants, to be skipped
		s := spec
		s.Subject.Session = "other"
		if _, err := k.IssueGrant(ctx, s, "bench", "bench"); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := k.IssueGrant(ctx, spec, "bench", "bench"); err != nil {
		b.Fatal(err)
	}
	write := func(session, path string) action.Action {
		return action.Action{Agent: "claude-code", Session: session, Tool: "Write", Cwd: "/proj",
			Args: map[string]any{"file_path": path, "content": "x"}}
	}
	first := write("s1", "/proj/shared.go")
	if _, err := k.Submit(ctx, &first); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		a    action.Action
		want func(v *action.Verdict) bool
	}{
		{"baseline", write("s3", "/proj/own.go"), func(v *action.Verdict) bool { return v.Level.RunsWithoutPerson() }},
		{"inside-grant", action.Action{Agent: "claude-code", Session: "g1", SubagentType: "general-purpose", SubagentID: "x",
			Tool: "Read", Cwd: "/proj", Args: map[string]any{"file_path": "/proj/docs/a.md"}},
			func(v *action.Verdict) bool { return v.Level == action.Auto && v.Decider.Source == action.SourceGrant }},
		{"conflict", write("s2", "/proj/shared.go"), func(v *action.Verdict) bool { return v.Level == action.Confirm }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			v := benchEvaluate(b, k.Engine, c.a)
			if !c.want(&v) {
				b.Fatalf("verdict %s %+v", v.Level, v.Decider)
			}
		})
	}
}
