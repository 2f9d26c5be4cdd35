// Package tamper is the audit log's tamper suite: a real daemon writes a
// real SQLite log, then a separate process — this test binary run again
// with OVERSEER_TAMPER_CASE set — plays an attacker running as the same OS
// user, with every file of Overseer's home and the live sealing key, and
// `overseer audit verify --key … --anchor …` must name what it did.
//
// What the suite shows to be out of reach (see docs/threat-model.md): a
// record appended, altered or removed in the open epoch with the key in
// force at that moment, and the log and its key file both swapped for an
// older copy, are found only with published heads (--anchor), and not at
// all when they come after the last published head.
package tamper

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/overseertest"
	"github.com/overseer-dev/overseer/internal/store"
)

// The attacker's side: env names.
const (
	caseEnv = "OVERSEER_TAMPER_CASE"
	homeEnv = "OVERSEER_TAMPER_HOME"
	argEnv  = "OVERSEER_TAMPER_ARG"
)

func TestMain(m *testing.M) {
	if c := os.Getenv(caseEnv); c != "" {
		if err := attack(c, os.Getenv(homeEnv), os.Getenv(argEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "attack:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// ---- the attacker

type row struct {
	Seq                                        int64
	Time, Type, ActionID, Agent, Session, Tool string
	Data, PrevHash, Hash                       string
	Epoch                                      int64
	Tag                                        string
}

func (r row) rec() store.AuditRecord {
	t, _ := time.Parse(time.RFC3339Nano, r.Time)
	return store.AuditRecord{Seq: r.Seq, Time: t, Type: r.Type, ActionID: r.ActionID, Agent: r.Agent, Session: r.Session,
		Tool: r.Tool, Data: json.RawMessage(r.Data)}
}

func rows(db *sql.DB) ([]row, error) {
	q, err := db.Query(`SELECT seq, time, type, action_id, agent, session, tool, data, prev_hash, hash, epoch, tag FROM audit ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	var out []row
	for q.Next() {
		var r row
		if err := q.Scan(&r.Seq, &r.Time, &r.Type, &r.ActionID, &r.Agent, &r.Session, &r.Tool, &r.Data, &r.PrevHash, &r.Hash,
			&r.Epoch, &r.Tag); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, q.Err()
}

// reseal rewrites rows from index i on: each one's prev_hash, hash and tag
// recomputed, the tag with the key the attacker holds (the live one).
func reseal(db *sql.DB, rs []row, from int, key audit.SealState) error {
	for i := from; i < len(rs); i++ {
		r := &rs[i]
		if i > 0 {
			r.PrevHash = rs[i-1].Hash
		}
		r.Hash = audit.Hash(r.PrevHash, r.rec())
		r.Tag = audit.Tag(key.Key, r.Epoch, r.Seq, r.Hash)
		if _, err := db.Exec(`UPDATE audit SET time = ?, type = ?, action_id = ?, agent = ?, session = ?, tool = ?, data = ?,
			prev_hash = ?, hash = ?, epoch = ?, tag = ? WHERE seq = ?`, r.Time, r.Type, r.ActionID, r.Agent, r.Session, r.Tool,
			r.Data, r.PrevHash, r.Hash, r.Epoch, r.Tag, r.Seq); err != nil {
			return err
		}
	}
	return nil
}

func indexOf(rs []row, seq int64) int {
	for i := range rs {
		if rs[i].Seq == seq {
			return i
		}
	}
	return -1
}

func copyFile(dst, src string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o600)
}

// attack does one case to the home: it has every file, and reads the live
// sealing key like anyone running as the user can.
func attack(c, home, arg string) error {
	dbPath := filepath.Join(home, "overseer.db")
	live, err := audit.ReadSealState(filepath.Join(home, audit.SealFile))
	if err != nil && c != "swap-older-copy-and-key" {
		return fmt.Errorf("reading the live key: %w", err)
	}
	if strings.HasPrefix(c, "swap-older-copy") {
		for _, suffix := range []string{"-wal", "-shm"} {
			_ = os.Remove(dbPath + suffix)
		}
		if err := copyFile(dbPath, filepath.Join(arg, "old.db")); err != nil {
			return err
		}
		if c == "swap-older-copy-and-key" {
			return copyFile(filepath.Join(home, audit.SealFile), filepath.Join(arg, "old.seal"))
		}
		return nil
	}
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	rs, err := rows(db)
	if err != nil {
		return err
	}
	var seq int64
	fmt.Sscan(arg, &seq)
	i := indexOf(rs, seq)
	switch c {
	case "alter":
		rs[i].Data = strings.Replace(rs[i].Data, "/tmp/proj/", "/tmp/prij/", 1)
		return reseal(db, rs[:i+1], i, live) // this record re-hashed and re-tagged with the live key
	case "delete-first", "delete-middle", "delete-last":
		_, err := db.Exec(`DELETE FROM audit WHERE seq = ?`, seq)
		return err
	case "delete-newest-20":
		_, err := db.Exec(`DELETE FROM audit WHERE seq > (SELECT max(seq) - 20 FROM audit)`)
		return err
	case "delete-all":
		_, err := db.Exec(`DELETE FROM audit`)
		return err
	case "reorder":
		a, b := rs[i], rs[i+1]
		a.Seq, b.Seq = rs[i+1].Seq, rs[i].Seq
		rs[i], rs[i+1] = b, a
		return reseal(db, rs, i, live)
	case "recompute-all":
		rs[i].Data = strings.Replace(rs[i].Data, "/tmp/proj/", "/tmp/prij/", 1)
		return reseal(db, rs, i, live)
	case "append-forged-stale-key", "append-forged-no-key", "append-forged-live-key":
		last := rs[len(rs)-1]
		r := row{Seq: last.Seq + 1, Time: time.Now().UTC().Format(time.RFC3339Nano), Type: "answer",
			ActionID: last.ActionID, Data: `{"approval_id":"apr_forged","status":"approved"}`, PrevHash: last.Hash, Epoch: last.Epoch}
		r.Hash = audit.Hash(r.PrevHash, r.rec())
		if c == "append-forged-stale-key" {
			stolen, err := audit.ReadSealState(filepath.Join(home, "stolen.seal"))
			if err != nil {
				return err
			}
			r.Epoch = stolen.Epoch
			r.Tag = audit.Tag(stolen.Key, r.Epoch, r.Seq, r.Hash)
		}
		if c == "append-forged-live-key" {
			r.Epoch = live.Epoch
			r.Tag = audit.Tag(live.Key, r.Epoch, r.Seq, r.Hash)
		}
		_, err := db.Exec(`INSERT INTO audit (seq, time, type, action_id, agent, session, tool, data, prev_hash, hash, epoch, tag)
			VALUES (?, ?, ?, ?, '', '', '', ?, ?, ?, ?, ?)`, r.Seq, r.Time, r.Type, r.ActionID, r.Data, r.PrevHash, r.Hash, r.Epoch, r.Tag)
		return err
	case "edit-approvals":
		ans := `{"decision":"approve","who":"ann","channel":"web","at":"` + time.Now().UTC().Format(time.RFC3339Nano) + `","applied":true}`
		res, err := db.Exec(`UPDATE approvals SET status = 'approved', answer = ? WHERE status = 'denied'`, ans)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errors.New("no denied approval to flip")
		}
		_, err = db.Exec(`UPDATE approval_answers SET answer = ? WHERE approval_id IN (SELECT id FROM approvals WHERE status = 'approved')`, ans)
		return err
	case "inject-rule":
		_, err := db.Exec(`INSERT INTO user_rules (id, position, rule, origin, created_by, created_at, expires_at)
			VALUES ('allow-all', -1, '{"name":"allow-all","level":"auto"}', 'human', 'ann', ?, '')`, time.Now().UTC().Format(time.RFC3339Nano))
		if err != nil {
			return err
		}
		_, err = db.Exec(`UPDATE counters SET value = value + 1 WHERE name = 'rules_version'`)
		return err
	}
	return fmt.Errorf("unknown case %q", c)
}

// ---- the scenario

type verifyOut struct {
	OK       bool   `json:"ok"`
	FirstBad int64  `json:"first_bad"`
	LastBad  int64  `json:"last_bad"`
	Problem  string `json:"problem"`
	BadFrom  string `json:"bad_from"`
	BadUntil string `json:"bad_until"`
	Findings []struct {
		Kind, ID, Why string
	} `json:"findings"`
}

func verify(t *testing.T, home string, args ...string) (verifyOut, overseertest.Result) {
	t.Helper()
	r := overseertest.Run(t, home, "", append([]string{"audit", "verify", "--json"}, args...)...)
	var v verifyOut
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("verify --json: %v\n%s\n%s", err, r.Stdout, r.Stderr)
	}
	return v, r
}

// heads collects the heads the daemon publishes to a webhook.
type heads struct {
	mu   sync.Mutex
	file string
	last int64
}

func (h *heads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var p struct {
		Event string          `json:"event"`
		Head  json.RawMessage `json:"head"`
	}
	if json.Unmarshal(b, &p) == nil && p.Event == audit.HeadEvent {
		var hd audit.Head
		_ = json.Unmarshal(p.Head, &hd)
		h.mu.Lock()
		f, err := os.OpenFile(h.file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, string(p.Head))
			f.Close()
		}
		h.last = max(h.last, hd.Seq)
		h.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *heads) lastSeq() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

type base struct {
	home, key, heads, old string
	tail                  int64
}

func tailSeq(t *testing.T, home string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(home, "overseer.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow(`SELECT coalesce(max(seq), 0) FROM audit`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// buildBase runs a daemon through a small day of work: actions, answers by
// a person (each closing a sealing epoch), a rule, with the head published
// to a webhook; it keeps an older copy of the log and key on the way, and
// a copy of the sealing key taken before the last answer (a stale key).
func buildBase(t *testing.T) base {
	dir := t.TempDir()
	b := base{home: filepath.Join(dir, "home"), key: filepath.Join(dir, "verify.key"), heads: filepath.Join(dir, "heads.jsonl"),
		old: filepath.Join(dir, "old")}
	for _, d := range []string{b.home, b.old} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	hs := &heads{file: b.heads}
	srv := httptest.NewServer(hs)
	t.Cleanup(srv.Close)
	if err := os.WriteFile(filepath.Join(b.home, "notify.yaml"),
		[]byte("channels:\n  - type: webhook\n    name: anchor\n    url: "+srv.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OVERSEER_ANCHOR_INTERVAL", "100ms")
	t.Setenv("OVERSEER_NO_QR", "1")
	d := overseertest.StartDaemon(t, b.home)
	if r := overseertest.Run(t, b.home, "", "audit", "key", "--out", b.key); r.Code != 0 {
		t.Fatalf("audit key --out: %s %s", r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(b.home, audit.KeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the verification key is still in the home after --out")
	}

	n := 0
	read := func(k int) {
		for i := 0; i < k; i++ {
			n++
			code, body := d.Do(t, "POST", "/api/v1/actions", map[string]any{"tool": "Read", "agent": "a", "session": fmt.Sprint("s", n),
				"cwd": "/tmp/proj", "args": map[string]any{"file_path": fmt.Sprintf("/tmp/proj/f%d.txt", n)}}, false)
			if code != 200 {
				t.Fatalf("submit: %d %s", code, body)
			}
		}
	}
	ask := func(decision string) {
		code, body := d.Do(t, "POST", "/api/v1/actions", map[string]any{"tool": "Write", "agent": "a", "session": "w",
			"cwd": "/tmp/proj", "args": map[string]any{"file_path": fmt.Sprintf("/tmp/elsewhere/n%d.txt", n), "content": "x"}}, false)
		var o struct {
			Approval *struct{ ID string } `json:"approval"`
		}
		if code != 200 || json.Unmarshal(body, &o) != nil || o.Approval == nil {
			t.Fatalf("submit needing a person: %d %s", code, body)
		}
		code, body = d.Do(t, "POST", "/api/v1/approvals/"+o.Approval.ID+"/"+decision, map[string]any{"who": "ann", "channel": "test"}, true)
		if code != 200 {
			t.Fatalf("%s: %d %s", decision, code, body)
		}
	}
	read(4)
	ask("deny")
	code, body := d.Do(t, "POST", "/api/v1/policy/rules", map[string]any{"who": "ann",
		"rule": map[string]any{"name": "no-curl", "tool": []string{"Bash"}, "when": `args.command.startsWith("curl ")`, "level": "block"}}, true)
	if code != 201 {
		t.Fatalf("add rule: %d %s", code, body)
	}
	read(4)
	ask("approve")
	read(2)
	// An older copy of the log and of its key, taken together (a backup).
	db, err := sql.Open("sqlite", filepath.Join(b.home, "overseer.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`VACUUM INTO ?`, filepath.Join(b.old, "old.db")); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := copyFile(filepath.Join(b.old, "old.seal"), filepath.Join(b.home, audit.SealFile)); err != nil {
		t.Fatal(err)
	}
	// The sealing key as an attacker takes it now (it goes stale at the
	// next answer).
	if err := copyFile(filepath.Join(b.home, "stolen.seal"), filepath.Join(b.home, audit.SealFile)); err != nil {
		t.Fatal(err)
	}
	read(4)
	ask("deny")
	read(4)
	b.tail = tailSeq(t, b.home)
	deadline := time.Now().Add(10 * time.Second)
	for hs.lastSeq() < b.tail && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if hs.lastSeq() < b.tail {
		t.Fatalf("the head %d was not published (last published %d):\n%s", b.tail, hs.lastSeq(), d.Log())
	}
	d.Kill() // the open epoch stays open: its key is the live one
	if v, r := verify(t, b.home, "--key", b.key, "--anchor", b.heads); !v.OK || r.Code != 0 || len(v.Findings) > 0 {
		t.Fatalf("the untouched log does not verify: %s %s", r.Stdout, r.Stderr)
	}
	return b
}

// clone copies the base home for one case.
func (b base) clone(t *testing.T) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(b.home)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			if err := copyFile(filepath.Join(home, e.Name()), filepath.Join(b.home, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	return home
}

// runAttacker runs the attacker: this test binary, again, as a separate
// process.
func runAttacker(t *testing.T, c, home, arg string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), caseEnv+"="+c, homeEnv+"="+home, argEnv+"="+arg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("attacker %s: %v\n%s", c, err, out)
	}
}

// recordsOf reads the base log's records (seq, type, epoch).
func recordsOf(t *testing.T, home string) []row {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(home, "overseer.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := rows(db)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestTamperSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a daemon")
	}
	b := buildBase(t)
	rs := recordsOf(t, b.home)
	// Targets: an action in the first closed epoch, and one in the middle
	// of the log, both sealed with keys long erased.
	var early, middle int64
	for _, r := range rs {
		if r.Type == "action" && r.Epoch == 0 && early == 0 {
			early = r.Seq
		}
		if r.Type == "action" && r.Seq > int64(len(rs))/2 && middle == 0 && r.Epoch < rs[len(rs)-1].Epoch {
			middle = r.Seq
		}
	}
	last := rs[len(rs)-1].Seq

	cases := []struct {
		name, arg string
		anchor    bool   // verify with the published heads
		firstBad  int64  // 0: any
		finding   string // a finding that must be named instead of a bad record
		want      string // in the problem
	}{
		{name: "alter", arg: fmt.Sprint(early), firstBad: early, want: "seal"},
		{name: "delete-first", arg: "1", firstBad: 1, want: "missing"},
		{name: "delete-middle", arg: fmt.Sprint(middle), firstBad: middle, want: "missing"},
		{name: "delete-last", arg: fmt.Sprint(last), anchor: true, firstBad: last, want: "published"},
		{name: "delete-newest-20", firstBad: last - 19, want: "missing"},
		{name: "delete-all", firstBad: 1},
		{name: "reorder", arg: fmt.Sprint(middle), firstBad: middle},
		{name: "append-forged-no-key", firstBad: last + 1, want: "not sealed"},
		{name: "append-forged-stale-key", firstBad: last + 1, want: "epoch"},
		{name: "recompute-all", arg: fmt.Sprint(early), firstBad: early, want: "seal"},
		{name: "edit-approvals", finding: "approval"},
		{name: "inject-rule", finding: "rule allow-all"},
		{name: "swap-older-copy", want: "missing"},
		{name: "swap-older-copy-and-key", anchor: true, want: "published"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := b.clone(t)
			arg := tc.arg
			if strings.HasPrefix(tc.name, "swap-") {
				arg = b.old
			}
			runAttacker(t, tc.name, home, arg)
			args := []string{"--key", b.key}
			if tc.anchor {
				args = append(args, "--anchor", b.heads)
			}
			v, r := verify(t, home, args...)
			if r.Code == 0 {
				t.Fatalf("verify passed after %s:\n%s", tc.name, r.Stdout)
			}
			if tc.finding != "" {
				found := false
				for _, f := range v.Findings {
					if strings.Contains(f.Kind+" "+f.ID, tc.finding) {
						found = true
					}
				}
				if !found {
					t.Fatalf("%s not named: %s", tc.finding, r.Stdout)
				}
				return
			}
			if v.OK || tc.firstBad != 0 && v.FirstBad != tc.firstBad || !strings.Contains(v.Problem, tc.want) {
				t.Fatalf("first bad %d (want %d), problem %q (want %q)\n%s", v.FirstBad, tc.firstBad, v.Problem, tc.want, r.Stdout)
			}
			if v.LastBad < v.FirstBad {
				t.Fatalf("no range: %s", r.Stdout)
			}
			t.Logf("named: record %d (to %d, %s – %s): %s", v.FirstBad, v.LastBad, v.BadFrom, v.BadUntil, v.Problem)
		})
	}

	// What the engine does with the injected rule: not use it.
	t.Run("inject-rule is not used", func(t *testing.T) {
		home := b.clone(t)
		runAttacker(t, "inject-rule", home, "")
		r := overseertest.Run(t, home, `{"tool":"Bash","args":{"command":"kill -9 1"}}`, "eval")
		if r.Code != 0 && r.Stdout == "" {
			t.Fatalf("eval: %d %s", r.Code, r.Stderr)
		}
		if strings.Contains(r.Stdout, `"level": "auto"`) || strings.Contains(r.Stdout, `"level":"auto"`) {
			t.Fatalf("the injected allow-all rule was used:\n%s", r.Stdout)
		}
	})
	// The edited approval is refused, not honoured.
	t.Run("edit-approvals is refused", func(t *testing.T) {
		home := b.clone(t)
		runAttacker(t, "edit-approvals", home, "")
		r := overseertest.Run(t, home, "", "approvals", "--all", "--json")
		if strings.Contains(r.Stdout, `"status": "approved"`) && !strings.Contains(r.Stdout, "unaudited") {
			t.Fatalf("the flipped approval reads as approved:\n%s", r.Stdout)
		}
	})
	// Out of reach, and shown to be (docs/threat-model.md): a record
	// appended in the open epoch with the key in force, after the last
	// published head, verifies.
	t.Run("out of reach: append with the live key", func(t *testing.T) {
		home := b.clone(t)
		runAttacker(t, "append-forged-live-key", home, "")
		if v, r := verify(t, home, "--key", b.key, "--anchor", b.heads); !v.OK {
			t.Fatalf("the live key's forgery was found after all; update docs/threat-model.md:\n%s", r.Stdout)
		}
	})
}
