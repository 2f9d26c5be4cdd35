package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/overseer-dev/overseer/internal/store"
)

// GetState implements store.StateStore.
func (d *DB) GetState(ctx context.Context, ns, key string) ([]byte, error) {
	var v string
	err := d.readOne(ctx, "get state", func(q querier) error {
		err := q.QueryRow(ctx, getStateSQL, ns, storedKey(key)).Scan(&v)
		if errors.Is(err, errNoRows) {
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
//
// The transaction takes two round trips: BEGIN, the lock and the read are
// pipelined, and so are the write and COMMIT (the lock and the read are
// two statements, so the read sees what the lock's last holder committed).
func (d *DB) UpdateState(ctx context.Context, ns, key string, fn func(old []byte) ([]byte, error)) error {
	if fn == nil {
		return errors.New("postgres: update state: nil fn")
	}
	if err := d.check(ctx); err != nil {
		return d.wrap(ctx, "update state", err)
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return d.wrap(ctx, "update state", err)
	}
	t := &appendTx{conn: conn, open: true}
	defer t.end()
	var (
		old []byte
		v   string
	)
	sk, full := stateKey(key)
	b := &batch{}
	b.Queue(`BEGIN`)
	b.Queue(lockStateSQL, stateClass, ns, sk)
	b.Queue(getStateSQL, ns, sk).QueryRow(func(row *row) error {
		err := row.Scan(&v)
		switch {
		case errors.Is(err, errNoRows):
			return nil
		case err != nil:
			return err
		}
		old = []byte(v)
		return nil
	})
	if err := conn.SendBatch(ctx, b); err != nil {
		return d.wrap(ctx, "update state", err)
	}
	nv, err := fn(old)
	if err != nil {
		return d.wrap(ctx, "update state", fmt.Errorf("state %s/%s: %w", ns, key, err))
	}
	b = &batch{}
	if nv == nil {
		b.Queue(deleteStateSQL, ns, sk)
	} else {
		if !json.Valid(nv) {
			return d.wrap(ctx, "update state", fmt.Errorf("state %s/%s: value is not valid JSON", ns, key))
		}
		b.Queue(setStateSQL, ns, sk, string(nv), full)
	}
	b.Queue(`COMMIT`)
	if err := conn.SendBatch(ctx, b); err != nil {
		return d.wrap(ctx, "update state", err)
	}
	t.open = false
	return nil
}

// ListState implements store.StateStore. The map is empty, not nil, when
// the namespace holds nothing.
func (d *DB) ListState(ctx context.Context, ns string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := d.readOne(ctx, "list state", func(q querier) error {
		rows, err := q.Query(ctx, `SELECT key, value, full_key FROM state WHERE ns = $1`, ns)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k, v, full string
			if err := rows.Scan(&k, &v, &full); err != nil {
				return err
			}
			out[listedKey(k, full)] = []byte(v)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
