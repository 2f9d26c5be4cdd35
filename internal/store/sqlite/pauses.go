package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/overseer-dev/overseer/internal/store"
)

// bumpPausesVersion runs in every transaction that changes agent_pauses.
const bumpPausesVersion = `UPDATE counters SET value = value + 1 WHERE name = 'pauses_version'`

// ListAgentPauses implements store.PauseStore.
func (d *DB) ListAgentPauses(ctx context.Context) ([]store.AgentPause, error) {
	var out []store.AgentPause
	err := d.read(ctx, "list agent pauses", func(tx *sql.Tx) error {
		out = nil
		rows, err := tx.QueryContext(ctx, `SELECT agent, reason, by, at FROM agent_pauses ORDER BY agent`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				p  store.AgentPause
				at string
			)
			if err := rows.Scan(&p.Agent, &p.Reason, &p.By, &at); err != nil {
				return err
			}
			if p.At, err = parseTime(at); err != nil {
				return fmt.Errorf("pause of %s: %w", p.Agent, err)
			}
			out = append(out, p)
		}
		return rows.Err()
	})
	return out, err
}

// PausesVersion implements store.PauseStore.
func (d *DB) PausesVersion(ctx context.Context) (int64, error) {
	var v int64
	err := d.read(ctx, "pauses version", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT value FROM counters WHERE name = 'pauses_version'`).Scan(&v)
	})
	return v, err
}

// getPause returns agent's pause, or nil.
func getPause(ctx context.Context, tx *sql.Tx, agent string) (*store.AgentPause, error) {
	p := store.AgentPause{Agent: agent}
	var at string
	err := tx.QueryRowContext(ctx, `SELECT reason, by, at FROM agent_pauses WHERE agent = ?`, agent).Scan(&p.Reason, &p.By, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if p.At, err = parseTime(at); err != nil {
		return nil, err
	}
	return &p, nil
}

// pauseAgent puts p, returning the pause it replaced (nil if none).
func pauseAgent(ctx context.Context, tx *sql.Tx, p *store.AgentPause) (*store.AgentPause, error) {
	if p == nil || strings.TrimSpace(p.Agent) == "" {
		return nil, errors.New("a pause must name an agent")
	}
	old, err := getPause(ctx, tx, p.Agent)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO agent_pauses (agent, reason, by, at) VALUES (?, ?, ?, ?)
		ON CONFLICT (agent) DO UPDATE SET reason = excluded.reason, by = excluded.by, at = excluded.at`,
		p.Agent, p.Reason, p.By, fmtTime(p.At)); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, bumpPausesVersion); err != nil {
		return nil, err
	}
	return old, nil
}

// resumeAgent deletes agent's pause and returns it; ErrNotFound when it
// has none.
func resumeAgent(ctx context.Context, tx *sql.Tx, agent string) (*store.AgentPause, error) {
	old, err := getPause(ctx, tx, agent)
	if err != nil {
		return nil, err
	}
	if old == nil {
		return nil, fmt.Errorf("agent %q is not paused: %w", agent, store.ErrNotFound)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM agent_pauses WHERE agent = ?`, agent); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, bumpPausesVersion); err != nil {
		return nil, err
	}
	return old, nil
}
