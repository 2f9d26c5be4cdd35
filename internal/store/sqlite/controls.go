package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/overseer-dev/overseer/internal/store"
)

// bumpControlsVersion runs in every transaction that changes controls.
const bumpControlsVersion = `UPDATE counters SET value = value + 1 WHERE name = 'controls_version'`

// ListControls implements store.ControlStore.
func (d *DB) ListControls(ctx context.Context, kind string) ([]store.Control, error) {
	var out []store.Control
	err := d.read(ctx, "list controls", func(tx *sql.Tx) error {
		out = nil
		q := `SELECT id, kind, body, created_by, created_at, updated_at FROM controls`
		var args []any
		if kind != "" {
			q += ` WHERE kind = ?`
			args = append(args, kind)
		}
		rows, err := tx.QueryContext(ctx, q+` ORDER BY created_at, id`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c, err := scanControl(rows.Scan)
			if err != nil {
				return err
			}
			out = append(out, *c)
		}
		return rows.Err()
	})
	return out, err
}

// ControlsVersion implements store.ControlStore.
func (d *DB) ControlsVersion(ctx context.Context) (int64, error) {
	var v int64
	err := d.read(ctx, "controls version", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT value FROM counters WHERE name = 'controls_version'`).Scan(&v)
	})
	return v, err
}

func scanControl(scan func(...any) error) (*store.Control, error) {
	var (
		c                  store.Control
		body, created, upd string
	)
	if err := scan(&c.ID, &c.Kind, &body, &c.CreatedBy, &created, &upd); err != nil {
		return nil, err
	}
	c.Body = json.RawMessage(body)
	var err error
	if c.CreatedAt, err = parseTime(created); err != nil {
		return nil, fmt.Errorf("control %s: %w", c.ID, err)
	}
	if c.UpdatedAt, err = parseTime(upd); err != nil {
		return nil, fmt.Errorf("control %s: %w", c.ID, err)
	}
	return &c, nil
}

func getControl(ctx context.Context, tx *sql.Tx, id string) (*store.Control, error) {
	row := tx.QueryRowContext(ctx, `SELECT id, kind, body, created_by, created_at, updated_at FROM controls WHERE id = ?`, id)
	c, err := scanControl(row.Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return c, err
}

// putControl inserts or replaces c, returning the control replaced. A
// replacement keeps the kind, author and creation time it had.
func putControl(ctx context.Context, tx *sql.Tx, c *store.Control) (*store.Control, error) {
	if c == nil || strings.TrimSpace(c.ID) == "" || strings.TrimSpace(c.Kind) == "" {
		return nil, errors.New("a control needs an id and a kind")
	}
	if !json.Valid(c.Body) {
		return nil, fmt.Errorf("control %s: the body is not valid JSON", c.ID)
	}
	old, err := getControl(ctx, tx, c.ID)
	if err != nil {
		return nil, err
	}
	if old != nil {
		if old.Kind != c.Kind {
			return nil, fmt.Errorf("control %s is a %s, not a %s", c.ID, old.Kind, c.Kind)
		}
		c.CreatedBy, c.CreatedAt = old.CreatedBy, old.CreatedAt
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO controls (id, kind, body, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at`,
		c.ID, c.Kind, string(c.Body), c.CreatedBy, fmtTime(c.CreatedAt), fmtTime(c.UpdatedAt)); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, bumpControlsVersion); err != nil {
		return nil, err
	}
	return old, nil
}

// deleteControl deletes control id of kind and returns it.
func deleteControl(ctx context.Context, tx *sql.Tx, id, kind string) (*store.Control, error) {
	old, err := getControl(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if old == nil || kind != "" && old.Kind != kind {
		return nil, fmt.Errorf("no %s %q: %w", kind, id, store.ErrNotFound)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM controls WHERE id = ?`, id); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, bumpControlsVersion); err != nil {
		return nil, err
	}
	return old, nil
}
