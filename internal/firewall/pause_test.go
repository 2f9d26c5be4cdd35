package firewall_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/perception"
)

// pauseSignals is a bus with paused agents.
type pauseSignals struct {
	*perception.Bus
	paused map[string]string
	err    error
}

func (p pauseSignals) Paused(agent string) (bool, string, error) {
	if m, ok := p.paused[agent]; ok {
		return true, m, nil
	}
	return false, "", p.err
}

func TestPausedAgent(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	bus := perception.New(openStore(t), clk)
	p := mustPolicy(t, "version: 1\ndefaults: {other: auto, file_read: auto}\n")
	sig := pauseSignals{Bus: bus, paused: map[string]string{"test": "agent test is paused (night); resume it"}}
	e := newEngine(t, firewall.Config{Policy: p, Signals: sig, Clock: clk})

	t.Run("Paused", func(t *testing.T) {
		// Even a call the policy runs without a person, and even one a
		// guard blocks: the pause is what the agent is told.
		for _, a := range []*action.Action{act("lookup", nil), act("Bash", map[string]any{"command": "rm -rf /"})} {
			v := e.Evaluate(ctx, a)
			if v.Level != action.Block || !v.Stop {
				t.Fatalf("%s: %s stop=%v, want block with stop", a.Tool, v.Level, v.Stop)
			}
			if v.Decider == nil || v.Decider.Source != action.SourcePaused || !strings.Contains(v.Summary(), "night") {
				t.Fatalf("%s: decider %+v", a.Tool, v.Decider)
			}
		}
	})
	t.Run("Other agent", func(t *testing.T) {
		a := act("lookup", nil)
		a.Agent = "other"
		if v := e.Evaluate(ctx, a); v.Level != action.Auto || v.Stop {
			t.Fatalf("another agent: %s stop=%v", v.Level, v.Stop)
		}
	})
	t.Run("Unreadable", func(t *testing.T) {
		// Fail closed: the pauses could not be read, so a person decides.
		sig := pauseSignals{Bus: bus, err: errors.New("disk gone")}
		e := newEngine(t, firewall.Config{Policy: p, Signals: sig, Clock: clk})
		a := act("lookup", nil)
		a.Agent = "other"
		v := e.Evaluate(ctx, a)
		if v.Level < action.Approve || !strings.Contains(v.Summary(), "paused agents") {
			t.Fatalf("unreadable pauses: %s (%s)", v.Level, v.Summary())
		}
	})
}
