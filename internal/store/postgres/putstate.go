package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

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
	key, full := stateKey(e.Key)
	if _, err := q.Exec(ctx, lockStateSQL, stateClass, e.NS, key); err != nil {
		return err
	}
	if e.IfAbsent {
		tag, err := q.Exec(ctx, addStateSQL, e.NS, key, string(e.Value), full)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("state %s/%s: %w", e.NS, e.Key, store.ErrExists)
		}
		return nil
	}
	_, err := q.Exec(ctx, setStateSQL, e.NS, key, string(e.Value), full)
	return err
}

// plainPut reports whether w's effect is a state put that putStates can
// apply: not IfAbsent, and with a value and strings PostgreSQL's text
// takes (valid JSON, valid UTF-8, no NUL; any key is stored escaped,
// storedKey), so that its statement cannot fail on its own. Any other effect runs under a savepoint of its own
// (applyEffect), which takes back only itself when it fails.
func plainPut(w *store.AuditWrite) (*store.PutStateEffect, bool) {
	e, ok := w.Effect.(*store.PutStateEffect)
	if !ok || e.IfAbsent || !json.Valid(e.Value) {
		return nil, false
	}
	for _, s := range []string{e.NS, string(e.Value)} {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return nil, false
		}
	}
	return e, true
}

// batcher sends a batch: the connection of an audit append.
type batcher interface {
	SendBatch(ctx context.Context, b *batch) error
}

// putRun collects consecutive plain state puts of an audit batch (see
// plainPut) and applies them in two statements whatever their number:
// their keys locked first, in sorted order (as UpdateStates does), then
// written, the last value given for a key winning.
type putRun []*store.PutStateEffect

// flush applies the puts collected and empties the run. An error aborts
// the transaction (the whole batch fails).
func (r *putRun) flush(ctx context.Context, q batcher) error {
	if len(*r) == 0 {
		return nil
	}
	b := &batch{}
	r.queue(b)
	if err := q.SendBatch(ctx, b); err != nil {
		return fmt.Errorf("state puts: %w", err)
	}
	return nil
}

// lockStatesSQL takes the key locks of UpdateState for the keys $2 and
// $3 (one array each, in the order to lock them).
const lockStatesSQL = `SELECT pg_advisory_xact_lock($1, hashtext(ns || '/' || key)) FROM unnest($2::text[], $3::text[]) AS k(ns, key)`

// putStatesSQL writes the rows $1, $2, $3, $4 (no key twice).
const putStatesSQL = `INSERT INTO state (ns, key, value, full_key) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
	ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value`

// queue adds the run's statements to b and empties the run.
func (r *putRun) queue(b *batch) {
	run := *r
	if len(run) == 0 {
		return
	}
	*r = run[:0]
	// The last put of each key, in key order: the order the locks are
	// taken in, and a key at most once in the one INSERT.
	keys := make([]*store.PutStateEffect, len(run))
	for i, e := range run {
		keys[len(run)-1-i] = e // reversed: the stable sort keeps the last put of a key first
	}
	slices.SortStableFunc(keys, func(a, b *store.PutStateEffect) int {
		return cmp.Or(cmp.Compare(a.NS, b.NS), cmp.Compare(a.Key, b.Key))
	})
	keys = slices.CompactFunc(keys, func(a, b *store.PutStateEffect) bool { return a.NS == b.NS && a.Key == b.Key })
	ns, key, val, full := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, e := range keys {
		key[i], full[i] = stateKey(e.Key)
		ns[i], val[i] = e.NS, string(e.Value)
	}
	b.Queue(lockStatesSQL, stateClass, ns, key)
	b.Queue(putStatesSQL, ns, key, val, full)
}
