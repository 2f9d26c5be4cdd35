package kernel

import (
	"context"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/perception"
	"github.com/overseer-dev/overseer/internal/store"
)

// signals is what the engine reads from the PerceptionBus, and the memory
// of people's refusals: the approvals a person denied or aborted are the
// record of a refusal (written before anyone waiting on the answer wakes,
// so a retry that races the answer's bookkeeping is refused too), the bus
// counts the repeats since.
type signals struct {
	*perception.Bus
	approvals store.ApprovalStore
	clock     clock.Clock
	pauses    *pauses
	usage     *usageState
}

var (
	_ firewall.Signals        = signals{}
	_ firewall.RefusalSignals = signals{}
	_ firewall.CreatedSignals = signals{}
	_ firewall.PauseSignals   = signals{}
	_ firewall.UsageSignals   = signals{}
)

// Paused implements firewall.PauseSignals.
func (s signals) Paused(agent string) (bool, string, error) { return s.pauses.Paused(agent) }

// Refusal implements firewall.RefusalSignals.
func (s signals) Refusal(ctx context.Context, a *action.Action, argsHash string) (perception.Refusal, bool, error) {
	key := firewall.SessionKey(a)
	r, ok, err := s.Bus.Refusal(ctx, key, argsHash)
	if ok || err != nil {
		return r, ok, err
	}
	// Not (yet) recorded by the bus: the approvals themselves.
	var newest perception.Refusal
	found := false
	for _, st := range []store.ApprovalStatus{store.StatusDenied, store.StatusAborted} {
		aps, err := s.approvals.ListApprovals(ctx, store.ApprovalFilter{Status: st, ArgsHash: argsHash, Session: a.Session})
		if err != nil {
			return perception.Refusal{}, false, err
		}
		for _, apr := range aps {
			if r, ok := refusalOf(apr, key); ok && s.clock.Now().Sub(r.At) <= perception.RefusalMaxAge && (!found || r.At.After(newest.At)) {
				newest, found = r, true
			}
		}
	}
	return newest, found, nil
}

// refusalOf reads an answered approval as a person's refusal of its call,
// if it is one: denied or aborted by a person (not the timeout, not a
// withdrawal), for an action of the same agent and session, not a question
// the agent asked.
func refusalOf(apr *store.Approval, key string) (perception.Refusal, bool) {
	ans := apr.Answer
	if ans == nil || ans.Who == gate.TimeoutActor || ans.Who == gate.WithdrawnActor {
		return perception.Refusal{}, false
	}
	if firewall.SessionKey(&apr.Action) != key {
		return perception.Refusal{}, false
	}
	if d := apr.Verdict.Decider; d != nil && d.Source == action.SourceAgent {
		return perception.Refusal{}, false
	}
	return perception.Refusal{Session: key, ArgsHash: apr.ArgsHash, Tool: apr.Tool, ApprovalID: apr.ID,
		Who: ans.Who, Channel: ans.Channel, Reason: ans.Reason, Decision: ans.Decision, At: ans.At}, true
}
