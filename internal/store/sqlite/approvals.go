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

// validStatus reports whether s is one of the known approval statuses.
func validStatus(s store.ApprovalStatus) bool {
	switch s {
	case store.StatusPending, store.StatusApproved, store.StatusDenied, store.StatusExpired, store.StatusAborted,
		store.StatusWithdrawn:
		return true
	}
	return false
}

// CreateApproval implements store.ApprovalStore. An empty Status is stored
// (and set in a) as pending. Creating an ID that exists is an error.
func (d *DB) CreateApproval(ctx context.Context, a *store.Approval) error {
	return d.write(ctx, "create approval", func(tx *sql.Tx) error { return createApproval(ctx, tx, a) })
}

// createApproval is CreateApproval inside tx.
func createApproval(ctx context.Context, tx *sql.Tx, a *store.Approval) error {
	if a == nil || a.ID == "" {
		return errors.New("sqlite: create approval: missing id")
	}
	status := a.Status
	if status == "" {
		status = store.StatusPending
	}
	if !validStatus(status) {
		return fmt.Errorf("sqlite: create approval %q: unknown status %q", a.ID, status)
	}
	body := *a
	body.Status, body.Answer, body.Answers, body.Unaudited = "", nil, nil, ""
	bodyJSON, err := json.Marshal(&body)
	if err != nil {
		return fmt.Errorf("sqlite: create approval %q: %w", a.ID, err)
	}
	// Refuse what could not be read back (an unset level, for one, encodes
	// but does not decode): a stored approval must always be readable.
	if err := json.Unmarshal(bodyJSON, new(store.Approval)); err != nil {
		return fmt.Errorf("sqlite: create approval %q: does not round-trip through JSON: %w", a.ID, err)
	}
	var answerJSON any // NULL unless a terminal answer is given
	if a.Answer != nil {
		b, err := json.Marshal(a.Answer)
		if err != nil {
			return fmt.Errorf("sqlite: create approval %q: %w", a.ID, err)
		}
		answerJSON = string(b)
	}
	answers := make([]string, len(a.Answers))
	for i := range a.Answers {
		b, err := json.Marshal(&a.Answers[i])
		if err != nil {
			return fmt.Errorf("sqlite: create approval %q: %w", a.ID, err)
		}
		answers[i] = string(b)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM approvals WHERE id = ?`, a.ID).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("approval %q already exists", a.ID)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO approvals
		(id, status, created_at, deadline, args_hash, session, action_id, body, answer)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, string(status), fmtTime(a.CreatedAt), fmtOptTime(a.Deadline), a.ArgsHash, a.Session, a.ActionID,
		string(bodyJSON), answerJSON); err != nil {
		return err
	}
	for i, ans := range answers {
		if _, err := tx.ExecContext(ctx, `INSERT INTO approval_answers (approval_id, n, answer) VALUES (?, ?, ?)`,
			a.ID, i+1, ans); err != nil {
			return err
		}
	}
	a.Status = status
	return nil
}

// GetApproval implements store.ApprovalStore.
func (d *DB) GetApproval(ctx context.Context, id string) (*store.Approval, error) {
	var out *store.Approval
	err := d.read(ctx, "get approval", func(tx *sql.Tx) error {
		var err error
		out, err = getApproval(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListApprovals implements store.ApprovalStore: oldest first.
func (d *DB) ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]*store.Approval, error) {
	var (
		where []string
		args  []any
	)
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(f.Status))
	}
	if f.ArgsHash != "" {
		where, args = append(where, "args_hash = ?"), append(args, f.ArgsHash)
	}
	if f.Session != "" {
		where, args = append(where, "session = ?"), append(args, f.Session)
	}
	tail := ""
	if len(where) > 0 {
		tail += " WHERE " + strings.Join(where, " AND ")
	}
	tail += " ORDER BY created_at, rowid"
	if f.Limit > 0 {
		tail += " LIMIT ?"
		args = append(args, f.Limit)
	}
	sel := `SELECT id, status, body, answer FROM approvals` + tail
	// The answers of the same approvals, in the same snapshot, in one query.
	ansQ := `SELECT approval_id, answer FROM approval_answers WHERE approval_id IN (SELECT id FROM approvals` + tail +
		`) ORDER BY approval_id, n`
	var out []*store.Approval
	err := d.read(ctx, "list approvals", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, sel, args...)
		if err != nil {
			return err
		}
		byID := map[string]*store.Approval{}
		for rows.Next() {
			a, err := scanApproval(rows)
			if err != nil {
				rows.Close()
				return err
			}
			out = append(out, a)
			byID[a.ID] = a
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(out) == 0 {
			return nil
		}
		arows, err := tx.QueryContext(ctx, ansQ, args...)
		if err != nil {
			return err
		}
		defer arows.Close()
		for arows.Next() {
			var id, js string
			if err := arows.Scan(&id, &js); err != nil {
				return err
			}
			a := byID[id]
			if a == nil {
				return fmt.Errorf("answer of unlisted approval %q", id)
			}
			var ans store.Answer
			if err := json.Unmarshal([]byte(js), &ans); err != nil {
				return fmt.Errorf("approval %q: bad answer: %w", id, err)
			}
			a.Answers = append(a.Answers, ans)
		}
		return arows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AnswerApproval implements store.ApprovalStore. The read of the current
// status and the update run in one BEGIN IMMEDIATE transaction, so the first
// terminal answer wins even when several processes answer at once. An
// unknown status is an error and nothing is recorded.
func (d *DB) AnswerApproval(ctx context.Context, id string, status store.ApprovalStatus, ans store.Answer) (*store.Approval, bool, error) {
	var (
		out     *store.Approval
		applied bool
	)
	err := d.write(ctx, "answer approval", func(tx *sql.Tx) error {
		var err error
		out, applied, err = answerApproval(ctx, tx, id, status, ans)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, applied, nil
}

// answerApproval is AnswerApproval inside tx.
func answerApproval(ctx context.Context, tx *sql.Tx, id string, status store.ApprovalStatus, ans store.Answer) (*store.Approval, bool, error) {
	if status != "" && !validStatus(status) {
		return nil, false, fmt.Errorf("sqlite: answer approval %q: unknown status %q", id, status)
	}
	var cur string
	err := tx.QueryRowContext(ctx, `SELECT status FROM approvals WHERE id = ?`, id).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, fmt.Errorf("approval %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, false, err
	}
	applied := store.ApprovalStatus(cur) == store.StatusPending && status.Terminal()
	ans.Applied = applied
	js, err := json.Marshal(&ans)
	if err != nil {
		return nil, false, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO approval_answers (approval_id, n, answer)
		VALUES (?, (SELECT coalesce(max(n), 0) + 1 FROM approval_answers WHERE approval_id = ?), ?)`,
		id, id, string(js)); err != nil {
		return nil, false, err
	}
	if applied {
		res, err := tx.ExecContext(ctx, `UPDATE approvals SET status = ?, answer = ? WHERE id = ? AND status = ?`,
			string(status), string(js), id, string(store.StatusPending))
		if err != nil {
			return nil, false, err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return nil, false, fmt.Errorf("approval %q changed under the write lock (rows %d, %v)", id, n, err)
		}
	}
	out, err := getApproval(ctx, tx, id)
	return out, applied, err
}

