package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/overseer-dev/overseer/internal/store"
)

// getStateSQL reads one state value.
const getStateSQL = `SELECT value FROM state WHERE ns = ? AND key = ?`

// GetState implements store.StateStore. One statement reads one
// consistent snapshot without a transaction around it, and its prepared
// form is kept: guards read their session's state before every action.
func (d *DB) GetState(ctx context.Context, ns, key string) ([]byte, error) {
	if err := d.check(ctx); err != nil {
		return nil, d.wrap("get state", err)
	}
	stmt, kept, err := d.queryStmt(ctx, getStateSQL)
	if err != nil {
		return nil, d.wrap("get state", err)
	}
	if !kept {
		defer stmt.Close()
	}
	var v string
	err = stmt.QueryRowContext(ctx, ns, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, d.wrap("get state", fmt.Errorf("state %s/%s: %w", ns, key, store.ErrNotFound))
	}
	if err != nil {
		return nil, d.wrap("get state", err)
	}
	return []byte(v), nil
}

// UpdateState implements store.StateStore. fn runs inside the write
// transaction, which holds the database's write lock: it must be quick and
// must not call back into the store. A value fn returns must be valid JSON.
// An error from fn is returned (wrapped) and nothing changes.
func (d *DB) UpdateState(ctx context.Context, ns, key string, fn func(old []byte) ([]byte, error)) error {
	if fn == nil {
		return errors.New("sqlite: update state: nil fn")
	}
	return d.write(ctx, "update state", func(tx *sql.Tx) error {
		var (
			old []byte
			v   string
		)
		err := tx.QueryRowContext(ctx, `SELECT value FROM state WHERE ns = ? AND key = ?`, ns, key).Scan(&v)
		switch {
		case errors.Is(err, sql.ErrNoRows):
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
			_, err = tx.ExecContext(ctx, `DELETE FROM state WHERE ns = ? AND key = ?`, ns, key)
			return err
		}
		if !json.Valid(nv) {
			return fmt.Errorf("state %s/%s: value is not valid JSON", ns, key)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO state (ns, key, value) VALUES (?, ?, ?)
			ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value`, ns, key, string(nv))
		return err
	})
}

// ListState implements store.StateStore. The map is empty, not nil, when
// the namespace holds nothing.
func (d *DB) ListState(ctx context.Context, ns string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := d.read(ctx, "list state", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT key, value FROM state WHERE ns = ?`, ns)
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

// UpdateStates implements store.StateStore: UpdateState for several keys in
// one write transaction.
func (d *DB) UpdateStates(ctx context.Context, ns string, keys []string, fn func(key string, old []byte) ([]byte, error)) error {
	if fn == nil {
		return errors.New("sqlite: update states: nil fn")
	}
	if len(keys) == 0 {
		return nil
	}
	return d.write(ctx, "update states", func(tx *sql.Tx) error {
		for _, key := range keys {
			var (
				old []byte
				v   string
			)
			err := tx.QueryRowContext(ctx, `SELECT value FROM state WHERE ns = ? AND key = ?`, ns, key).Scan(&v)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return err
			default:
				old = []byte(v)
			}
			nv, err := fn(key, old)
			if err != nil {
				return fmt.Errorf("state %s/%s: %w", ns, key, err)
			}
			if nv == nil {
				if _, err := tx.ExecContext(ctx, `DELETE FROM state WHERE ns = ? AND key = ?`, ns, key); err != nil {
					return err
				}
				continue
			}
			if !json.Valid(nv) {
				return fmt.Errorf("state %s/%s: value is not valid JSON", ns, key)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO state (ns, key, value) VALUES (?, ?, ?)
				ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value`, ns, key, string(nv)); err != nil {
				return err
			}
		}
		return nil
	})
}

// putState applies a PutStateEffect inside the audit write's transaction.
func putState(ctx context.Context, tx *sql.Tx, e *store.PutStateEffect) error {
	if !json.Valid(e.Value) {
		return fmt.Errorf("state %s/%s: value is not valid JSON", e.NS, e.Key)
	}
	if e.IfAbsent {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM state WHERE ns = ? AND key = ?`, e.NS, e.Key).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("state %s/%s: %w", e.NS, e.Key, store.ErrExists)
		}
	}
	_, err := tx.ExecContext(ctx, putStateSQL, e.NS, e.Key, string(e.Value))
	return err
}

// putStateSQL sets one state key.
const putStateSQL = `INSERT INTO state (ns, key, value) VALUES (?, ?, ?)
	ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value`
