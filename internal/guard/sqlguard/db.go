package sqlguard

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// Errors of RunReadOnly and ExecCAS.
var (
	// ErrConflict means an optimistic write found no row with the expected
	// id and version: someone changed (or removed) the row since it was read.
	// It is never retried silently.
	ErrConflict = errors.New("sqlguard: version conflict: the row changed or is gone")
	// ErrNotUnique means an optimistic write matched more than one row, so
	// the id column does not identify rows; nothing was written.
	ErrNotUnique = errors.New("sqlguard: id matched more than one row")
	// ErrIdentifier means a table or column name is not a plain identifier.
	ErrIdentifier = errors.New("sqlguard: not a plain SQL identifier")
	// ErrUnsupportedDriver means the database driver is neither SQLite nor
	// PostgreSQL, so read-only execution cannot be guaranteed.
	ErrUnsupportedDriver = errors.New("sqlguard: unsupported database driver")
)

// DefaultMaxRows is how many rows RunReadOnly returns at most.
const DefaultMaxRows = 1000

// Result is what a read-only query returned.
type Result struct {
	Columns []string
	Rows    [][]any
	// Truncated is true when the query had more rows than were returned.
	Truncated bool
}

type dialect int

const (
	dialectSQLite dialect = iota + 1
	dialectPostgres
)

// dialectOf tells SQLite and PostgreSQL drivers apart by their package.
func dialectOf(db *sql.DB) (dialect, error) {
	t := reflect.TypeOf(db.Driver())
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pkg := strings.ToLower(t.PkgPath())
	switch {
	case strings.Contains(pkg, "sqlite"):
		return dialectSQLite, nil
	case strings.Contains(pkg, "pgx"), strings.Contains(pkg, "lib/pq"), strings.Contains(pkg, "postgres"):
		return dialectPostgres, nil
	}
	return 0, fmt.Errorf("%w: %s", ErrUnsupportedDriver, t.String())
}

// RunReadOnly runs query in a transaction the database itself keeps
// read-only, and returns at most DefaultMaxRows rows. See RunReadOnlyMax.
func RunReadOnly(ctx context.Context, db *sql.DB, query string, args ...any) (*Result, error) {
	return RunReadOnlyMax(ctx, db, DefaultMaxRows, query, args...)
}

// RunReadOnlyMax runs query in a transaction the database itself keeps
// read-only, so that a statement the classifier misjudged still cannot
// write: on PostgreSQL the transaction is BEGIN READ ONLY (checked with SHOW
// transaction_read_only); on SQLite the connection also gets PRAGMA
// query_only for the duration, and is reset (or discarded) afterwards. The
// transaction is always rolled back. At most maxRows rows are returned
// (maxRows <= 0 means DefaultMaxRows). Other drivers are refused with
// ErrUnsupportedDriver.
func RunReadOnlyMax(ctx context.Context, db *sql.DB, maxRows int, query string, args ...any) (res *Result, err error) {
	if maxRows <= 0 {
		maxRows = DefaultMaxRows
	}
	d, err := dialectOf(db)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlguard: read-only query: %w", err)
	}
	defer conn.Close()
	if d == dialectSQLite {
		if _, err := conn.ExecContext(ctx, "PRAGMA query_only = 1"); err != nil {
			return nil, fmt.Errorf("sqlguard: read-only query: setting query_only: %w", err)
		}
		defer func() {
			if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA query_only = 0"); rerr != nil {
				// Never hand a connection in an unknown state back to the pool.
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			}
		}()
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("sqlguard: read-only query: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if d == dialectPostgres {
		var ro string
		if err := tx.QueryRowContext(ctx, "SHOW transaction_read_only").Scan(&ro); err != nil || ro != "on" {
			return nil, fmt.Errorf("sqlguard: read-only query: the transaction is not read-only (%q, %v)", ro, err)
		}
	}
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlguard: read-only query: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("sqlguard: read-only query: %w", err)
	}
	res = &Result{Columns: cols}
	for rows.Next() {
		if len(res.Rows) == maxRows {
			res.Truncated = true
			break
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("sqlguard: read-only query: %w", err)
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = slices.Clone(b)
			}
		}
		res.Rows = append(res.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlguard: read-only query: %w", err)
	}
	return res, nil
}

