package builtin

import (
	"context"
	"database/sql"
	"errors"
)

// TEMPORARY until sqlguard.RunReadOnly / ExecCAS land.
func queryReadOnly(ctx context.Context, db *sql.DB, q string, maxRows int, args ...any) ([]string, [][]any, bool, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, false, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, false, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, false, err
	}
	var out [][]any
	more := false
	for rows.Next() {
		if len(out) >= maxRows {
			more = true
			break
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, false, err
		}
		out = append(out, vals)
	}
	return cols, out, more, rows.Err()
}

func execCAS(ctx context.Context, db *sql.DB, table, idCol, verCol string, id any, version int64, set map[string]any) error {
	return errors.New("not yet")
}
