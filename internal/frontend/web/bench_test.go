package web

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
)

func BenchmarkParseLink(b *testing.B) {
	c := &Console{key: make([]byte, 32), clk: clock.NewFake(t0)}
	tok, err := c.signLink(LinkClaims{Approval: "apr_abcdefghijklmnop", ArgsHash: fmt.Sprintf("%064x", 1),
		Decision: "approve", Expires: t0.Add(time.Hour).Unix(), Nonce: "0123456789abcdefghijkl", Who: "slack"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.ParseLink(tok); err != nil {
			b.Fatal(err)
		}
	}
}

// benchEnv is a console over a kernel holding n pending approvals.
func benchEnv(b *testing.B, n int) *env {
	e := newEnvTB(b)
	for i := 0; i < n; i++ {
		e.submit("deploy", map[string]any{"target": fmt.Sprintf("host-%d", i)})
	}
	return e
}

func BenchmarkQueueSnapshot(b *testing.B) {
	e := benchEnv(b, 50)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := e.con.snapshot(ctx)
		if err != nil || len(s.Pending) != 50 {
			b.Fatal(err, len(s.Pending))
		}
	}
}

func BenchmarkDashboard(b *testing.B) {
	e := benchEnv(b, 300) // 900 audit records
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, err := BuildDashboard(ctx, e.k.Store, e.clk.Now(), 7)
		if err != nil || d.Totals.Actions != 300 {
			b.Fatal(err)
		}
		_ = LevelsChart(d)
	}
}
