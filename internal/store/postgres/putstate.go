package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

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

// plainPut reports whether w's effect is a state put that putStates can
// apply: not IfAbsent, and with a value and strings PostgreSQL's text
// takes (valid JSON, valid UTF-8, no NUL), so that its statement cannot
// fail on its own. Any other effect runs under a savepoint of its own
// (applyEffect), which takes back only itself when it fails.
func plainPut(w *store.AuditWrite) (*store.PutStateEffect, bool) {
	e, ok := w.Effect.(*store.PutStateEffect)
	if !ok || e.IfAbsent || !json.Valid(e.Value) {
		return nil, false
	}
	for _, s := range []string{e.NS, e.Key, string(e.Value)} {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return nil, false
		}
	}
	return e, true
}

// batcher sends a pgx.Batch: the connection of an audit append.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// putRun collects consecutive plain state puts of an audit batch (see
// plainPut) and applies them in one round trip: their keys locked first in
// sorted order (as UpdateStates does), then written in the order given.
type putRun []*store.PutStateEffect

// flush applies the puts collected and empties the run. An error aborts
// the transaction (the whole batch fails).
func (r *putRun) flush(ctx context.Context, q batcher) error {
	if len(*r) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	r.queue(b)
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("state puts: %w", err)
	}
	return nil
}

// queue adds the run's statements to b and empties the run.
func (r *putRun) queue(b *pgx.Batch) {
	run := *r
	if len(run) == 0 {
		return
	}
	*r = run[:0]
	keys := slices.Clone(run)
	slices.SortFunc(keys, func(a, b *store.PutStateEffect) int {
		return cmp.Or(cmp.Compare(a.NS, b.NS), cmp.Compare(a.Key, b.Key))
	})
	for i, e := range keys {
		if i > 0 && e.NS == keys[i-1].NS && e.Key == keys[i-1].Key {
			continue
		}
		b.Queue(`SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3))`, stateClass, e.NS, e.Key)
	}
	for _, e := range run {
		b.Queue(`INSERT INTO state (ns, key, value) VALUES ($1, $2, $3)
			ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value`, e.NS, e.Key, string(e.Value))
	}
}
