package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/overseer-dev/overseer/internal/store"
)

// putState applies a PutStateEffect inside the audit write's transaction.
// The key's lock (as UpdateState takes it) makes IfAbsent hold across
// instances offering the same key at once: the second sees the first's
// row and fails with ErrExists.
func putState(ctx context.Context, q querier, e *store.PutStateEffect) error {
	if !json.Valid(e.Value) {
		return fmt.Errorf("state %s/%s: value is not valid JSON", e.NS, e.Key)
	}
	if _, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3))`, stateClass, e.NS, e.Key); err != nil {
		return err
	}
	if e.IfAbsent {
		tag, err := q.Exec(ctx, `INSERT INTO state (ns, key, value) VALUES ($1, $2, $3) ON CONFLICT (ns, key) DO NOTHING`,
			e.NS, e.Key, string(e.Value))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("state %s/%s: %w", e.NS, e.Key, store.ErrExists)
		}
		return nil
	}
	_, err := q.Exec(ctx, `INSERT INTO state (ns, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value`, e.NS, e.Key, string(e.Value))
	return err
}
