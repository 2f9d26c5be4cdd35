package kernel

import (
	"context"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/grant"
)

// BenchmarkGrantLookup is what delegated mode adds to every Evaluate: the
// grant records appended since the last look (none, here) and the grants
// of the caller with their use, over the real SQLite store with 20 grants
// of other subjects and one of the caller's.
func BenchmarkGrantLookup(b *testing.B) {
	ctx := context.Background()
	k, err := Open(ctx, Config{Home: b.TempDir(), NoSeal: true})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	spec := GrantSpec{
		Subject: grant.Subject{Agent: "claude-code", Session: "g1", SubagentType: "*"},
		Allow:   []grant.Permit{{Kinds: []action.Kind{action.KindFileRead}}},
		Expires: time.Now().Add(time.Hour),
	}
	for i := 0; i < 21; i++ {
		s := spec
		if i < 20 {
			s.Subject.Session = "other"
		}
		if _, err := k.IssueGrant(ctx, s, "bench", "bench"); err != nil {
			b.Fatal(err)
		}
	}
	src := grantSource{k}
	for _, c := range []struct {
		name string
		a    action.Action
		n    int
	}{
		{"no-grant", action.Action{Agent: "claude-code", Session: "s1"}, 0},
		{"holder", action.Action{Agent: "claude-code", Session: "g1", SubagentType: "t"}, 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				st, err := src.GrantsFor(ctx, &c.a)
				if err != nil || len(st) != c.n {
					b.Fatalf("%d %v", len(st), err)
				}
			}
		})
	}
}
