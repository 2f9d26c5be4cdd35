package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/overseer-dev/overseer/internal/store"
)

// scanPage is how many audit records ScanAudit reads per query, so that
// fn runs without holding a connection open.
const scanPage = 1000

const auditColumns = `seq, time_ns, type, action_id, agent, session, tool, data, prev_hash, hash, epoch, tag`

// insertAuditSQL inserts a batch of records from one array per column:
// one statement, one round trip, whatever the batch's size.
const insertAuditSQL = `INSERT INTO audit (` + auditColumns + `)
	SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
		$8::text[], $9::text[], $10::text[], $11::bigint[], $12::text[])`

// tailSQL reads the chain's last record.
const tailSQL = `SELECT seq, hash, type, epoch, tag, data FROM audit ORDER BY seq DESC LIMIT 1`

// auditArgs returns insertAuditSQL's arguments for recs, which must follow
// the tail without a gap.
func auditArgs(tail int64, recs []store.AuditRecord) ([]any, error) {
	n := len(recs)
	seq, tns, epoch := make([]int64, n), make([]int64, n), make([]int64, n)
	cols := make([][]string, 9) // type, action_id, agent, session, tool, data, prev_hash, hash, tag
	for i := range cols {
		cols[i] = make([]string, n)
	}
	for i := range recs {
		r := &recs[i]
		if r.Seq <= tail || i > 0 && r.Seq != recs[i-1].Seq+1 {
			return nil, fmt.Errorf("sealed record has seq %d, not after the tail %d", r.Seq, tail)
		}
		seq[i], tns[i], epoch[i] = r.Seq, nanos(r.Time), r.Epoch
		for j, v := range []string{r.Type, r.ActionID, r.Agent, r.Session, r.Tool, string(r.Data), r.PrevHash, r.Hash, r.Tag} {
			cols[j][i] = v
		}
	}
	return []any{seq, tns, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], epoch, cols[8]}, nil
}

// appendTx is one audit append's (or state update's) transaction on a
// connection of its own.
// Its statements are pipelined: BEGIN, the audit lock and the read of the
// tail go in one round trip, the insert and COMMIT in another; effects
// (which need their results one by one) run in between. The lock and the
// tail are two statements, each with its own snapshot (READ COMMITTED),
// so the tail is read after the lock is held and is the true tail.
type appendTx struct {
	conn *poolConn
	open bool // BEGIN was sent: roll back unless committed
}

