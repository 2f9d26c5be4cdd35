package builtin

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/overseer-dev/overseer/internal/guard/sqlguard"
	"github.com/overseer-dev/overseer/plugin"
)

// openDB opens the configured database for one call.
func (t *Tools) openDB() (*sql.DB, error) {
	if t.cfg.SQL.DSN == "" {
		return nil, errors.New("no database is configured (sql.dsn in the tools configuration)")
	}
	db, err := sql.Open(t.cfg.SQL.Driver, t.cfg.SQL.DSN)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

type queryArgs struct {
	Query string `json:"query"`
	Args  []any  `json:"args,omitempty"`
}

func (t *Tools) sqlQuery(ctx context.Context, c plugin.Call) (plugin.Result, error) {
	var args queryArgs
	if err := decodeArgs(c.Args, &args); err != nil {
		return plugin.Result{}, err
	}
	if strings.TrimSpace(args.Query) == "" {
		return plugin.Result{}, errors.New("query is empty")
	}
	db, err := t.openDB()
	if err != nil {
		return plugin.Result{}, err
	}
	defer db.Close()
	// The SQL guard judged the query; the read-only transaction makes sure
	// a statement it misjudged still cannot write.
	qr, err := sqlguard.RunReadOnlyMax(ctx, db, t.cfg.SQL.MaxRows, args.Query, sqlValues(args.Args)...)
	if err != nil {
		return plugin.Result{}, err
	}
	cols, rows, more := qr.Columns, qr.Rows, qr.Truncated
	meta := map[string]any{"columns": cols, "rows": len(rows)}
	var sb strings.Builder
	sb.WriteString(strings.Join(cols, "\t"))
	sb.WriteByte('\n')
	for _, r := range rows {
		for i, v := range r {
			if i > 0 {
				sb.WriteByte('\t')
			}
			sb.WriteString(cell(v))
		}
		sb.WriteByte('\n')
	}
	if more {
		meta["rows_truncated"] = true
		fmt.Fprintf(&sb, "[warning: only the first %d rows are shown]\n", t.cfg.SQL.MaxRows)
	} else {
		fmt.Fprintf(&sb, "(%d rows)\n", len(rows))
	}
	return plugin.Result{Output: capOutput(sb.String(), t.cfg.MaxOutputBytes, meta), Meta: meta}, nil
}

// cell renders one value for the tab-separated output.
func cell(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		if !utf8.Valid(x) {
			return fmt.Sprintf("<%d bytes>", len(x))
		}
		s = string(x)
	default:
		s = fmt.Sprint(x)
	}
	return strings.NewReplacer("\t", `\t`, "\n", `\n`, "\r", `\r`).Replace(s)
}

// sqlValues turns JSON values into driver arguments (numbers decoded
// with UseNumber become int64 or float64).
func sqlValues(in []any) []any {
	out := make([]any, len(in))
	for i, v := range in {
		out[i] = sqlValue(v)
	}
	return out
}

func sqlValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return v
}

type execArgs struct {
	SQL           string         `json:"sql,omitempty"`
	Args          []any          `json:"args,omitempty"`
	Table         string         `json:"table,omitempty"`
	IDColumn      string         `json:"id_column,omitempty"`
	VersionColumn string         `json:"version_column,omitempty"`
	ID            any            `json:"id,omitempty"`
	Version       *json.Number   `json:"version,omitempty"`
	Set           map[string]any `json:"set,omitempty"`
}

func (t *Tools) sqlExec(ctx context.Context, c plugin.Call) (plugin.Result, error) {
	var args execArgs
	if err := decodeArgs(c.Args, &args); err != nil {
		return plugin.Result{}, err
	}
	cas := args.Table != "" || args.Set != nil || args.Version != nil || args.ID != nil
	switch {
	case cas && args.SQL != "":
		return plugin.Result{}, errors.New("give either sql, or table, id, version and set — not both")
	case !cas && strings.TrimSpace(args.SQL) == "":
		return plugin.Result{}, errors.New("sql is empty")
	}
	db, err := t.openDB()
	if err != nil {
		return plugin.Result{}, err
	}
	defer db.Close()
	if !cas {
		res, err := db.ExecContext(ctx, args.SQL, sqlValues(args.Args)...)
		if err != nil {
			return plugin.Result{}, err
		}
		n, _ := res.RowsAffected()
		return plugin.Result{Output: fmt.Sprintf("%d rows affected", n), Meta: map[string]any{"rows_affected": n}}, nil
	}
	if args.Table == "" || args.ID == nil || args.Version == nil || len(args.Set) == 0 {
		return plugin.Result{}, errors.New("an optimistic-locking update needs table, id, version and set")
	}
	version, err := args.Version.Int64()
	if err != nil {
		return plugin.Result{}, fmt.Errorf("version must be a whole number: %w", err)
	}
	idCol, verCol := args.IDColumn, args.VersionColumn
	if idCol == "" {
		idCol = "id"
	}
	if verCol == "" {
		verCol = "version"
	}
	set := make(map[string]any, len(args.Set))
	for k, v := range args.Set {
		set[k] = sqlValue(v)
	}
	if err := sqlguard.ExecCAS(ctx, db, args.Table, idCol, verCol, sqlValue(args.ID), version, set); err != nil {
		if errors.Is(err, sqlguard.ErrConflict) {
			return plugin.Result{}, fmt.Errorf("%w; read the row again and retry with its current %s", err, verCol)
		}
		return plugin.Result{}, err
	}
	return plugin.Result{Output: fmt.Sprintf("updated %s where %s = %v; %s is now %d", args.Table, idCol, args.ID, verCol, version+1),
		Meta: map[string]any{"rows_affected": 1, "version": version + 1}}, nil
}
