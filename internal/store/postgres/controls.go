package postgres

// The paused agents (store.PauseStore), the hybrid controls: rate limits
// and budget caps (store.ControlStore), and StateStore.UpdateStates.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/overseer-dev/overseer/internal/store"
)

var migration2 = migration{2, "paused agents and hybrid controls", []string{
	`CREATE TABLE agent_pauses (
		agent  text PRIMARY KEY,
		reason text NOT NULL,
		by     text NOT NULL,
		at_ns  bigint NOT NULL
	)`,
	`INSERT INTO counters (name, value) VALUES ('pauses_version', 0)`,
	`CREATE TABLE controls (
		id         text PRIMARY KEY,
		kind       text NOT NULL,
		body       text NOT NULL,
		created_by text NOT NULL,
		created_ns bigint NOT NULL,
		updated_ns bigint NOT NULL
	)`,
	`INSERT INTO counters (name, value) VALUES ('controls_version', 0)`,
}}

// bump bumps a version counter (its row lock serialises the changes it
// counts) and announces the change: pauses_version as store.ChangePauses,
// controls_version as store.ChangeControls.
func bump(ctx context.Context, q querier, name string) error {
	if _, err := q.Exec(ctx, `UPDATE counters SET value = value + 1 WHERE name = $1`, name); err != nil {
		return err
	}
	return notify(ctx, q, strings.TrimSuffix(name, "_version"), "")
}

func (d *DB) counter(ctx context.Context, op, name string) (int64, error) {
	var v int64
	err := d.readOne(ctx, op, func(q querier) error {
		return q.QueryRow(ctx, `SELECT value FROM counters WHERE name = $1`, name).Scan(&v)
	})
	return v, err
}

// ListAgentPauses implements store.PauseStore.
func (d *DB) ListAgentPauses(ctx context.Context) ([]store.AgentPause, error) {
	var out []store.AgentPause
	err := d.readOne(ctx, "list agent pauses", func(q querier) error {
		rows, err := q.Query(ctx, `SELECT agent, reason, by, at_ns FROM agent_pauses ORDER BY agent`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				p  store.AgentPause
				at int64
			)
			if err := rows.Scan(&p.Agent, &p.Reason, &p.By, &at); err != nil {
				return err
			}
			p.At = fromNanos(at)
			out = append(out, p)
		}
		return rows.Err()
	})
	return out, err
}

// PausesVersion implements store.PauseStore.
func (d *DB) PausesVersion(ctx context.Context) (int64, error) {
	return d.counter(ctx, "pauses version", "pauses_version")
}

