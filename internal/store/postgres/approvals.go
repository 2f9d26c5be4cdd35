package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/overseer-dev/overseer/internal/store"
)

// Change kinds announced on Channel.
const (
	changeApproval = store.ChangeApproval
	changeRules    = store.ChangeRules
)

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
	return d.write(ctx, "create approval", func(tx *tx) error { return createApproval(ctx, tx, a) })
}

func createApproval(ctx context.Context, tx querier, a *store.Approval) error {
	if a == nil || a.ID == "" {
		return errors.New("postgres: create approval: missing id")
	}
	status := a.Status
	if status == "" {
		status = store.StatusPending
	}
	if !validStatus(status) {
		return fmt.Errorf("postgres: create approval %q: unknown status %q", a.ID, status)
	}
	body := *a
	body.Status, body.Answer, body.Answers, body.Unaudited = "", nil, nil, ""
	bodyJSON, err := json.Marshal(&body)
	if err != nil {
		return fmt.Errorf("postgres: create approval %q: %w", a.ID, err)
	}
	// Refuse what could not be read back: a stored approval must always be
	// readable.
	if err := json.Unmarshal(bodyJSON, new(store.Approval)); err != nil {
		return fmt.Errorf("postgres: create approval %q: does not round-trip through JSON: %w", a.ID, err)
	}
	var answerJSON *string // NULL unless a terminal answer is given
	if a.Answer != nil {
		b, err := json.Marshal(a.Answer)
		if err != nil {
			return fmt.Errorf("postgres: create approval %q: %w", a.ID, err)
		}
		s := string(b)
		answerJSON = &s
	}
	answers := make([]string, len(a.Answers))
	for i := range a.Answers {
		b, err := json.Marshal(&a.Answers[i])
		if err != nil {
			return fmt.Errorf("postgres: create approval %q: %w", a.ID, err)
		}
		answers[i] = string(b)
	}
	_, err = tx.Exec(ctx, `INSERT INTO approvals
		(id, status, created_ns, deadline_ns, args_hash, session, action_id, body, answer)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		a.ID, string(status), nanos(a.CreatedAt), nanos(a.Deadline), a.ArgsHash, a.Session, a.ActionID, string(bodyJSON), answerJSON)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return fmt.Errorf("approval %q already exists", a.ID)
	}
	if err != nil {
		return err
	}
	for i, ans := range answers {
		if _, err := tx.Exec(ctx, `INSERT INTO approval_answers (approval_id, n, answer) VALUES ($1, $2, $3)`,
			a.ID, i+1, ans); err != nil {
			return err
		}
	}
	if err := notify(ctx, tx, changeApproval, a.ID); err != nil {
		return err
	}
	a.Status = status
	return nil
}

// GetApproval implements store.ApprovalStore.
func (d *DB) GetApproval(ctx context.Context, id string) (*store.Approval, error) {
	var out *store.Approval
	err := d.read(ctx, "get approval", func(tx *tx) error {
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
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, cond+" = $"+strconv.Itoa(len(args)))
	}
	if f.Status != "" {
		add("status", string(f.Status))
	}
	if f.ArgsHash != "" {
		add("args_hash", f.ArgsHash)
	}
	if f.Session != "" {
		add("session", f.Session)
	}
	tail := ""
	if len(where) > 0 {
		tail += " WHERE " + strings.Join(where, " AND ")
	}
	tail += " ORDER BY created_ns, ord"
	if f.Limit > 0 {
		args = append(args, f.Limit)
		tail += " LIMIT $" + strconv.Itoa(len(args))
	}
	sel := `SELECT id, status, body, answer FROM approvals` + tail
	ansQ := `SELECT approval_id, answer FROM approval_answers WHERE approval_id IN (SELECT id FROM approvals` + tail +
		`) ORDER BY approval_id, n`
	var out []*store.Approval
	err := d.read(ctx, "list approvals", func(tx *tx) error {
		rows, err := tx.Query(ctx, sel, args...)
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
		arows, err := tx.Query(ctx, ansQ, args...)
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

// AnswerApproval implements store.ApprovalStore. The approval's row is
// locked before its status is read, so the first terminal answer wins even
// when several instances answer at once. An unknown status is an error and
// nothing is recorded.
func (d *DB) AnswerApproval(ctx context.Context, id string, status store.ApprovalStatus, ans store.Answer) (*store.Approval, bool, error) {
	var (
		out     *store.Approval
		applied bool
	)
	err := d.write(ctx, "answer approval", func(tx *tx) error {
		var err error
		out, applied, err = answerApproval(ctx, tx, id, status, ans)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, applied, nil
}

func answerApproval(ctx context.Context, tx querier, id string, status store.ApprovalStatus, ans store.Answer) (*store.Approval, bool, error) {
	if status != "" && !validStatus(status) {
		return nil, false, fmt.Errorf("postgres: answer approval %q: unknown status %q", id, status)
	}
	var cur string
	err := tx.QueryRow(ctx, `SELECT status FROM approvals WHERE id = $1 FOR UPDATE`, id).Scan(&cur)
	if errors.Is(err, errNoRows) {
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
	if _, err := tx.Exec(ctx, `INSERT INTO approval_answers (approval_id, n, answer)
		VALUES ($1, (SELECT coalesce(max(n), 0) + 1 FROM approval_answers WHERE approval_id = $1), $2)`,
		id, string(js)); err != nil {
		return nil, false, err
	}
	if applied {
		tag, err := tx.Exec(ctx, `UPDATE approvals SET status = $1, answer = $2 WHERE id = $3 AND status = $4`,
			string(status), string(js), id, string(store.StatusPending))
		if err != nil {
			return nil, false, err
		}
		if tag.RowsAffected() != 1 {
			return nil, false, fmt.Errorf("approval %q changed under its row lock", id)
		}
	}
	if err := notify(ctx, tx, changeApproval, id); err != nil {
		return nil, false, err
	}
	out, err := getApproval(ctx, tx, id)
	return out, applied, err
}

func scanApproval(row scanner) (*store.Approval, error) {
	var (
		id, status, body string
		answer           *string
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
	if answer != nil {
		a.Answer = new(store.Answer)
		if err := json.Unmarshal([]byte(*answer), a.Answer); err != nil {
			return nil, fmt.Errorf("approval %q: bad stored answer: %w", id, err)
		}
	}
	return a, nil
}

func getApproval(ctx context.Context, q querier, id string) (*store.Approval, error) {
	a, err := scanApproval(q.QueryRow(ctx, `SELECT id, status, body, answer FROM approvals WHERE id = $1`, id))
	if errors.Is(err, errNoRows) {
		return nil, fmt.Errorf("approval %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, `SELECT answer FROM approval_answers WHERE approval_id = $1 ORDER BY n`, id)
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
