package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/overseer-dev/overseer/internal/store"
)

// lockRules serialises changes of the user layer across instances (the
// position a new rule gets depends on the others), and bumps the version
// readers reload on; the change is announced on commit.
func lockRules(ctx context.Context, tx querier) error {
	if _, err := tx.Exec(ctx, `UPDATE counters SET value = value + 1 WHERE name = 'rules_version'`); err != nil {
		return err
	}
	return notify(ctx, tx, changeRules, "")
}

// ListUserRules implements store.RuleStore. A rule has expired when its
// ExpiresAt is not after now. Rules with equal positions keep the order in
// which they were first put.
func (d *DB) ListUserRules(ctx context.Context, now time.Time) ([]store.UserRule, error) {
	var out []store.UserRule
	err := d.readOne(ctx, "list user rules", func(q querier) error {
		rows, err := q.Query(ctx, `SELECT id, position, rule, origin, created_by, created_ns, expires_ns
			FROM user_rules WHERE expires_ns = 0 OR expires_ns > $1 ORDER BY position, ord`, now.UnixNano())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				r        store.UserRule
				rule     string
				cns, ens int64
			)
			if err := rows.Scan(&r.ID, &r.Position, &rule, &r.Origin, &r.CreatedBy, &cns, &ens); err != nil {
				return err
			}
			r.Rule = json.RawMessage(rule)
			r.CreatedAt, r.ExpiresAt = fromNanos(cns), fromNanos(ens)
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
	return d.write(ctx, "put user rule", func(tx *tx) error { return putUserRule(ctx, tx, r) })
}

func putUserRule(ctx context.Context, tx querier, r *store.UserRule) error {
	if r == nil || r.ID == "" {
		return errors.New("postgres: put user rule: missing id")
	}
	if !json.Valid(r.Rule) {
		return fmt.Errorf("postgres: put user rule %q: rule is not valid JSON", r.ID)
	}
	// The counter's row lock is held from here to the commit.
	if err := lockRules(ctx, tx); err != nil {
		return err
	}
	pos := int64(r.Position)
	if pos == 0 {
		err := tx.QueryRow(ctx, `SELECT position FROM user_rules WHERE id = $1`, r.ID).Scan(&pos)
		if errors.Is(err, errNoRows) {
			err = tx.QueryRow(ctx, `SELECT coalesce(max(position), 0) + 1 FROM user_rules`).Scan(&pos)
		}
		if err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO user_rules (id, position, rule, origin, created_by, created_ns, expires_ns)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (id) DO UPDATE SET position = excluded.position, rule = excluded.rule, origin = excluded.origin,
			created_by = excluded.created_by, created_ns = excluded.created_ns, expires_ns = excluded.expires_ns`,
		r.ID, pos, string(r.Rule), r.Origin, r.CreatedBy, nanos(r.CreatedAt), nanos(r.ExpiresAt)); err != nil {
		return err
	}
	r.Position = int(pos)
	return nil
}

// DeleteUserRule implements store.RuleStore; a missing id is ErrNotFound.
func (d *DB) DeleteUserRule(ctx context.Context, id string) error {
	return d.write(ctx, "delete user rule", func(tx *tx) error {
		_, err := deleteUserRule(ctx, tx, id)
		return err
	})
}

func deleteUserRule(ctx context.Context, tx querier, id string) (*store.UserRule, error) {
	var (
		r        = store.UserRule{ID: id}
		rule     string
		pos      int64
		cns, ens int64
	)
	err := tx.QueryRow(ctx, `DELETE FROM user_rules WHERE id = $1
		RETURNING position, rule, origin, created_by, created_ns, expires_ns`, id).
		Scan(&pos, &rule, &r.Origin, &r.CreatedBy, &cns, &ens)
	if errors.Is(err, errNoRows) {
		return nil, fmt.Errorf("rule %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	r.Position, r.Rule = int(pos), json.RawMessage(rule)
	r.CreatedAt, r.ExpiresAt = fromNanos(cns), fromNanos(ens)
	if err := lockRules(ctx, tx); err != nil {
		return nil, err
	}
	return &r, nil
}

// RulesVersion implements store.RuleStore. It starts at 0 and grows with
// every change of the user layer, whichever instance made it.
func (d *DB) RulesVersion(ctx context.Context) (int64, error) {
	var v int64
	err := d.readOne(ctx, "rules version", func(q querier) error {
		return q.QueryRow(ctx, `SELECT value FROM counters WHERE name = 'rules_version'`).Scan(&v)
	})
	return v, err
}
