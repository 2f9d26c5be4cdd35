package gate

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/overseer-dev/overseer/internal/proc"
	"github.com/overseer-dev/overseer/internal/store"
)

// AskerKeyHash is the hash under which an approval keeps its asker's
// withdrawal key (store.Asker.KeyHash).
func AskerKeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// WithdrawAsked withdraws approval id for its asker, who proves itself with
// the key it gave when it asked (see AskerKeyHash). A request without an
// asker's key, or a wrong key, returns an error wrapping ErrNotAsker and
// changes nothing.
func (g *Gate) WithdrawAsked(ctx context.Context, id, key, reason string) (*store.Approval, bool, error) {
	ap, err := g.st.GetApproval(ctx, id)
	if err != nil {
		return nil, false, fmt.Errorf("gate: withdraw %s: %w", id, err)
	}
	if ap.Asker == nil || ap.Asker.KeyHash == "" || key == "" ||
		subtle.ConstantTimeCompare([]byte(AskerKeyHash(key)), []byte(ap.Asker.KeyHash)) != 1 {
		return ap, false, fmt.Errorf("gate: withdraw %s: %w", id, ErrNotAsker)
	}
	return g.Withdraw(ctx, id, reason)
}

// WithdrawGone withdraws every pending request whose asker is gone: its
// wait ran out (Asker.Until), its process ended (Asker.PID on this host), or
// it held a long-poll (Asker.Hold) and nobody has waited on the request in
// this gate for AskerGrace. Requests without an asker are left to their
// deadline. It returns how many it withdrew.
//
// The long-poll test counts only waiters of this gate, so WithdrawGone
// belongs to the process whose API the askers poll: the daemon, which runs
// it at start (after a restart, the grace counts from then) and every
// second. Daemons sharing a database (Config.Shared) skip that test.
func (g *Gate) WithdrawGone(ctx context.Context) (int, error) {
	pending, err := g.st.ListApprovals(ctx, store.ApprovalFilter{Status: store.StatusPending})
	if err != nil {
		return 0, fmt.Errorf("gate: list pending: %w", err)
	}
	now := g.clk.Now()
	live := make(map[string]bool, len(pending))
	n := 0
	var errs []error
	for _, ap := range pending {
		live[ap.ID] = true
		why := g.gone(ap, now)
		if why == "" {
			continue
		}
		_, applied, err := g.Withdraw(ctx, ap.ID, why)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if applied {
			n++
		}
	}
	g.mu.Lock()
	for id := range g.left {
		if !live[id] {
			delete(g.left, id)
		}
	}
	g.mu.Unlock()
	return n, errors.Join(errs...)
}

// gone says why nobody waits for ap any more, or "" while its asker may.
func (g *Gate) gone(ap *store.Approval, now time.Time) string {
	a := ap.Asker
	if a == nil {
		return ""
	}
	who := askerName(a)
	if !a.Until.IsZero() && !now.Before(a.Until) {
		return fmt.Sprintf("%s stopped waiting for an answer at %s", who, a.Until.Local().Format("15:04:05"))
	}
	g.mu.Lock()
	attached := len(g.waiters[ap.ID]) > 0
	left, seen := g.left[ap.ID]
	g.mu.Unlock()
	if attached {
		return ""
	}
	if a.PID > 0 && g.cfg.Process(proc.Identity{PID: a.PID, Start: a.Start, Host: a.Host}) == proc.Gone {
		return fmt.Sprintf("%s (process %d) is gone", who, a.PID)
	}
	if a.Hold && !g.cfg.Shared {
		// Nobody has waited since the last waiter left — or, if none came
		// to this gate yet, since the request was made or the gate started.
		since := left
		if !seen {
			since = ap.CreatedAt
			if g.started.After(since) {
				since = g.started
			}
		}
		if idle := now.Sub(since); idle >= g.cfg.AskerGrace {
			return fmt.Sprintf("%s stopped polling for the answer %s ago", who, idle.Round(time.Second))
		}
	}
	return ""
}

func askerName(a *store.Asker) string {
	switch a.Kind {
	case "hook":
		return "the agent's hook"
	case "mcp":
		return "the MCP client"
	case "":
		return "the caller"
	}
	return "the " + a.Kind + " caller"
}