type rowScanner interface{ Scan(dest ...any) error }

func scanApproval(row rowScanner) (*store.Approval, error) {
	var (
		id, status, body string
		answer           sql.NullString
	)
	if err := row.Scan(&id, &status, &body, &answer); err != nil {
		return nil, err
	}
	a := new(store.Approval)
	if err := json.Unmarshal([]byte(body), a); err != nil {
		return nil, fmt.Errorf("approval %q: bad stored body: %w", id, err)
	}
	a.ID = id
	a.Status = store.ApprovalStatus(status)
	if answer.Valid {
		a.Answer = new(store.Answer)
		if err := json.Unmarshal([]byte(answer.String), a.Answer); err != nil {
			return nil, fmt.Errorf("approval %q: bad stored answer: %w", id, err)
		}
	}
	return a, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func getApproval(ctx context.Context, q querier, id string) (*store.Approval, error) {
	a, err := scanApproval(q.QueryRowContext(ctx, `SELECT id, status, body, answer FROM approvals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("approval %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, `SELECT answer FROM approval_answers WHERE approval_id = ? ORDER BY n`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var js string
		if err := rows.Scan(&js); err != nil {
			return nil, err
		}
		var ans store.Answer
		if err := json.Unmarshal([]byte(js), &ans); err != nil {
			return nil, fmt.Errorf("approval %q: bad stored answer: %w", id, err)
		}
		a.Answers = append(a.Answers, ans)
	}
	return a, rows.Err()
}