func (d *DB) beginAppend(ctx context.Context) (*appendTx, store.AuditTail, error) {
	var tail store.AuditTail
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, tail, err
	}
	t := &appendTx{conn: conn, open: true}
	b := &batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT pg_advisory_xact_lock($1, $2)`, lockClass, auditLock)
	var data string
	b.Queue(tailSQL).QueryRow(func(row *row) error {
		err := row.Scan(&tail.Seq, &tail.Hash, &tail.Type, &tail.Epoch, &tail.Tag, &data)
		if errors.Is(err, errNoRows) {
			return nil
		}
		return err
	})
	if err := conn.SendBatch(ctx, b); err != nil {
		t.end()
		return nil, tail, fmt.Errorf("audit lock and tail: %w", err)
	}
	if data != "" {
		tail.Data = json.RawMessage(data)
	}
	return t, tail, nil
}

// commit applies the state puts of last (when not nil), inserts recs and
// commits, in one round trip.
func (t *appendTx) commit(ctx context.Context, tail int64, recs []store.AuditRecord, last *putRun) error {
	b := &batch{}
	if last != nil {
		last.queue(b)
	}
	if len(recs) > 0 {
		args, err := auditArgs(tail, recs)
		if err != nil {
			return err
		}
		b.Queue(insertAuditSQL, args...)
	}
	b.Queue(`COMMIT`)
	if err := t.conn.SendBatch(ctx, b); err != nil {
		if len(recs) > 0 {
			return fmt.Errorf("insert records %d to %d: %w", recs[0].Seq, recs[len(recs)-1].Seq, err)
		}
		return err
	}
	t.open = false
	return nil
}

// end rolls back what was not committed and gives the connection back.
func (t *appendTx) end() {
	if t.open {
		// A connection left in a transaction is not given back to the
		// pool (pgxpool closes it), so a failed rollback loses nothing.
		_ = t.conn.rollback(context.Background())
	}
	t.conn.Release()
}

// appendAudit runs one append: fn gets the transaction's connection and the
// tail, and returns the records to insert after it.
func (d *DB) appendAudit(ctx context.Context, fn func(q querier, tail store.AuditTail) ([]store.AuditRecord, error)) error {
	return d.appendAuditRun(ctx, nil, fn)
}

// appendAuditRun is appendAudit that also applies the state puts left in
// last once fn has returned, with the insert and the commit.
func (d *DB) appendAuditRun(ctx context.Context, last *putRun, fn func(q querier, tail store.AuditTail) ([]store.AuditRecord, error)) error {
	if err := d.check(ctx); err != nil {
		return d.wrap(ctx, "append audit", err)
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	t, tail, err := d.beginAppend(ctx)
	if err != nil {
		return d.wrap(ctx, "append audit", err)
	}
	defer t.end()
	d.setGuess(nil)
	recs, err := fn(bound{t.conn, ctx}, tail)
	if err == nil {
		err = t.commit(ctx, tail.Seq, recs, last)
	}
	if err == nil {
		d.setGuess(tailAfter(tail, recs))
	}
	return d.wrap(ctx, "append audit", err)
}

// tailAfter returns the chain's tail once recs are appended after tail.
func tailAfter(tail store.AuditTail, recs []store.AuditRecord) *store.AuditTail {
	if len(recs) == 0 {
		return &tail
	}
	r := &recs[len(recs)-1]
	return &store.AuditTail{Seq: r.Seq, Hash: r.Hash, Type: r.Type, Epoch: r.Epoch, Tag: r.Tag, Data: r.Data}
}

// setGuess sets (nil: forgets) the tail the next append expects.
func (d *DB) setGuess(t *store.AuditTail) {
	d.guessMu.Lock()
	d.guess = t
	d.guessMu.Unlock()
}

// takeGuess returns the tail the next append expects, if any, and
// forgets it: an append sets it again once it committed. After a miss
// the next afterMiss batches take the plain path: while other instances
// keep appending between this one's batches, a guess costs more than it
// saves.
func (d *DB) takeGuess() *store.AuditTail {
	d.guessMu.Lock()
	defer d.guessMu.Unlock()
	t := d.guess
	d.guess = nil
	if d.unsure > 0 {
		d.unsure--
		return nil
	}
	return t
}

// missed notes that a guess found another instance's records.
func (d *DB) missed() {
	d.misses.Add(1)
	d.guessMu.Lock()
	d.unsure = afterMiss
	d.guessMu.Unlock()
}

// afterMiss is how many batches take the plain path after a miss.
const afterMiss = 4

// guessTries is how many times appendGuessed seals a batch against a tail
// it expects before it leaves the batch to the plain path.
const guessTries = 3

// checkTailSQL fails, under the audit lock, unless the chain's last record
// is $1 with hash $2. The error is a failed cast whose text says so
// (tailMoved); the CASE is not constant, so it is evaluated when run.
const checkTailSQL = `SELECT (CASE WHEN (SELECT seq FROM audit ORDER BY seq DESC LIMIT 1) = $1
	AND (SELECT hash FROM audit WHERE seq = $1) = $2 THEN '1' ELSE '` + tailMoved + `' END)::int`

// tailMoved is the text of checkTailSQL's error.
const tailMoved = "overseer: the audit tail is not the one expected"

// isTailMoved reports whether err is checkTailSQL's.
func isTailMoved(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.Contains(pe.Message, tailMoved)
}

// guessable reports whether b can be appended by appendGuessed: it has
// records, and no effect but plain state puts (whose outcome is known
// before they run, so that the batch can be sealed before it is sent).
func guessable(b *store.AuditBatch) bool {
	if len(b.Writes) == 0 {
		return false
	}
	for _, w := range b.Writes {
		if w.Effect != nil {
			if _, ok := plainPut(w); !ok {
				return false
			}
		}
	}
	return true
}

// appendGuessed appends b, which must be guessable, in one round trip:
// it seals the records against the tail this DB expects (the tail after
// its last append, guess) and sends BEGIN, the audit lock, a read of the
// tail, a check that the tail is the one expected, the state puts, the
// insert and COMMIT together. The check runs under the lock, so the
// records committed follow the true tail, as on the plain path; when
// another instance appended meanwhile, the check fails, nothing is
// written, and the batch is sealed again against the tail read with it
// and sent again (up to guessTries times; a miss costs two more round
// trips, the rollback and the new try, and the next afterMiss batches
// take the plain path). It reports false, having
// written nothing, when the batch is left to the plain path: the tries
// ran out, or Seal refused a tail it was not sure of.
func (d *DB) appendGuessed(ctx context.Context, b *store.AuditBatch, guess store.AuditTail) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return true, d.wrap(ctx, "append audit", err)
	}
	t := &appendTx{conn: conn}
	defer t.end()
	recs := make([]*store.AuditRecord, len(b.Writes))
	for i, w := range b.Writes {
		recs[i] = &w.Rec
	}
	for try := 0; try < guessTries; try++ {
		extra, err := b.Seal(guess, recs)
		if err != nil {
			return false, nil // the plain path seals against the true tail, or fails
		}
		all := make([]store.AuditRecord, 0, len(recs)+len(extra))
		for _, r := range recs {
			all = append(all, *r)
		}
		all = append(all, extra...)
		args, err := auditArgs(guess.Seq, all)
		if err != nil {
			return true, d.wrap(ctx, "append audit", err)
		}
		var (
			got  store.AuditTail
			data string
			run  putRun
		)
		for _, w := range b.Writes {
			if e, ok := plainPut(w); ok {
				run = append(run, e)
			}
		}
		if t.open {
			// Not in the batch: a batch's new statements are prepared
			// first, which the aborted transaction refuses.
			if _, err := conn.Exec(ctx, `ROLLBACK`); err != nil {
				return true, d.wrap(ctx, "append audit", err)
			}
			if conn.TxStatus() != 'I' {
				return false, nil
			}
			t.open = false
		}
		q := &batch{}
		q.Queue(`BEGIN`)
		q.Queue(`SELECT pg_advisory_xact_lock($1, $2)`, lockClass, auditLock)
		q.Queue(tailSQL).QueryRow(func(row *row) error {
			err := row.Scan(&got.Seq, &got.Hash, &got.Type, &got.Epoch, &got.Tag, &data)
			if errors.Is(err, errNoRows) {
				return nil
			}
			return err
		})
		q.Queue(checkTailSQL, guess.Seq, guess.Hash)
		run.queue(q)
		q.Queue(insertAuditSQL, args...)
		q.Queue(`COMMIT`)
		t.open = true
		err = conn.SendBatch(ctx, q)
		if err == nil {
			t.open = false
			b.Extra = extra
			d.setGuess(tailAfter(guess, all))
			return true, nil
		}
		if errors.As(err, new(*notSentError)) {
			// Nothing of the batch ran (its statements could not be
			// prepared): the plain path, on a connection of its own.
			return false, nil
		}
		if !isTailMoved(err) {
			return true, d.wrap(ctx, "append audit", err)
		}
		d.missed()
		if data != "" {
			got.Data = json.RawMessage(data)
		}
		guess = got
	}
	return false, nil
}

// AppendAudit implements store.AuditStore. The tail is read under the
// audit lock, so seal sees the true tail even when other instances append
// to the same database.
func (d *DB) AppendAudit(ctx context.Context, recs []store.AuditRecord, seal func(tailSeq int64, tailHash string, recs []store.AuditRecord) error) error {
	if seal == nil {
		return errors.New("postgres: append audit: nil seal")
	}
	if len(recs) == 0 {
		return d.check(ctx)
	}
	return d.appendAudit(ctx, func(_ querier, tail store.AuditTail) ([]store.AuditRecord, error) {
		if err := seal(tail.Seq, tail.Hash, recs); err != nil {
			return nil, fmt.Errorf("seal: %w", err)
		}
		return recs, nil
	})
}

// AppendAuditBatch implements store.AuditStore. Each effect runs under a
// savepoint of its own, so that a failing one takes back only itself (and
// its record), except plain state puts, which cannot fail alone (see
// plainPut); then Seal seals the records that remain, and they are
// inserted with the markers Seal adds, all in one commit.
func (d *DB) AppendAuditBatch(ctx context.Context, b *store.AuditBatch) error {
	if b == nil || b.Seal == nil {
		return errors.New("postgres: append audit: nil seal")
	}
	b.Extra, b.Sync = nil, nil // commits are durable: DeferSync is not needed
	for _, w := range b.Writes {
		w.Err = nil
	}
	// A record PostgreSQL's text cannot hold (a NUL in a session name an
	// agent sent) fails alone, before anything is sent: in the batch's
	// one INSERT it would take every other caller's records with it.
	if all, keep := b.Writes, storableWrites(b.Writes); len(keep) < len(all) {
		if len(keep) == 0 {
			return nil
		}
		b.Writes = keep
		defer func() { b.Writes = all }()
	}
	if guessable(b) {
		if err := d.check(ctx); err != nil {
			return d.wrap(ctx, "append audit", err)
		}
		if guess := d.takeGuess(); guess != nil {
			if done, err := d.appendGuessed(ctx, b, *guess); done {
				return err
			}
		}
	}
	var (
		extra []store.AuditRecord
		run   putRun
	)
	// Runs of plain state puts (the records of reads: one per auto read)
	// are sent together, one round trip per run, before the next other
	// effect (effects apply in order); the last run goes with the insert
	// and the commit. A batch of auto reads takes two round trips.
	err := d.appendAuditRun(ctx, &run, func(q querier, tail store.AuditTail) ([]store.AuditRecord, error) {
		recs := make([]*store.AuditRecord, 0, len(b.Writes))
		bq, _ := q.(batcher)
		for _, w := range b.Writes {
			if e, ok := plainPut(w); ok && bq != nil {
				run = append(run, e)
				recs = append(recs, &w.Rec)
				continue
			}
			if w.Effect != nil {
				if err := run.flush(ctx, bq); err != nil {
					return nil, err
				}
				if err := applyEffect(ctx, q, w); err != nil {
					if ctx.Err() != nil {
						return nil, err // not the effect's fault: the whole batch fails
					}
					w.Err = err
					continue
				}
			}
			recs = append(recs, &w.Rec)
		}
		var err error
		extra, err = b.Seal(tail, recs)
		if err != nil {
			return nil, fmt.Errorf("seal: %w", err)
		}
		all := make([]store.AuditRecord, 0, len(recs)+len(extra))
		for _, r := range recs {
			all = append(all, *r)
		}
		return append(all, extra...), nil
	})
	if err != nil {
		return err
	}
	b.Extra = extra
	return nil
}

// storableWrites returns the writes whose records' text PostgreSQL can
// hold (valid UTF-8, no NUL), setting the others' Err. It returns ws itself
// when all are.
func storableWrites(ws []*store.AuditWrite) []*store.AuditWrite {
	bad := 0
	for _, w := range ws {
		if err := storableRecord(&w.Rec); err != nil {
			w.Err = err
			bad++
		}
	}
	if bad == 0 {
		return ws
	}
	keep := make([]*store.AuditWrite, 0, len(ws)-bad)
	for _, w := range ws {
		if w.Err == nil {
			keep = append(keep, w)
		}
	}
	return keep
}

// maxIndexedText is the longest value stored in an indexed column of the
// audit table (type, action id, agent, tool): PostgreSQL refuses an index
// entry over 2704 bytes.
const maxIndexedText = 2048

// storableRecord reports why r's text cannot be stored, or nil.
func storableRecord(r *store.AuditRecord) error {
	for _, f := range [...]struct {
		name, v string
		indexed bool
	}{{"type", r.Type, true}, {"action id", r.ActionID, true}, {"agent", r.Agent, true},
		{"session", r.Session, false}, {"tool", r.Tool, true}, {"data", string(r.Data), false}} {
		if strings.IndexByte(f.v, 0) >= 0 || !utf8.ValidString(f.v) {
			return fmt.Errorf("postgres: append audit: the record's %s holds a NUL or bytes that are not UTF-8, which the database cannot store", f.name)
		}
		if f.indexed && len(f.v) > maxIndexedText {
			return fmt.Errorf("postgres: append audit: the record's %s is %d bytes, over the %d an indexed column stores", f.name, len(f.v), maxIndexedText)
		}
	}
	return nil
}

// applyEffect runs w's effect under a savepoint, and sets w's data from its
// outcome when the effect describes it.
func applyEffect(ctx context.Context, q querier, w *store.AuditWrite) (err error) {
	if _, err := q.Exec(ctx, `SAVEPOINT effect`); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			if _, rerr := q.Exec(ctx, `ROLLBACK TO SAVEPOINT effect`); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		if _, rerr := q.Exec(ctx, `RELEASE SAVEPOINT effect`); rerr != nil && err == nil {
			err = rerr
		}
	}()
	var data json.RawMessage
	switch e := w.Effect.(type) {
	case *store.CreateApprovalEffect:
		return createApproval(ctx, q, e.Approval)
	case *store.AnswerApprovalEffect:
		e.Result, e.Applied, err = answerApproval(ctx, q, e.ID, e.Status, e.Answer)
		if err == nil && e.Describe != nil {
			data, err = e.Describe(e.Result, e.Applied)
		}
	case *store.PutUserRuleEffect:
		err = putUserRule(ctx, q, e.Rule)
		if err == nil && e.Describe != nil {
			data, err = e.Describe(e.Rule)
		}
	case *store.DeleteUserRuleEffect:
		var r *store.UserRule
		r, err = deleteUserRule(ctx, q, e.ID)
		if err == nil && e.Describe != nil {
			data, err = e.Describe(r)
		}
	case *store.PutStateEffect:
		err = putState(ctx, q, e)
	case *store.PauseAgentEffect:
		var old *store.AgentPause
		old, err = pauseAgent(ctx, q, e.Pause)
		if err == nil && e.Describe != nil {
			data, err = e.Describe(old)
		}
	case *store.ResumeAgentEffect:
		var old *store.AgentPause
		old, err = resumeAgent(ctx, q, e.Agent)
		if err == nil && e.Describe != nil {
			data, err = e.Describe(old)
		}
	case *store.PutControlEffect:
		var old *store.Control
		old, err = putControl(ctx, q, e.Control)
		if err == nil && e.Describe != nil {
			data, err = e.Describe(old)
		}
	case *store.DeleteControlEffect:
		var old *store.Control
		old, err = deleteControl(ctx, q, e.ID, e.Kind)
		if err == nil && e.Describe != nil {
			data, err = e.Describe(old)
		}
	default:
		return fmt.Errorf("unknown effect %T", w.Effect)
	}
	if err == nil && data != nil {
		w.Rec.Data = data
	}
	return err
}

// ScanAudit implements store.AuditStore. Records are read a page at a time;
// when a record cannot be read, fn still gets every record before it.
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

func (d *DB) queryAudit(ctx context.Context, q store.AuditQuery, strictAfter bool) ([]store.AuditRecord, error) {
	query, args := auditSQL(q, strictAfter)
	var out []store.AuditRecord
	// Planned for its arguments each time (an unnamed statement), never
	// with a generic plan: a generic plan of "seq > $1 AND type = ANY($2) ORDER BY seq"
	// walks the primary key from $1 and filters the types, a scan of
	// every record since $1 where the type index finds the few records
	// wanted (the sync before each call reads the rule changes after a
	// position that stays put while there are none).
	err := d.readOne(ctx, "query audit", func(db querier) error {
		rows, err := db.Query(ctx, query, append([]any{unnamed}, args...)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				r    store.AuditRecord
				tns  int64
				data string
			)
			if err := rows.Scan(&r.Seq, &tns, &r.Type, &r.ActionID, &r.Agent, &r.Session, &r.Tool, &data, &r.PrevHash, &r.Hash,
				&r.Epoch, &r.Tag); err != nil {
				return err
			}
			r.Time = fromNanos(tns)
			r.Data = json.RawMessage(data)
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}

// auditSQL returns the SELECT statement and its arguments for q.
func auditSQL(q store.AuditQuery, strictAfter bool) (string, []any) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, a any) {
		args = append(args, a)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if q.AfterSeq != 0 || strictAfter {
		add("seq > ?", q.AfterSeq)
	}
	if len(q.Types) > 0 {
		add("type = ANY(?)", q.Types)
	}
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
		add("time_ns >= ?", q.Since.UnixNano())
	}
	if !q.Until.IsZero() {
		add("time_ns < ?", q.Until.UnixNano())
	}
	if q.Text != "" {
		add("strpos(data, ?) > 0", q.Text)
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
		args = append(args, q.Limit)
		query += " LIMIT $" + strconv.Itoa(len(args))
	}
	return query, args
}
