package kernel

import (
	"context"
	"fmt"

	"github.com/overseer-dev/overseer/internal/limits"
)

// nsQuotaBuckets holds the submission quotas' buckets shared by several
// instances (limits.Pool).
const nsQuotaBuckets = "quota_buckets"

// QuotaPool draws on the submission quotas' buckets in the store, all in
// one transaction, each bucket under its lock: the daemon's quotas count
// for every instance on a shared database (limits.Quotas.SetPool).
func (k *Kernel) QuotaPool(ctx context.Context, draws []limits.Draw) ([]limits.Drawn, error) {
	now := k.Clock.Now()
	keys := make([]string, len(draws))
	idx := make(map[string]int, len(draws))
	for i, d := range draws {
		if _, dup := idx[d.Key]; dup {
			return nil, fmt.Errorf("quota bucket %s drawn twice", d.Key)
		}
		keys[i], idx[d.Key] = d.Key, i
	}
	out := make([]limits.Drawn, len(draws))
	err := k.raw.UpdateStates(ctx, nsQuotaBuckets, keys, func(key string, old []byte) ([]byte, error) {
		b, got, err := limits.DrawBucket(old, draws[idx[key]], now)
		out[idx[key]] = got
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("drawing on the shared quotas: %w", err)
	}
	return out, nil
}

// PruneQuotaBuckets forgets the shared quota buckets that have refilled
// (the same as no bucket: a session or agent that stopped submitting), so
// that names an agent makes up do not pile up in the database. It returns
// how many it forgot.
func (k *Kernel) PruneQuotaBuckets(ctx context.Context) (int, error) {
	all, err := k.raw.ListState(ctx, nsQuotaBuckets)
	if err != nil {
		return 0, err
	}
	n := 0
	for key, v := range all {
		if !limits.FullBucket(v, k.Clock.Now()) {
			continue
		}
		gone := false
		err := k.raw.UpdateState(ctx, nsQuotaBuckets, key, func(old []byte) ([]byte, error) {
			if old == nil || !limits.FullBucket(old, k.Clock.Now()) {
				return old, nil // drawn on meanwhile: kept
			}
			gone = true
			return nil, nil
		})
		if err != nil {
			return n, err
		}
		if gone {
			n++
		}
	}
	return n, nil
}
