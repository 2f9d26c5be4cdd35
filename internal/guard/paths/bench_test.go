package paths

import (
	"context"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// BenchmarkCheck measures one typical file action: a write of a file two
// directories deep in the working directory.
func BenchmarkCheck(b *testing.B) {
	fx := newFixture(b)
	g := New(fx.config(nil))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a := fileAction(action.KindFileWrite, "claude-code", "Write", fx.proj, "sub/new.txt")
		action.DeriveFileFacts(a)
		if _, err := g.Check(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckSecretThroughLink measures a read through a link into ~/.ssh.
func BenchmarkCheckSecretThroughLink(b *testing.B) {
	fx := newFixture(b)
	g := New(fx.config(nil))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a := fileAction(action.KindFileRead, "claude-code", "Read", fx.proj, "link-ssh/id_rsa")
		action.DeriveFileFacts(a)
		if _, err := g.Check(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}