func getPause(ctx context.Context, q querier, agent string) (*store.AgentPause, error) {
	p := store.AgentPause{Agent: agent}
	var at int64
	err := q.QueryRow(ctx, `SELECT reason, by, at_ns FROM agent_pauses WHERE agent = $1 FOR UPDATE`, agent).Scan(&p.Reason, &p.By, &at)
	if errors.Is(err, errNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p.At = fromNanos(at)
	return &p, nil
}

func pauseAgent(ctx context.Context, q querier, p *store.AgentPause) (*store.AgentPause, error) {
	if p == nil || strings.TrimSpace(p.Agent) == "" {
		return nil, errors.New("a pause must name an agent")
	}
	if err := bump(ctx, q, "pauses_version"); err != nil { // locks the pauses first
		return nil, err
	}
	old, err := getPause(ctx, q, p.Agent)
	if err != nil {
		return nil, err
	}
	if _, err := q.Exec(ctx, `INSERT INTO agent_pauses (agent, reason, by, at_ns) VALUES ($1, $2, $3, $4)
		ON CONFLICT (agent) DO UPDATE SET reason = excluded.reason, by = excluded.by, at_ns = excluded.at_ns`,
		p.Agent, p.Reason, p.By, nanos(p.At)); err != nil {
		return nil, err
	}
	return old, nil
}

func resumeAgent(ctx context.Context, q querier, agent string) (*store.AgentPause, error) {
	if err := bump(ctx, q, "pauses_version"); err != nil {
		return nil, err
	}
	old, err := getPause(ctx, q, agent)
	if err != nil {
		return nil, err
	}
	if old == nil {
		return nil, fmt.Errorf("agent %q is not paused: %w", agent, store.ErrNotFound)
	}
	if _, err := q.Exec(ctx, `DELETE FROM agent_pauses WHERE agent = $1`, agent); err != nil {
		return nil, err
	}
	return old, nil
}

// ListControls implements store.ControlStore.
func (d *DB) ListControls(ctx context.Context, kind string) ([]store.Control, error) {
	var out []store.Control
	err := d.readOne(ctx, "list controls", func(q querier) error {
		sql := `SELECT id, kind, body, created_by, created_ns, updated_ns FROM controls`
		var args []any
		if kind != "" {
			sql += ` WHERE kind = $1`
			args = append(args, kind)
		}
		rows, err := q.Query(ctx, sql+` ORDER BY created_ns, id`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c, err := scanControl(rows)
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
	return d.counter(ctx, "controls version", "controls_version")
}

func scanControl(row scanner) (*store.Control, error) {
	var (
		c        store.Control
		body     string
		cns, uns int64
	)
	if err := row.Scan(&c.ID, &c.Kind, &body, &c.CreatedBy, &cns, &uns); err != nil {
		return nil, err
	}
	c.Body, c.CreatedAt, c.UpdatedAt = json.RawMessage(body), fromNanos(cns), fromNanos(uns)
	return &c, nil
}

func getControl(ctx context.Context, q querier, id string) (*store.Control, error) {
	c, err := scanControl(q.QueryRow(ctx, `SELECT id, kind, body, created_by, created_ns, updated_ns FROM controls WHERE id = $1`, id))
	if errors.Is(err, errNoRows) {
		return nil, nil
	}
	return c, err
}

func putControl(ctx context.Context, q querier, c *store.Control) (*store.Control, error) {
	if c == nil || strings.TrimSpace(c.ID) == "" || strings.TrimSpace(c.Kind) == "" {
		return nil, errors.New("a control needs an id and a kind")
	}
	if !json.Valid(c.Body) {
		return nil, fmt.Errorf("control %s: the body is not valid JSON", c.ID)
	}
	if err := bump(ctx, q, "controls_version"); err != nil {
		return nil, err
	}
	old, err := getControl(ctx, q, c.ID)
	if err != nil {
		return nil, err
	}
	if old != nil {
		if old.Kind != c.Kind {
			return nil, fmt.Errorf("control %s is a %s, not a %s", c.ID, old.Kind, c.Kind)
		}
		c.CreatedBy, c.CreatedAt = old.CreatedBy, old.CreatedAt
	}
	if _, err := q.Exec(ctx, `INSERT INTO controls (id, kind, body, created_by, created_ns, updated_ns) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO UPDATE SET body = excluded.body, updated_ns = excluded.updated_ns`,
		c.ID, c.Kind, string(c.Body), c.CreatedBy, nanos(c.CreatedAt), nanos(c.UpdatedAt)); err != nil {
		return nil, err
	}
	return old, nil
}

func deleteControl(ctx context.Context, q querier, id, kind string) (*store.Control, error) {
	if err := bump(ctx, q, "controls_version"); err != nil {
		return nil, err
	}
	old, err := getControl(ctx, q, id)
	if err != nil {
		return nil, err
	}
	if old == nil || kind != "" && old.Kind != kind {
		return nil, fmt.Errorf("no %s %q: %w", kind, id, store.ErrNotFound)
	}
	if _, err := q.Exec(ctx, `DELETE FROM controls WHERE id = $1`, id); err != nil {
		return nil, err
	}
	return old, nil
}

// UpdateStates implements store.StateStore: UpdateState for several keys
// in one transaction. The keys are locked first, in sorted order (two
// callers with overlapping keys then cannot deadlock), then updated in the
// order given.
func (d *DB) UpdateStates(ctx context.Context, ns string, keys []string, fn func(key string, old []byte) ([]byte, error)) error {
	if fn == nil {
		return errors.New("postgres: update states: nil fn")
	}
	if len(keys) == 0 {
		return nil
	}
	sorted := append([]string(nil), keys...)
	sort.Strings(sorted)
	return d.write(ctx, "update states", func(tx *tx) error {
		for _, key := range sorted {
			if _, err := tx.Exec(ctx, lockStateSQL, stateClass, ns, storedKey(key)); err != nil {
				return err
			}
		}
		for _, key := range keys {
			var (
				old []byte
				v   string
			)
			sk, full := stateKey(key)
			err := tx.QueryRow(ctx, getStateSQL, ns, sk).Scan(&v)
			switch {
			case errors.Is(err, errNoRows):
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
				if _, err := tx.Exec(ctx, deleteStateSQL, ns, sk); err != nil {
					return err
				}
				continue
			}
			if !json.Valid(nv) {
				return fmt.Errorf("state %s/%s: value is not valid JSON", ns, key)
			}
			if _, err := tx.Exec(ctx, setStateSQL, ns, sk, string(nv), full); err != nil {
				return err
			}
		}
		// The other instances hear of it (a change of the spend is
		// counted against their budget caps at once).
		return notify(ctx, tx, store.ChangeState, ns)
	})
}
