package audit_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/store"
)

const chainLen = 10

// tamper is a change an attacker makes to the SQLite file with plain SQL.
type tamper struct {
	name    string
	apply   func(t *testing.T, raw *sql.DB, recs []store.AuditRecord)
	ok      bool
	bad     int64  // FirstBad
	problem string // Problem
	wantErr bool   // the chain cannot even be read to its end
}

func execT(t *testing.T, raw *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := raw.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// insertRec writes r as a row, as a forger would.
func insertRec(t *testing.T, raw *sql.DB, r store.AuditRecord) {
	t.Helper()
	execT(t, raw, `INSERT INTO audit (seq, time, type, action_id, agent, session, tool, data, prev_hash, hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.Seq, r.Time.UTC().Format(time.RFC3339Nano), r.Type, r.ActionID, r.Agent,
		r.Session, r.Tool, string(r.Data), r.PrevHash, r.Hash)
}

// forge makes a record that links correctly to prev and carries a correct
// hash of its own: the best a forger without the later records can do.
func forge(seq int64, prev store.AuditRecord) store.AuditRecord {
	r := store.AuditRecord{Seq: seq, Time: prev.Time.Add(time.Millisecond), Type: audit.TypeAnswer,
		Data: json.RawMessage(`{"decision":"approve","who":"mallory"}`), PrevHash: prev.Hash}
	r.Hash = audit.Hash(r.PrevHash, r)
	return r
}

var tampers = []tamper{
	{name: "untouched", apply: func(*testing.T, *sql.DB, []store.AuditRecord) {}, ok: true},
	{name: "data edited", bad: 5, problem: "record 5 was altered", apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
		execT(t, raw, `UPDATE audit SET data = '{"i":4,"note":"nothing to see"}' WHERE seq = 5`)
	}},
	{name: "data whitespace", bad: 3, problem: "record 3 was altered", apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
		execT(t, raw, `UPDATE audit SET data = replace(data, ':', ': ') WHERE seq = 3`)
	}},
	{name: "type edited", bad: 7, problem: "record 7 was altered", apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
		execT(t, raw, `UPDATE audit SET type = 'result' WHERE seq = 7`)
	}},
	{name: "time edited", bad: 2, problem: "record 2 was altered", apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
		execT(t, raw, `UPDATE audit SET time = '2025-06-01T08:29:00.000000000Z' WHERE seq = 2`)
	}},
	{name: "time unreadable", bad: 6, wantErr: true, problem: "could not be read after record 5",
		apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
			execT(t, raw, `UPDATE audit SET time = 'last tuesday' WHERE seq = 6`)
		}},
	{name: "agent edited", bad: 4, problem: "record 4 was altered", apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
		execT(t, raw, `UPDATE audit SET agent = 'trusted' WHERE seq = 4`)
	}},
	{name: "action id edited", bad: 1, problem: "record 1 was altered", apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
		execT(t, raw, `UPDATE audit SET action_id = 'other' WHERE seq = 1`)
	}},
	{name: "session edited", bad: 9, problem: "record 9 was altered", apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
		execT(t, raw, `UPDATE audit SET session = 'x' WHERE seq = 9`)
	}},
	{name: "tool edited", bad: 10, problem: "record 10 was altered", apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
		execT(t, raw, `UPDATE audit SET tool = 'Read' WHERE seq = 10`)
	}},
	{name: "hash edited", bad: 5, problem: "record 5 was altered", apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
		execT(t, raw, `UPDATE audit SET hash = replace(hash, substr(hash, 1, 1), 'f') WHERE seq = 5`)
	}},
	{name: "prev hash edited", bad: 5, problem: "record 5 does not follow record 4", apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
		execT(t, raw, `UPDATE audit SET prev_hash = (SELECT hash FROM audit WHERE seq = 2) WHERE seq = 5`)
	}},
	{name: "row and its successor's link rewritten", bad: 6, problem: "record 6 does not follow record 5",
		apply: func(t *testing.T, raw *sql.DB, recs []store.AuditRecord) {
			// The forger recomputes record 5's hash after editing it; record 6
			// still names the old one.
			r := recs[4]
			r.Data = json.RawMessage(`{"edited":true}`)
			r.Hash = audit.Hash(r.PrevHash, r)
			execT(t, raw, `UPDATE audit SET data = ?, hash = ? WHERE seq = 5`, string(r.Data), r.Hash)
		}},
	{name: "row deleted", bad: 5, problem: "record 5 is missing", apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
		execT(t, raw, `DELETE FROM audit WHERE seq = 5`)
	}},
	{name: "rows deleted", bad: 3, problem: "records 3 to 6 are missing", apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
		execT(t, raw, `DELETE FROM audit WHERE seq BETWEEN 3 AND 6`)
	}},
	{name: "first row deleted", bad: 1, problem: "record 1 is missing", apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
		execT(t, raw, `DELETE FROM audit WHERE seq = 1`)
	}},
	{name: "row replaced by forgery", bad: 6, problem: "record 6 does not follow record 5",
		apply: func(t *testing.T, raw *sql.DB, recs []store.AuditRecord) {
			execT(t, raw, `DELETE FROM audit WHERE seq = 5`)
			insertRec(t, raw, forge(5, recs[3]))
		}},
	{name: "naive forgery in a gap", bad: 5, problem: "record 5 was altered",
		apply: func(t *testing.T, raw *sql.DB, recs []store.AuditRecord) {
			execT(t, raw, `DELETE FROM audit WHERE seq = 5`)
			f := forge(5, recs[3])
			f.Hash = recs[4].Hash // copied, not computed
			insertRec(t, raw, f)
		}},
	{name: "forged row inserted, later rows renumbered", bad: 6, problem: "record 6 does not follow record 5",
		apply: func(t *testing.T, raw *sql.DB, recs []store.AuditRecord) {
			execT(t, raw, `UPDATE audit SET seq = -seq WHERE seq >= 5`)
			execT(t, raw, `UPDATE audit SET seq = 1 - seq WHERE seq < 0`)
			insertRec(t, raw, forge(5, recs[3]))
		}},
	{name: "forged row before the first", bad: 0, problem: "record 0 is out of sequence",
		apply: func(t *testing.T, raw *sql.DB, recs []store.AuditRecord) {
			insertRec(t, raw, store.AuditRecord{Seq: 0, Time: t0, Type: "action", Data: json.RawMessage(`{}`),
				PrevHash: audit.Genesis, Hash: recs[0].PrevHash})
		}},
	{name: "first row's link changed", bad: 1, problem: "record 1 does not start the chain",
		apply: func(t *testing.T, raw *sql.DB, recs []store.AuditRecord) {
			execT(t, raw, `UPDATE audit SET prev_hash = ? WHERE seq = 1`, recs[2].Hash)
		}},
	{name: "rows swapped", bad: 3, problem: "record 3 does not follow record 2",
		apply: func(t *testing.T, raw *sql.DB, _ []store.AuditRecord) {
			execT(t, raw, `UPDATE audit SET seq = 0 WHERE seq = 3`)
			execT(t, raw, `UPDATE audit SET seq = 3 WHERE seq = 4`)
			execT(t, raw, `UPDATE audit SET seq = 4 WHERE seq = 0`)
		}},
	{name: "forgery appended with a bad hash", bad: 11, problem: "record 11 was altered",
		apply: func(t *testing.T, raw *sql.DB, recs []store.AuditRecord) {
			f := forge(11, recs[9])
			f.Hash = strings.Repeat("ab", 32)
			insertRec(t, raw, f)
		}},
}

// TestVerifyTampering edits the SQLite file with plain SQL, each case one
// kind of tampering, and checks that Verify names the first bad record.
func TestVerifyTampering(t *testing.T) {
	tmpl := templateChain(t, chainLen)
	for _, tc := range tampers {
		t.Run(tc.name, func(t *testing.T) {
			db, p := copyDB(t, tmpl)
			recs, err := db.QueryAudit(t.Context(), store.AuditQuery{})
			if err != nil {
				t.Fatal(err)
			}
			raw, err := sql.Open("sqlite", p)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			tc.apply(t, raw, recs)

			rep, err := audit.Verify(t.Context(), db)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			checkReport(t, rep, tc)
		})
	}
}

func checkReport(t *testing.T, rep audit.Report, tc tamper) {
	t.Helper()
	if rep.OK != tc.ok {
		t.Fatalf("OK = %v, want %v (%+v)", rep.OK, tc.ok, rep)
	}
	if tc.ok {
		if rep.FirstBad != 0 || rep.Problem != "" || rep.Records != chainLen || rep.LastSeq != chainLen {
			t.Fatalf("report %+v", rep)
		}
		return
	}
	if rep.FirstBad != tc.bad || !strings.Contains(rep.Problem, tc.problem) {
		t.Fatalf("report %+v, want first bad %d and problem %q", rep, tc.bad, tc.problem)
	}
}

// TestVerifyJSONLTampering applies the same tampering to the store, exports
// it and checks that the offline verifier finds the same first bad record.
func TestVerifyJSONLTampering(t *testing.T) {
	tmpl := templateChain(t, chainLen)
	for _, tc := range tampers {
		if tc.wantErr {
			continue // an unreadable row cannot be exported
		}
		t.Run(tc.name, func(t *testing.T) {
			db, p := copyDB(t, tmpl)
			recs, err := db.QueryAudit(t.Context(), store.AuditQuery{})
			if err != nil {
				t.Fatal(err)
			}
			raw, err := sql.Open("sqlite", p)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			tc.apply(t, raw, recs)
			var buf bytes.Buffer
			if err := audit.Export(t.Context(), db, store.AuditQuery{}, &buf); err != nil {
				t.Fatal(err)
			}
			rep, err := audit.VerifyJSONL(t.Context(), &buf)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, rep, tc)
		})
	}
}

func TestVerifyEmpty(t *testing.T) {
	db, _ := openDB(t)
	rep, err := audit.Verify(t.Context(), db)
	if err != nil || !rep.OK || rep.Records != 0 || rep.LastSeq != 0 {
		t.Fatalf("report %+v, %v", rep, err)
	}
}

func TestVerifyStoreErrors(t *testing.T) {
	l, db, _, clk := newLog(t)
	fill(t, l, clk, 3)
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		rep, err := audit.Verify(ctx, db)
		if !errors.Is(err, context.Canceled) || rep.OK {
			t.Fatalf("report %+v, err %v", rep, err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		db.Close()
		rep, err := audit.Verify(t.Context(), db)
		if !errors.Is(err, store.ErrClosed) || rep.OK || rep.FirstBad != 1 {
			t.Fatalf("report %+v, err %v", rep, err)
		}
	})
}

// exportChain returns a valid chain of n records exported as JSON lines.
func exportChain(t testing.TB, n int) []byte {
	t.Helper()
	l, db, _, clk := newLog(t)
	fill(t, l, clk, n)
	var buf bytes.Buffer
	if err := audit.Export(context.Background(), db, store.AuditQuery{}, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestVerifyJSONL(t *testing.T) {
	valid := exportChain(t, 5)
	lines := strings.SplitAfter(string(valid), "\n")
	cases := []struct {
		name    string
		in      string
		ok      bool
		records int64
		bad     int64
		problem string
	}{
		{"valid", string(valid), true, 5, 0, ""},
		{"empty", "", true, 0, 0, ""},
		{"no final newline", strings.TrimSuffix(string(valid), "\n"), true, 5, 0, ""},
		{"prefix only", strings.Join(lines[:3], ""), true, 3, 0, ""},
		{"not starting at 1", strings.Join(lines[1:], ""), false, 4, 1, "record 1 is missing"},
		{"line dropped", lines[0] + lines[1] + lines[3] + lines[4], false, 4, 3, "record 3 is missing"},
		{"garbage line", lines[0] + "hello\n" + lines[1], false, 1, 2, "entry 2 (after record 1) is not an audit record"},
		{"truncated line", lines[0] + lines[1][:20], false, 1, 2, "is not an audit record"},
		{"unknown field", lines[0] + `{"seq":2,"extra":1}` + "\n", false, 1, 2, "unknown field"},
		{"data edited", strings.Replace(string(valid), `"i":2`, `"i":9`, 1), false, 5, 3, "record 3 was altered"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := audit.VerifyJSONL(t.Context(), strings.NewReader(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK != c.ok || rep.Records != c.records || rep.FirstBad != c.bad || !strings.Contains(rep.Problem, c.problem) {
				t.Fatalf("report %+v, want ok %v records %d bad %d problem %q", rep, c.ok, c.records, c.bad, c.problem)
			}
		})
	}
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("disk on fire")
		r := io.MultiReader(strings.NewReader(lines[0]), &errReader{boom})
		rep, err := audit.VerifyJSONL(t.Context(), r)
		if !errors.Is(err, boom) || rep.OK || rep.FirstBad != 2 {
			t.Fatalf("report %+v, err %v", rep, err)
		}
	})
}

type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }

// decodeAll decodes JSON lines into records, stopping at the first bad one.
func decodeAll(b []byte) []store.AuditRecord {
	var out []store.AuditRecord
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	for {
		var r store.AuditRecord
		if err := dec.Decode(&r); err != nil {
			return out
		}
		out = append(out, r)
	}
}

func sameRecords(a, b []store.AuditRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Seq != y.Seq || !x.Time.Equal(y.Time) || x.Type != y.Type || x.ActionID != y.ActionID || x.Agent != y.Agent ||
			x.Session != y.Session || x.Tool != y.Tool || !bytes.Equal(x.Data, y.Data) || x.PrevHash != y.PrevHash || x.Hash != y.Hash {
			return false
		}
	}
	return true
}

// FuzzVerifyTamper changes one byte of a valid export. Whatever the change,
// if the verifier still calls the chain OK, the records it read must mean
// exactly what the original records meant (a change of JSON spelling only,
// such as an escape), or be a shorter prefix of them.
func FuzzVerifyTamper(f *testing.F) {
	valid := exportChain(f, 4)
	for _, pos := range []uint{0, 10, 50, 100, 200, 300, 400, uint(len(valid) - 2)} {
		for _, b := range []byte{'0', '9', 'a', ' ', '"', '\n', '}'} {
			f.Add(pos, b)
		}
	}
	orig := decodeAll(valid)
	f.Fuzz(func(t *testing.T, pos uint, b byte) {
		in := bytes.Clone(valid)
		in[pos%uint(len(in))] = b
		rep, err := audit.VerifyJSONL(context.Background(), bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK {
			return
		}
		got := decodeAll(in)
		if !sameRecords(got, orig[:len(got)]) {
			t.Fatalf("changed export verified OK (%+v):\n%s", rep, in)
		}
	})
}

// FuzzVerifyJSONL feeds arbitrary input to the offline verifier: it must not
// panic, and an OK report must count every record of a valid chain.
func FuzzVerifyJSONL(f *testing.F) {
	valid := exportChain(f, 3)
	f.Add(valid)
	f.Add([]byte(""))
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"seq":1,"time":"2025-01-01T00:00:00Z","type":"x","data":null,"prev_hash":"","hash":""}`))
	f.Add(valid[:len(valid)/2])
	f.Fuzz(func(t *testing.T, in []byte) {
		rep, err := audit.VerifyJSONL(context.Background(), bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK {
			recs := decodeAll(in)
			if int64(len(recs)) != rep.Records {
				t.Fatalf("OK with %d records reported, %d decoded", rep.Records, len(recs))
			}
			prev := audit.Genesis
			for i, r := range recs {
				if r.Seq != int64(i)+1 || r.PrevHash != prev || audit.Hash(prev, r) != r.Hash {
					t.Fatalf("OK but record %d is not a valid link", i+1)
				}
				prev = r.Hash
			}
		} else if rep.Problem == "" {
			t.Fatalf("not OK without a problem: %+v", rep)
		}
	})
}
