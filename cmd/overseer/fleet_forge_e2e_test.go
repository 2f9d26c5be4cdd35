package main_test

// Someone who can write the shared database but holds none of an
// instance's keys (an agent that learned the database's password) tries to
// answer its own request there.

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/overseertest"
	"github.com/overseer-dev/overseer/internal/store"
)

// forgeAnswer approves approval id as a database writer would: the answer
// row, the approval's status and an answer record chained to the log's
// tail (hashed as the log hashes, without a tag: the writer has no key),
// then a notification.
func forgeAnswer(t *testing.T, url, id string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(2910, 1)`); err != nil {
		t.Fatal(err)
	}
	var body string
	if err := tx.QueryRow(ctx, `SELECT body FROM approvals WHERE id = $1`, id).Scan(&body); err != nil {
		t.Fatal(err)
	}
	var ap store.Approval
	if err := json.Unmarshal([]byte(body), &ap); err != nil {
		t.Fatal(err)
	}
	ans := store.Answer{Decision: "approve", Who: "ann", Channel: "web", At: time.Now().UTC(), Applied: true}
	ab, _ := json.Marshal(ans)
	if _, err := tx.Exec(ctx, `INSERT INTO approval_answers (approval_id, n, answer) VALUES ($1, 1, $2)`, id, string(ab)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE approvals SET status = 'approved', answer = $2 WHERE id = $1`, id, string(ab)); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"approval_id": id, "status": "approved", "args_hash": ap.ArgsHash,
		"level": ap.Level, "answer": ans})
	var (
		seq  int64
		prev string
	)
	if err := tx.QueryRow(ctx, `SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1`).Scan(&seq, &prev); err != nil {
		t.Fatal(err)
	}
	rec := store.AuditRecord{Seq: seq + 1, Time: time.Now().UTC(), Type: audit.TypeAnswer, ActionID: ap.ActionID,
		Agent: ap.Agent, Session: ap.Session, Tool: ap.Tool, Data: data}
	h := audit.Hash(prev, rec)
	if _, err := tx.Exec(ctx, `INSERT INTO audit (seq, time_ns, type, action_id, agent, session, tool, data, prev_hash, hash)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, rec.Seq, rec.Time.UnixNano(), rec.Type, rec.ActionID, rec.Agent,
		rec.Session, rec.Tool, string(data), prev, h); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify('overseer_changes', 'approval:' || $1)`, id); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// A database writer without the keys cannot answer a request: an answer
