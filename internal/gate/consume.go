package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/store"
)

// ConsumedNS is the state namespace where the gate marks approvals that have
// let their one call through. Keys are approval IDs.
const ConsumedNS = "gate_consumed"

// consumedMark is the value stored under ConsumedNS.
type consumedMark struct {
	At         time.Time `json:"at"`
	AnsweredAt time.Time `json:"answered_at"`
}

// Consume marks approval id as used: one approval lets one call through. It
// returns an error wrapping ErrConsumed when the approval was already used
// (by this or another process), ErrNotApproved when its answer does not let
// the action run, and store.ErrNotFound for an unknown id. Wait consumes the
// approvals it returns; callers use Consume for approvals they found
// themselves (TakeApproved does both steps).
func (g *Gate) Consume(ctx context.Context, id string) error {
	ap, err := g.st.GetApproval(ctx, id)
	if err != nil {
		return fmt.Errorf("gate: consume %s: %w", id, err)
	}
	return g.consume(ctx, ap)
}

// consume atomically marks ap consumed; the first caller wins. An approval
// whose use is recorded apart from its mark (Journal.UsedApproval) is
// consumed though its mark is gone: a writer of a shared database that
// deletes the mark does not get the approval's call through again.
func (g *Gate) consume(ctx context.Context, ap *store.Approval) error {
	if !Allowed(ap) {
		return fmt.Errorf("gate: consume %s (%s): %w", ap.ID, ap.Status, ErrNotApproved)
	}
	mark, err := json.Marshal(consumedMark{At: g.clk.Now(), AnsweredAt: ap.Answer.At})
	if err != nil {
		return fmt.Errorf("gate: consume %s: %w", ap.ID, err)
	}
	if g.usedHereRecently(ap.ID) {
		return fmt.Errorf("gate: consume %s: %w (here, and its mark is gone)", ap.ID, ErrConsumed)
	}
	if used, err := g.journal().UsedApproval(ctx, ap); err != nil {
		return fmt.Errorf("gate: consume %s: %w", ap.ID, err)
	} else if used {
		return fmt.Errorf("gate: consume %s: %w (its use is recorded, its mark is gone)", ap.ID, ErrConsumed)
	}
	err = g.journal().ConsumeApproval(ctx, ap, mark)
	if errors.Is(err, store.ErrExists) {
		return fmt.Errorf("gate: consume %s: %w", ap.ID, ErrConsumed)
	}
	if err != nil {
		return fmt.Errorf("gate: consume %s: %w", ap.ID, err)
	}
	g.mu.Lock()
	now := g.clk.Now()
	for id, at := range g.usedHere {
		if now.Sub(at) > g.cfg.RetryWindow {
			delete(g.usedHere, id)
		}
	}
	g.usedHere[ap.ID] = now
	g.mu.Unlock()
	return nil
}

// usedHereRecently reports whether this gate consumed approval id within
// the retry window.
func (g *Gate) usedHereRecently(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	at, ok := g.usedHere[id]
	return ok && g.clk.Now().Sub(at) <= g.cfg.RetryWindow
}

// consumed reports whether approval ap has been used: it has a mark, or
// its use is recorded apart from the mark. A read error counts as used:
// an approval whose state is unknown lets nothing through. Any mark counts,
// whoever wrote it: a mark can only keep an approval from being used.
func (g *Gate) consumed(ctx context.Context, ap *store.Approval) (bool, error) {
	_, err := g.st.GetState(ctx, ConsumedNS, ap.ID)
	switch {
	case err == nil:
		return true, nil
	case !errors.Is(err, store.ErrNotFound):
		return true, fmt.Errorf("gate: consumed %s: %w", ap.ID, err)
	case g.usedHereRecently(ap.ID):
		return true, nil
	}
	used, err := g.journal().UsedApproval(ctx, ap)
	if err != nil {
		return true, fmt.Errorf("gate: consumed %s: %w", ap.ID, err)
	}
	return used, nil
}

// Caller is who retries a call: the agent and session an approval was
// asked for. A person's yes to one agent's call is not another's.
type Caller struct {
	Agent, Session string
}

// CallerOf returns the caller of a.
func CallerOf(a *action.Action) Caller { return Caller{Agent: a.Agent, Session: a.Session} }

// candidates returns the approvals a retry of an action with argsHash by
// the caller may ride on, newest first: a person approved them for the
// same agent and session, the answer is within the retry window, and they
// are not consumed.
func (g *Gate) candidates(ctx context.Context, argsHash string, by Caller) ([]*store.Approval, error) {
	if argsHash == "" || strings.HasPrefix(argsHash, "unhashable:") {
		return nil, nil
	}
	aps, err := g.st.ListApprovals(ctx, store.ApprovalFilter{Status: store.StatusApproved, ArgsHash: argsHash})
	if err != nil {
		return nil, fmt.Errorf("gate: find approved: %w", err)
	}
	oldest := g.clk.Now().Add(-g.cfg.RetryWindow)
	var out []*store.Approval
	for i := len(aps) - 1; i >= 0; i-- {
		ap := aps[i]
		// Re-check what the filter promised: a store that ignored a filter
		// field must not widen what an approval lets through.
		if ap.ArgsHash != argsHash || ap.Status != store.StatusApproved || !Allowed(ap) || ap.Answer.At.Before(oldest) ||
			ap.Action.Agent != by.Agent || ap.Action.Session != by.Session {
			continue
		}
		used, err := g.consumed(ctx, ap)
		if err != nil {
			return nil, err
		}
		if !used {
			out = append(out, ap)
		}
	}
	return out, nil
}

// FindApproved returns the newest approval a person approved for exactly
// argsHash that has not let a call through yet and was answered within the
// retry window — for an agent that retries an identical call after its
// client timed out. It does not consume it; see TakeApproved. None found
// returns an error wrapping store.ErrNotFound.
func (g *Gate) FindApproved(ctx context.Context, argsHash string, by Caller) (*store.Approval, error) {
	c, err := g.candidates(ctx, argsHash, by)
	if err != nil {
		return nil, err
	}
	if len(c) == 0 {
		return nil, fmt.Errorf("gate: no unused approval for %q: %w", argsHash, store.ErrNotFound)
	}
	return c[0], nil
}

// TakeApproved finds an approval as FindApproved does and consumes it in the
// same step, so two identical retries racing (in one process or several)
// cannot both ride on one approval. None left returns an error wrapping
// store.ErrNotFound.
func (g *Gate) TakeApproved(ctx context.Context, argsHash string, by Caller) (*store.Approval, error) {
	c, err := g.candidates(ctx, argsHash, by)
	if err != nil {
		return nil, err
	}
	for _, ap := range c {
		err := g.consume(ctx, ap)
		if err == nil {
			return ap, nil
		}
		if !errors.Is(err, ErrConsumed) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("gate: no unused approval for %q: %w", argsHash, store.ErrNotFound)
}
