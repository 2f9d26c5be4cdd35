package gate

import (
	"context"
	"fmt"
	"testing"
)

func BenchmarkParseIntent(b *testing.B) {
	inputs := []string{"yes", "go ahead, please", "不要执行这个命令", "no, stop everything now", "好的，继续", "I'm not sure what this does"}
	for i := 0; b.Loop(); i++ {
		ParseIntent(inputs[i%len(inputs)])
	}
}

// BenchmarkRequestAnswerWait is one full round trip through a real SQLite
// store: request, answer, wait (which also consumes the approval).
func BenchmarkRequestAnswerWait(b *testing.B) {
	g, _, _ := newGate(b, Config{Poll: longPoll})
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		a, v := rmAction(fmt.Sprint(i))
		ap, err := g.Request(ctx, a, v)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := g.Answer(ctx, ap.ID, answer(DecisionApprove)); err != nil {
			b.Fatal(err)
		}
		if _, err := g.Wait(ctx, ap.ID); err != nil {
			b.Fatal(err)
		}
	}
}