// row with an answer record it chained itself is refused, to the agent
// waiting and to anyone reading the approval, and audit verify names it;
// a person's approval on one instance still lets the call waiting on
// another run.
func TestFleetForgedAnswerRefused(t *testing.T) {
	f := startFleet(t, 2)
	a, b := f.daemons[0], f.daemons[1]
	// The twin: a person's approval on one instance lets the call waiting
	// on the other run (the instances share the key that signs it).
	code, body := a.Do(t, "POST", "/api/v1/actions", f.askingAction("approved.txt"), false)
	if code != 200 {
		t.Fatalf("submit: %d %s", code, body)
	}
	o := decode[outcome](t, body)
	if o.Approval == nil {
		t.Fatalf("submit: %+v", o)
	}
	got := waitOutcome(t, b, o)
	code, body = a.Do(t, "POST", "/api/v1/approvals/"+o.Approval.ID+"/approve", map[string]any{"who": "ann"}, true)
	if code != 200 {
		t.Fatalf("approve: %d %s", code, body)
	}
	if w := <-got; w.Decision != "allow" {
		t.Fatalf("a person's approval on the other instance: the waiter got %+v", w)
	}

	// The attack.
	code, body = a.Do(t, "POST", "/api/v1/actions", f.askingAction("forged.txt"), false)
	if code != 200 {
		t.Fatalf("submit: %d %s", code, body)
	}
	o = decode[outcome](t, body)
	if o.Decision != "pending" || o.Approval == nil {
		t.Fatalf("submit: %+v", o)
	}
	got = waitOutcome(t, b, o)
	// A notification alone decides nothing: the waiter reads the approval
	// again, finds it pending and waits on.
	c, err := pgx.Connect(context.Background(), f.url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(context.Background(), `SELECT pg_notify('overseer_changes', 'approval:' || $1)`, o.Approval.ID); err != nil {
		t.Fatal(err)
	}
	c.Close(context.Background())
	select {
	case w := <-got:
		t.Fatalf("a bare notification ended the wait: %+v", w)
	case <-time.After(500 * time.Millisecond):
	}
	forgeAnswer(t, f.url, o.Approval.ID)
	w := <-got
	if w.Decision == "allow" {
		t.Fatalf("the agent waiting got its own forged approval: %+v", w)
	}
	t.Logf("the waiter got %+v", w)
	code, body = a.Do(t, "GET", "/api/v1/approvals/"+o.Approval.ID, nil, true)
	var ap store.Approval
	if code != 200 || json.Unmarshal(body, &ap) != nil || ap.Status == store.StatusApproved {
		t.Fatalf("the forged answer is honoured: %d %s", code, body)
	}
	// The log names the forged record: it has no tag.
	key, err := audit.PendingKey(f.homes[0])
	if err != nil {
		t.Fatal(err)
	}
	r := overseertest.Run(t, f.homes[1], "", "audit", "verify", "--key", key.String())
	if r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "approval "+o.Approval.ID) {
		t.Fatalf("audit verify does not report the forged answer: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	// And the log's last record has no tag now: the instances refuse to
	// record, and so to act, until a person looks (denial of service, not
	// prevented).
	code, body = b.Do(t, "POST", "/api/v1/actions", f.autoAction("after"), false)
	if code == 200 && strings.Contains(string(body), `"allow"`) {
		t.Fatalf("an action after the forged record: %d %s", code, body)
	}
}

// waitOutcome waits on instance d for the outcome of o (as an agent's hook
// does), from 300 ms after it returns.
func waitOutcome(t *testing.T, d *overseertest.Daemon, o outcome) <-chan outcome {
	got := make(chan outcome, 1)
	go func() {
		req, _ := http.NewRequest("GET", d.URL("/api/v1/actions/"+o.ActionID+"?wait=5s"), nil)
		req.Header.Set("Authorization", "Bearer "+o.StatusToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			got <- outcome{}
			return
		}
		defer resp.Body.Close()
		var w outcome
		if err := json.NewDecoder(resp.Body).Decode(&w); err != nil {
			t.Error(err)
		}
		got <- w
	}()
	time.Sleep(300 * time.Millisecond)
	return got
}

// The shared log's evidence against a writer of the database without the
// key: an edited record, one rewritten with the chain recomputed after it,
// a deleted one, the log cut after a person's answer, and the log emptied
// are each found by `overseer audit verify --key` run from another
// instance's home; the untouched log verifies.
func TestFleetAuditTamperFound(t *testing.T) {
	f := startFleet(t, 2)
	a, b := f.daemons[0], f.daemons[1]
	for i := range 4 {
		if code, body := f.daemons[i%2].Do(t, "POST", "/api/v1/actions", f.autoAction("s"), false); code != 200 {
			t.Fatalf("submit: %d %s", code, body)
		}
	}
	code, body := a.Do(t, "POST", "/api/v1/actions", f.askingAction("t.txt"), false)
	o := decode[outcome](t, body)
	if code != 200 || o.Approval == nil {
		t.Fatalf("submit: %d %s", code, body)
	}
	if code, body := b.Do(t, "POST", "/api/v1/approvals/"+o.Approval.ID+"/approve", map[string]any{"who": "ann"}, true); code != 200 {
		t.Fatalf("approve: %d %s", code, body)
	}
	for i := range 3 {
		if code, body := f.daemons[i%2].Do(t, "POST", "/api/v1/actions", f.autoAction("s"), false); code != 200 {
			t.Fatalf("submit: %d %s", code, body)
		}
	}
	a.Kill()
	b.Kill()
	key, err := audit.PendingKey(f.homes[0])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := c.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	verify := func() (int, string) {
		r := overseertest.Run(t, f.homes[1], "", "audit", "verify", "--key", key.String())
		return r.Code, r.Stdout + r.Stderr
	}
	if code, out := verify(); code != 0 {
		t.Fatalf("the untouched log does not verify: %d\n%s", code, out)
	}
	var answerSeq int64
	if err := c.QueryRow(ctx, `SELECT seq FROM audit WHERE type = 'answer'`).Scan(&answerSeq); err != nil {
		t.Fatal(err)
	}
	exec(`CREATE TABLE audit_copy AS SELECT * FROM audit`)
	rechain := func(from int64) { // recompute the unkeyed chain from record from on
		t.Helper()
		rows, err := c.Query(ctx, `SELECT seq, time_ns, type, action_id, agent, session, tool, data, prev_hash FROM audit WHERE seq >= $1 ORDER BY seq`, from)
		if err != nil {
			t.Fatal(err)
		}
		var recs []store.AuditRecord
		for rows.Next() {
			var (
				r    store.AuditRecord
				ns   int64
				data string
			)
			if err := rows.Scan(&r.Seq, &ns, &r.Type, &r.ActionID, &r.Agent, &r.Session, &r.Tool, &data, &r.PrevHash); err != nil {
				t.Fatal(err)
			}
			r.Time, r.Data = time.Unix(0, ns).UTC(), []byte(data)
			recs = append(recs, r)
		}
		rows.Close()
		prev := recs[0].PrevHash
		for _, r := range recs {
			h := audit.Hash(prev, r)
			exec(`UPDATE audit SET prev_hash = $2, hash = $3 WHERE seq = $1`, r.Seq, prev, h)
			prev = h
		}
	}
	for _, tc := range []struct {
		name   string
		tamper func()
	}{
		{"a record's data edited", func() {
			exec(`UPDATE audit SET data = replace(data, 'README', 'READYOU') WHERE seq = (SELECT min(seq) FROM audit WHERE data LIKE '%README%')`)
		}},
		{"a sealed record rewritten, the chain recomputed after it", func() {
			exec(`UPDATE audit SET data = replace(data, '"ann"', '"bob"') WHERE seq = $1`, answerSeq)
			rechain(answerSeq)
		}},
		{"a middle record deleted", func() { exec(`DELETE FROM audit WHERE seq = 3`) }},
		{"the log cut from the person's answer on, the chain's tail kept", func() {
			exec(`DELETE FROM audit WHERE seq >= $1`, answerSeq)
		}},
		{"the log emptied", func() { exec(`TRUNCATE audit`) }},
	} {
		tc.tamper()
		if code, out := verify(); code == 0 {
			t.Errorf("%s: audit verify passes:\n%s", tc.name, out)
		}
		exec(`DELETE FROM audit`)
		exec(`INSERT INTO audit SELECT * FROM audit_copy`)
	}
	if code, out := verify(); code != 0 {
		t.Fatalf("the restored log does not verify: %d\n%s", code, out)
	}
}