var identPattern = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// quoteIdent checks a plain identifier (optionally schema-qualified when
// qualified is true) and quotes it.
func quoteIdent(name string, qualified bool) (string, error) {
	parts := []string{name}
	if qualified {
		parts = strings.Split(name, ".")
		if len(parts) > 2 {
			return "", fmt.Errorf("%w: %q", ErrIdentifier, name)
		}
	}
	for i, p := range parts {
		if !identPattern.MatchString(p) {
			return "", fmt.Errorf("%w: %q", ErrIdentifier, name)
		}
		parts[i] = `"` + p + `"`
	}
	return strings.Join(parts, "."), nil
}

// ExecCAS performs an optimistic-locking update:
//
//	UPDATE table SET col = ?, …, versionCol = versionCol + 1
//	WHERE idCol = ? AND versionCol = ?
//
// in a transaction. If no row matched, the row changed since it was read (or
// is gone) and the error wraps ErrConflict; nothing is retried. If more than
// one row matched, nothing is written and the error wraps ErrNotUnique.
// Names must be plain identifiers (table may be schema.table); they are
// quoted, so give them as stored (lower case for PostgreSQL's unquoted
// names). set may not name idCol or versionCol.
func ExecCAS(ctx context.Context, db *sql.DB, table, idCol, versionCol string, id any, version int64, set map[string]any) error {
	d, err := dialectOf(db)
	if err != nil {
		return err
	}
	query, args, err := casStatement(d, table, idCol, versionCol, id, version, set)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlguard: ExecCAS: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("sqlguard: ExecCAS on %s: %w", table, err)
	}
	affected, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlguard: ExecCAS on %s: %w", table, err)
	}
	switch {
	case affected == 0:
		return fmt.Errorf("%w: %s %s=%v at version %d", ErrConflict, table, idCol, id, version)
	case affected > 1:
		return fmt.Errorf("%w: %s %s=%v matched %d rows", ErrNotUnique, table, idCol, id, affected)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlguard: ExecCAS on %s: commit: %w", table, err)
	}
	return nil
}

// casStatement builds ExecCAS's UPDATE statement and its arguments.
func casStatement(d dialect, table, idCol, versionCol string, id any, version int64, set map[string]any) (string, []any, error) {
	qt, err := quoteIdent(table, true)
	if err != nil {
		return "", nil, err
	}
	qid, err := quoteIdent(idCol, false)
	if err != nil {
		return "", nil, err
	}
	qver, err := quoteIdent(versionCol, false)
	if err != nil {
		return "", nil, err
	}
	if strings.EqualFold(idCol, versionCol) {
		return "", nil, fmt.Errorf("%w: id and version columns are both %q", ErrIdentifier, idCol)
	}
	if len(set) == 0 {
		return "", nil, errors.New("sqlguard: ExecCAS: nothing to set")
	}
	cols := make([]string, 0, len(set))
	for c := range set {
		if strings.EqualFold(c, idCol) || strings.EqualFold(c, versionCol) {
			return "", nil, fmt.Errorf("%w: ExecCAS may not set the id or version column %q", ErrIdentifier, c)
		}
		cols = append(cols, c)
	}
	slices.Sort(cols)
	n := 0
	ph := func() string {
		n++
		if d == dialectPostgres {
			return "$" + strconv.Itoa(n)
		}
		return "?"
	}
	var b strings.Builder
	args := make([]any, 0, len(cols)+2)
	b.WriteString("UPDATE " + qt + " SET ")
	for _, c := range cols {
		qc, err := quoteIdent(c, false)
		if err != nil {
			return "", nil, err
		}
		b.WriteString(qc + " = " + ph() + ", ")
		args = append(args, set[c])
	}
	b.WriteString(qver + " = " + qver + " + 1 WHERE " + qid + " = " + ph() + " AND " + qver + " = " + ph())
	args = append(args, id, version)
	return b.String(), args, nil
}
