package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/overseer-dev/overseer/internal/store"
)

// bumpRulesVersion must run in every transaction that changes user_rules.
const bumpRulesVersion = `UPDATE counters SET value = value + 1 WHERE name = 'rules_version'`

// ListUserRules implements store.RuleStore. A rule has expired when its
// ExpiresAt is not after now. Rules with equal positions keep the order in
// which they were first put.
func (d *DB) ListUserRules(ctx context.Context, now time.Time) ([]store.UserRule, error) {
	var out []store.UserRule
	err := d.read(ctx, "list user rules", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, position, rule, origin, created_by, created_at, expires_at
			FROM user_rules WHERE expires_at = '' OR expires_at > ? ORDER BY position, rowid`, fmtTime(now))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				r                 store.UserRule
				rule, cat, expire string
			)
			if err := rows.Scan(&r.ID, &r.Position, &rule, &r.Origin, &r.CreatedBy, &cat, &expire); err != nil {
				return err
			}
			r.Rule = json.RawMessage(rule)
			if r.CreatedAt, err = parseTime(cat); err != nil {
				return fmt.Errorf("rule %q: %w", r.ID, err)
			}
			if r.ExpiresAt, err = parseTime(expire); err != nil {
				return fmt.Errorf("rule %q: %w", r.ID, err)
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PutUserRule implements store.RuleStore. A zero Position places a new rule
// after every other rule and leaves a replaced rule where it was; r.Position
// is set to the position stored. The rule must be valid JSON.
func (d *DB) PutUserRule(ctx context.Context, r *store.UserRule) error {
	return d.write(ctx, "put user rule", func(tx *sql.Tx) error { return putUserRule(ctx, tx, r) })
}

// putUserRule is PutUserRule inside tx.
func putUserRule(ctx context.Context, tx *sql.Tx, r *store.UserRule) error {
	if r == nil || r.ID == "" {
		return errors.New("sqlite: put user rule: missing id")
	}
	if !json.Valid(r.Rule) {
		return fmt.Errorf("sqlite: put user rule %q: rule is not valid JSON", r.ID)
	}
	pos := r.Position
	if pos == 0 {
		err := tx.QueryRowContext(ctx, `SELECT position FROM user_rules WHERE id = ?`, r.ID).Scan(&pos)
		if errors.Is(err, sql.ErrNoRows) {
			err = tx.QueryRowContext(ctx, `SELECT coalesce(max(position), 0) + 1 FROM user_rules`).Scan(&pos)
		}
		if err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO user_rules (id, position, rule, origin, created_by, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET position = excluded.position, rule = excluded.rule, origin = excluded.origin,
			created_by = excluded.created_by, created_at = excluded.created_at, expires_at = excluded.expires_at`,
		r.ID, pos, string(r.Rule), r.Origin, r.CreatedBy, fmtTime(r.CreatedAt), fmtOptTime(r.ExpiresAt)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, bumpRulesVersion); err != nil {
		return err
	}
	r.Position = pos
	return nil
}

// DeleteUserRule implements store.RuleStore; a missing id is ErrNotFound.
func (d *DB) DeleteUserRule(ctx context.Context, id string) error {
	return d.write(ctx, "delete user rule", func(tx *sql.Tx) error {
		_, err := deleteUserRule(ctx, tx, id)
		return err
	})
}

// deleteUserRule is DeleteUserRule inside tx; it returns the rule deleted.
func deleteUserRule(ctx context.Context, tx *sql.Tx, id string) (*store.UserRule, error) {
	var (
		r            = store.UserRule{ID: id}
		rule, cat, x string
	)
	err := tx.QueryRowContext(ctx, `SELECT position, rule, origin, created_by, created_at, expires_at
		FROM user_rules WHERE id = ?`, id).Scan(&r.Position, &rule, &r.Origin, &r.CreatedBy, &cat, &x)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("rule %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	r.Rule = json.RawMessage(rule)
	r.CreatedAt, _ = parseTime(cat)
	r.ExpiresAt, _ = parseTime(x)
	if _, err := tx.ExecContext(ctx, `DELETE FROM user_rules WHERE id = ?`, id); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, bumpRulesVersion); err != nil {
		return nil, err
	}
	return &r, nil
}

// RulesVersion implements store.RuleStore. It starts at 0 and grows by one
// with every change of the user layer, whichever process made it.
func (d *DB) RulesVersion(ctx context.Context) (int64, error) {
	var v int64
	err := d.read(ctx, "rules version", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT value FROM counters WHERE name = 'rules_version'`).Scan(&v)
	})
	return v, err
}
