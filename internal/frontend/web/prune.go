package web

import (
	"context"
	"encoding/json"
	"time"
)

// SpentGrace is how long past its expiry an answer token's claims and a
// used link's mark are kept. Once expired, a token or link is refused for
// its expiry whether its records are kept or not (expiry is checked
// first), so forgetting them changes no answer; the grace covers clocks
// of instances that disagree a little.
const SpentGrace = 24 * time.Hour

// PruneSpent forgets the claims of answer tokens and the marks of used
// links that expired more than SpentGrace ago, and returns how many it
// forgot. A record it cannot read is kept (it is refused as invalid
// anyway, and kept for a person to look at).
func (c *Console) PruneSpent(ctx context.Context) (int, error) {
	cutoff := c.clk.Now().Add(-SpentGrace)
	n := 0
	for _, ns := range []string{answerNS, linkNS} {
		all, err := c.k.Store.ListState(ctx, ns)
		if err != nil {
			return n, err
		}
		for key, v := range all {
			if !spentBefore(ns, v, cutoff) {
				continue
			}
			err := c.k.Store.UpdateState(ctx, ns, key, func(old []byte) ([]byte, error) {
				if old == nil || !spentBefore(ns, old, cutoff) {
					return old, nil // changed meanwhile: kept
				}
				return nil, nil
			})
			if err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// spentBefore reports whether the record v of namespace ns expired before
// cutoff.
func spentBefore(ns string, v []byte, cutoff time.Time) bool {
	switch ns {
	case answerNS:
		var cl AnswerClaims
		return json.Unmarshal(v, &cl) == nil && cl.Expires > 0 && time.Unix(cl.Expires, 0).Before(cutoff)
	case linkNS:
		var m struct {
			Expires time.Time `json:"expires"`
		}
		return json.Unmarshal(v, &m) == nil && !m.Expires.IsZero() && m.Expires.Before(cutoff)
	}
	return false
}

// PruneSpentEvery runs PruneSpent now and then every interval until ctx
// ends, reporting errors to logf.
func (c *Console) PruneSpentEvery(ctx context.Context, every time.Duration, logf func(string, ...any)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := c.PruneSpent(ctx); err != nil && ctx.Err() == nil && logf != nil {
			logf("pruning spent answer tokens and links: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
