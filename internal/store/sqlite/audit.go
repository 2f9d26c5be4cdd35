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

// scanPage is how many audit records ScanAudit reads per query. Records are
// read a page at a time so that fn runs without holding a connection or a
// read transaction open.
const scanPage = 1000

const auditColumns = `seq, time, type, action_id, agent, session, tool, data, prev_hash, hash, epoch, tag`

// AppendAudit implements store.AuditStore. The tail is read inside the
// BEGIN IMMEDIATE transaction, so seal sees the true tail even when other
// processes append to the same file.
func (d *DB) AppendAudit(ctx context.Context, recs []store.AuditRecord, seal func(tailSeq int64, tailHash string, recs []store.AuditRecord) error) error {
	if seal == nil {
		return errors.New("sqlite: append audit: nil seal")
	}
	if len(recs) == 0 {
		return d.check(ctx)
	}
	d.prepareSizes(ctx, len(recs))
	return d.write(ctx, "append audit", func(tx *sql.Tx) error {
		var (
			tailSeq  int64
			tailHash string
		)
		tail, err := d.readTail(ctx, tx)
		if err != nil {
			return err
		}
		tailSeq, tailHash = tail.Seq, tail.Hash
		if err := seal(tailSeq, tailHash, recs); err != nil {
			return fmt.Errorf("seal: %w", err)
		}
		for i := range recs {
			if recs[i].Seq <= tailSeq {
				return fmt.Errorf("sealed record has seq %d, not after the tail %d", recs[i].Seq, tailSeq)
			}
		}
		for rest := recs; len(rest) > 0; {
			k := 0 // the largest prepared statement that fits
			for insertSizes[k] > len(rest) {
				k++
			}
			n := insertSizes[k]
			if err := d.insertAudit(ctx, tx, k, rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	})
}

// holdVersion reads the file's data version inside tx, which holds the
// write lock (BEGIN IMMEDIATE), and lets OthersVersion answer with it
// until releaseVersion: while the lock is held no other connection can
// commit, so the version stays current.
func (d *DB) holdVersion(ctx context.Context, tx *sql.Tx) error {
	var v int64
	if err := tx.StmtContext(ctx, d.versionStmt).QueryRowContext(ctx).Scan(&v); err != nil {
		return fmt.Errorf("data version: %w", err)
	}
	d.vmu.Lock()
	d.lockedVersion, d.lockHeld = v, true
	d.vmu.Unlock()
	return nil
}

// releaseVersion ends holdVersion's answer; it runs before the
// transaction commits or rolls back, while the lock is still held.
func (d *DB) releaseVersion() {
	d.vmu.Lock()
	d.lockHeld = false
	d.vmu.Unlock()
}

// readTail reads the chain's last record inside tx.
func (d *DB) readTail(ctx context.Context, tx *sql.Tx) (store.AuditTail, error) {
	var (
		t    store.AuditTail
		data string
	)
	err := tx.StmtContext(ctx, d.tailStmt).QueryRowContext(ctx).Scan(&t.Seq, &t.Hash, &t.Type, &t.Epoch, &t.Tag, &data)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("read tail: %w", err)
	}
	if data != "" {
		t.Data = json.RawMessage(data)
	}
	return t, nil
}

// AppendAuditBatch implements store.AuditStore. Each effect runs under a
// savepoint of its own, so that a failing one takes back only itself (and
// its record); then Seal seals the records that remain, and they are
// inserted with the markers Seal adds, all in one durable commit.
func (d *DB) AppendAuditBatch(ctx context.Context, b *store.AuditBatch) (err error) {
	if b == nil || b.Seal == nil {
		return errors.New("sqlite: append audit: nil seal")
	}
	b.Extra, b.Sync = nil, nil
	for _, w := range b.Writes {
		w.Err = nil
	}
	// The seal may add a record or two: their statements are prepared in
	// the transaction if need be.
	d.prepareSizes(ctx, len(b.Writes))
	write := d.write
	if b.DeferSync && d.syncSelf {
		write = d.commit
		defer func() {
			if err == nil {
				b.Sync = func() error { return d.wrap("append audit", d.syncWAL()) }
			}
		}()
	}
	return write(ctx, "append audit", func(tx *sql.Tx) error {
		if err := d.holdVersion(ctx, tx); err != nil {
			return err
		}
		// Forgotten before the commit lets the lock go.
		defer d.releaseVersion()
		tail, err := d.readTail(ctx, tx)
		if err != nil {
			return err
		}
		recs := make([]*store.AuditRecord, 0, len(b.Writes))
		// Plain state puts (the record of a read, one per auto read) wait
		// and are written together, in order, before the next other
		// effect: a few multi-row statements cost much less than one
		// statement each. One that fails fails the whole batch.
		var puts []*store.PutStateEffect
		for _, w := range b.Writes {
			if w.Effect != nil {
				if e, ok := w.Effect.(*store.PutStateEffect); ok && !e.IfAbsent {
					if !json.Valid(e.Value) {
						w.Err = fmt.Errorf("state %s/%s: value is not valid JSON", e.NS, e.Key)
						continue
					}
					puts = append(puts, e)
				} else {
					if err := d.putStates(ctx, tx, puts); err != nil {
						return err
					}
					puts = puts[:0]
					if err := d.applyEffect(ctx, tx, w); err != nil {
						w.Err = err
						continue
					}
				}
			}
			recs = append(recs, &w.Rec)
		}
		if err := d.putStates(ctx, tx, puts); err != nil {
			return err
		}
		extra, err := b.Seal(tail, recs)
		if err != nil {
			return fmt.Errorf("seal: %w", err)
		}
		all := make([]store.AuditRecord, 0, len(recs)+len(extra))
		for _, r := range recs {
			all = append(all, *r)
		}
		all = append(all, extra...)
		for i := range all {
			if all[i].Seq <= tail.Seq || i > 0 && all[i].Seq != all[i-1].Seq+1 {
				return fmt.Errorf("sealed record has seq %d, not after the tail %d", all[i].Seq, tail.Seq)
			}
		}
		for rest := all; len(rest) > 0; {
			k := 0 // the largest prepared statement that fits
			for insertSizes[k] > len(rest) {
				k++
			}
			n := insertSizes[k]
			if err := d.insertAudit(ctx, tx, k, rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		b.Extra = extra
		return nil
	})
}

// putStates writes plain state puts, in order (a later put of a key wins),
// with the prepared multi-row statements.
func (d *DB) putStates(ctx context.Context, tx *sql.Tx, puts []*store.PutStateEffect) error {
	for len(puts) > 0 {
		k := 0 // the largest prepared statement that fits
		for insertSizes[k] > len(puts) {
			k++
		}
		n := insertSizes[k]
		args := make([]any, 0, 3*n)
		for _, e := range puts[:n] {
			args = append(args, e.NS, e.Key, string(e.Value))
		}
		st, err := d.txStmt(ctx, tx, &d.putStateStmts, k, putStatesSQL)
		if err == nil {
			_, err = st.ExecContext(ctx, args...)
		}
		if err != nil {
			return fmt.Errorf("state %s/%s: %w", puts[0].NS, puts[0].Key, err)
		}
		puts = puts[n:]
	}
	return nil
}

// putStatesSQL sets n state keys, in order. A failing row rolls back the
// transaction (see insertSizes).
func putStatesSQL(n int) string {
	return `INSERT OR ROLLBACK INTO state (ns, key, value) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", n), ", ") +
		` ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value`
}

// applyEffect runs w's effect under a savepoint, and sets w's data from
// its outcome when the effect describes it. (Plain state puts are
// written by putStates.)
func (d *DB) applyEffect(ctx context.Context, tx *sql.Tx, w *store.AuditWrite) (err error) {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT effect`); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO effect`); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		if _, rerr := tx.ExecContext(ctx, `RELEASE effect`); rerr != nil && err == nil {
			err = rerr
		}
	}()
	var data json.RawMessage
	switch e := w.Effect.(type) {
	case *store.CreateApprovalEffect:
		return createApproval(ctx, tx, e.Approval)
	case *store.AnswerApprovalEffect:
		e.Result, e.Applied, err = answerApproval(ctx, tx, e.ID, e.Status, e.Answer)
		if err == nil && e.Describe != nil {
			data, err = e.Describe(e.Result, e.Applied)
		}
	case *store.PutUserRuleEffect:
		err = putUserRule(ctx, tx, e.Rule)
		if err == nil && e.Describe != nil {
			data, err = e.Describe(e.Rule)
		}
	case *store.DeleteUserRuleEffect:
		var r *store.UserRule
		r, err = deleteUserRule(ctx, tx, e.ID)
		if err == nil && e.Describe != nil {
			data, err = e.Describe(r)
		}
	case *store.PauseAgentEffect:
		var old *store.AgentPause
		old, err = pauseAgent(ctx, tx, e.Pause)
		if err == nil && e.Describe != nil {
			data, err = e.Describe(old)
		}
	case *store.ResumeAgentEffect:
		var old *store.AgentPause
		old, err = resumeAgent(ctx, tx, e.Agent)
		if err == nil && e.Describe != nil {
			data, err = e.Describe(old)
		}
	case *store.PutControlEffect:
		var old *store.Control
		old, err = putControl(ctx, tx, e.Control)
		if err == nil && e.Describe != nil {
			data, err = e.Describe(old)
		}
	case *store.DeleteControlEffect:
		var old *store.Control
		old, err = deleteControl(ctx, tx, e.ID, e.Kind)
		if err == nil && e.Describe != nil {
			data, err = e.Describe(old)
		}
	case *store.PutStateEffect:
		err = putState(ctx, tx, e)
	default:
		return fmt.Errorf("unknown effect %T", w.Effect)
	}
	if err == nil && data != nil {
		w.Rec.Data = data
	}
	return err
}

// insertSizes are the row counts of the prepared audit INSERT statements, in
// decreasing order, ending with 1: a batch is written as a few multi-row
// statements, which cost less than one statement per row. A failing row
// rolls back the whole transaction (OR ROLLBACK), as the caller would:
// SQLite then needs no statement journal to take back a statement's
// earlier rows, which cost about a tenth of a batch's CPU.
var insertSizes = [...]int{32, 16, 8, 4, 2, 1}

func insertAuditSQL(n int) string {
	return `INSERT OR ROLLBACK INTO audit (` + auditColumns + `) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ")
}

// prepareAudit prepares the statements every append uses (the chain's
// tail) and OthersVersion's, once, on the write pool's connection.
func (d *DB) prepareAudit(ctx context.Context) error {
	var err error
	if d.tailStmt, err = d.w.PrepareContext(ctx, `SELECT seq, hash, type, epoch, tag, data FROM audit ORDER BY seq DESC LIMIT 1`); err != nil {
		return fmt.Errorf("sqlite: prepare: %w", err)
	}
	if d.versionStmt, err = d.w.PrepareContext(ctx, `PRAGMA data_version`); err != nil {
		return fmt.Errorf("sqlite: prepare: %w", err)
	}
	return nil
}

// prepareSizes prepares, on the write pool's connection and outside any
// transaction, the multi-row statements for up to n rows that are not
// prepared yet. A process that writes a few records (a hook judging one
// call) prepares the few small statements it uses, not all of them: each
// costs SQLite a parse, the largest most. An error leaves the statement to
// be prepared inside the transaction (see txStmt).
func (d *DB) prepareSizes(ctx context.Context, n int) {
	d.pmu.Lock()
	defer d.pmu.Unlock()
	if d.closed.Load() {
		return
	}
	for k, size := range insertSizes {
		if size > n {
			continue
		}
		if d.insertStmts[k] == nil {
			d.insertStmts[k], _ = d.w.PrepareContext(ctx, insertAuditSQL(size))
		}
		if d.putStateStmts[k] == nil {
			d.putStateStmts[k], _ = d.w.PrepareContext(ctx, putStatesSQL(size))
		}
	}
}

// txStmt is the statement set[k] within tx; one not prepared yet is
// prepared within tx for this use only (the write pool's one connection is
// tx's: it cannot be prepared outside tx now).
func (d *DB) txStmt(ctx context.Context, tx *sql.Tx, set *[len(insertSizes)]*sql.Stmt, k int, query func(int) string) (*sql.Stmt, error) {
	d.pmu.Lock()
	s := set[k]
	d.pmu.Unlock()
	if s != nil {
		return tx.StmtContext(ctx, s), nil
	}
	return tx.PrepareContext(ctx, query(insertSizes[k]))
}

// insertAudit inserts recs, insertSizes[k] of them, with one statement.
func (d *DB) insertAudit(ctx context.Context, tx *sql.Tx, k int, recs []store.AuditRecord) error {
	args := make([]any, 0, 12*len(recs))
	for i := range recs {
		r := &recs[i]
		args = append(args, r.Seq, fmtTime(r.Time), r.Type, r.ActionID, r.Agent, r.Session, r.Tool,
			string(r.Data), r.PrevHash, r.Hash, r.Epoch, r.Tag)
	}
	st, err := d.txStmt(ctx, tx, &d.insertStmts, k, insertAuditSQL)
	if err == nil {
		_, err = st.ExecContext(ctx, args...)
	}
	if err != nil {
		return fmt.Errorf("insert records %d to %d: %w", recs[0].Seq, recs[len(recs)-1].Seq, err)
	}
	return nil
}

// ScanAudit implements store.AuditStore. Records are read a page at a time;
// when a record cannot be read, fn still gets every record before it, then
// ScanAudit returns the error.
func (d *DB) ScanAudit(ctx context.Context, afterSeq int64, fn func(store.AuditRecord) error) error {
	for {
		recs, err := d.queryAudit(ctx, store.AuditQuery{AfterSeq: afterSeq, Limit: scanPage}, true)
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		if err != nil {
			return err
		}
		if len(recs) < scanPage {
			return nil
		}
		afterSeq = recs[len(recs)-1].Seq
	}
}

// QueryAudit implements store.AuditStore. Since is inclusive and Until
// exclusive; Text matches a case-sensitive substring of the record's data.
func (d *DB) QueryAudit(ctx context.Context, q store.AuditQuery) ([]store.AuditRecord, error) {
	recs, err := d.queryAudit(ctx, q, false)
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// queryAudit returns the records matching q; on an error it also returns
// the records read before it. With strictAfter, q.AfterSeq filters even
// when it is zero.
func (d *DB) queryAudit(ctx context.Context, q store.AuditQuery, strictAfter bool) ([]store.AuditRecord, error) {
	query, args := auditSQL(q, strictAfter)
	var out []store.AuditRecord
	if err := d.check(ctx); err != nil {
		return nil, d.wrap("query audit", err)
	}
	// One statement reads one consistent snapshot: no transaction is
	// needed. Its prepared form is kept (parsing costs more than a small
	// query), per shape of query.
	err := func() error {
		stmt, kept, err := d.queryStmt(ctx, query)
		if err != nil {
			return err
		}
		if !kept {
			defer stmt.Close()
		}
		rows, err := stmt.QueryContext(ctx, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				r        store.AuditRecord
				ts, data string
			)
			if err := rows.Scan(&r.Seq, &ts, &r.Type, &r.ActionID, &r.Agent, &r.Session, &r.Tool, &data, &r.PrevHash, &r.Hash,
				&r.Epoch, &r.Tag); err != nil {
				return err
			}
			t, err := parseTime(ts)
			if err != nil {
				return fmt.Errorf("audit record %d: %w", r.Seq, err)
			}
			r.Time = t
			r.Data = json.RawMessage(data)
			out = append(out, r)
		}
		return rows.Err()
	}()
	return out, d.wrap("query audit", err)
}

// maxQueryStmts bounds the prepared audit queries kept; a query of
// another shape once the cache is full is prepared for its one use.
const maxQueryStmts = 64

// queryStmt returns the prepared form of query on the read pool, and
// whether it is kept in d.queries; one that is not (the cache is full) is
// the caller's to close.
func (d *DB) queryStmt(ctx context.Context, query string) (*sql.Stmt, bool, error) {
	d.qmu.Lock()
	defer d.qmu.Unlock()
	if s, ok := d.queries[query]; ok {
		return s, true, nil
	}
	if d.closed.Load() {
		return nil, false, store.ErrClosed
	}
	s, err := d.r.PrepareContext(ctx, query)
	if err != nil {
		return nil, false, err
	}
	if len(d.queries) >= maxQueryStmts {
		return s, false, nil
	}
	d.queries[query] = s
	return s, true, nil
}

// auditSQL returns the SELECT statement and its arguments for q (see
// queryAudit for strictAfter).
func auditSQL(q store.AuditQuery, strictAfter bool) (string, []any) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, a ...any) {
		where = append(where, cond)
		args = append(args, a...)
	}
	// A zero AfterSeq in a query does not filter: records with seq <= 0
	// (which the audit log never writes) are returned too.
	if q.AfterSeq != 0 || strictAfter {
		add("seq > ?", q.AfterSeq)
	}
	if len(q.Types) > 0 {
		ph := strings.TrimSuffix(strings.Repeat("?, ", len(q.Types)), ", ")
		for _, t := range q.Types {
			args = append(args, t)
		}
		col := "type"
		if q.ActionID != "" {
			// The action's few records come from its index; "+type" keeps
			// SQLite from scanning the type index instead.
			col = "+type"
		}
		where = append(where, col+" IN ("+ph+")")
		// The type index is partial: it leaves out the types every call
		// writes (see commonTypes). SQLite uses it only for a query that
		// says so.
		common := false
		for _, t := range q.Types {
			common = common || commonTypes[t]
		}
		if !common && q.ActionID == "" {
			where = append(where, notCommonType)
		}
	}
	// The indexes on action_id, agent and tool are partial (they leave out
	// the empty value); SQLite uses a partial index only when the query
	// implies its condition, which "x = ?" alone does not, so the filters
	// say it ("x <> ''" is true of every non-empty value they compare with).
	if q.ActionID != "" {
		add("action_id = ? AND action_id <> ''", q.ActionID)
	}
	if q.Agent != "" {
		add("agent = ? AND agent <> ''", q.Agent)
	}
	if q.Session != "" {
		add("session = ?", q.Session)
	}
	if q.Tool != "" {
		add("tool = ? AND tool <> ''", q.Tool)
	}
	if !q.Since.IsZero() {
		add("time >= ?", fmtTime(q.Since))
	}
	if !q.Until.IsZero() {
		add("time < ?", fmtTime(q.Until))
	}
	if q.Text != "" {
		add("instr(data, ?) > 0", q.Text)
	}
	query := `SELECT ` + auditColumns + ` FROM audit`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	if q.Desc {
		query += " ORDER BY seq DESC"
	} else {
		query += " ORDER BY seq"
	}
	if q.Limit > 0 {
		query += " LIMIT ?"
		args = append(args, q.Limit)
	}
	return query, args
}
