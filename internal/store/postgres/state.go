package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/overseer-dev/overseer/internal/store"
)

// GetState implements store.StateStore.
func (d *DB) GetState(ctx context.Context, ns, key string) ([]byte, error) {
	var v string
	err := d.readOne(ctx, "get state", func(q querier) error {
		err := q.QueryRow(ctx, `SELECT value FROM state WHERE ns = $1 AND key = $2`, ns, key).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("state %s/%s: %w", ns, key, store.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return []byte(v), nil
}

// UpdateState implements store.StateStore. The key is locked (an advisory
// lock on its hash, which also serialises the first writes of a key that
// does not exist yet) for the transaction, so concurrent updates from any
// instance apply one after the other. fn must be quick and must not call
// back into the store. A value fn returns must be valid JSON.
func (d *DB) UpdateState(ctx context.Context, ns, key string, fn func(old []byte) ([]byte, error)) error {
	if fn == nil {
		return errors.New("postgres: update state: nil fn")
	}
	return d.write(ctx, "update state", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3))`, stateClass, ns, key); err != nil {
			return err
		}
		var (
			old []byte
			v   string
		)
		err := tx.QueryRow(ctx, `SELECT value FROM state WHERE ns = $1 AND key = $2`, ns, key).Scan(&v)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			old = []byte(v)
		}
		nv, err := fn(old)
		if err != nil {
			return fmt.Errorf("state %s/%s: %w", ns, key, err)
		}
		if nv == nil {
			_, err = tx.Exec(ctx, `DELETE FROM state WHERE ns = $1 AND key = $2`, ns, key)
			return err
		}
		if !json.Valid(nv) {
			return fmt.Errorf("state %s/%s: value is not valid JSON", ns, key)
		}
		_, err = tx.Exec(ctx, `INSERT INTO state (ns, key, value) VALUES ($1, $2, $3)
			ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value`, ns, key, string(nv))
		return err
	})
}

// ListState implements store.StateStore. The map is empty, not nil, when
// the namespace holds nothing.
func (d *DB) ListState(ctx context.Context, ns string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := d.readOne(ctx, "list state", func(q querier) error {
		rows, err := q.Query(ctx, `SELECT key, value FROM state WHERE ns = $1`, ns)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				return err
			}
			out[k] = []byte(v)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
