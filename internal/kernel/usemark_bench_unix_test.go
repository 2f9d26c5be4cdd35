//go:build unix

package kernel_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// BenchmarkApprovalUse is a person's approval and its one use on SQLite:
// submit, answer, wait (the use commits its mark and its record).
func BenchmarkApprovalUse(b *testing.B) {
	ctx := context.Background()
	home := b.TempDir()
	k, err := kernel.Open(ctx, kernel.Config{Home: home, Poll: 10 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	for b.Loop() {
		sub, err := k.Submit(ctx, write("/etc/hosts"))
		if err != nil || sub.Approval == nil {
			b.Fatalf("submit: %v", err)
		}
		if _, _, err := k.Answer(ctx, sub.Approval.ID, store.Answer{Decision: "approve", Who: "ann", Channel: "bench"}); err != nil {
			b.Fatal(err)
		}
		if got, err := k.Wait(ctx, sub.Approval.ID); err != nil || !gate.Allowed(got) {
			b.Fatalf("wait: %v", err)
		}
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := (ru1.Utime.Nano() + ru1.Stime.Nano()) - (ru0.Utime.Nano() + ru0.Stime.Nano())
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}
