package main_test

// A fleet: several `overseer serve` daemons, each with a home of its own,
// sharing one PostgreSQL database (a throwaway cluster, internal/store/pgtest).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/frontend/web"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/overseertest"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/pgtest"
	"github.com/overseer-dev/overseer/internal/store/postgres"
)

// TestMain stops the PostgreSQL cluster of the fleet tests.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

type fleet struct {
	url     string
	dir     string // the agents' working tree
	homes   []string
	daemons []*overseertest.Daemon
}

// startFleet starts n daemons on one fresh database, as docs/deploy.md
// says: the first creates the token and the audit log's sealing key, which
// are copied to the others' homes before they start. Quotas are off (the
// tests load the API).
func startFleet(t *testing.T, n int) *fleet {
	t.Helper()
	return startFleetWith(t, n, "", nil)
}

// startFleetWith is startFleet with more policy lines (appended after
// settings.limits: indented by four, they are more limits) and a function
// that prepares each home before its daemon starts.
func startFleetWith(t *testing.T, n int, settings string, prepare func(home string)) *fleet {
	t.Helper()
	return startFleetPolicy(t, n, func(url string) string {
		return fmt.Sprintf(`version: 1
extends: builtin
settings:
  store: '%s'
  limits:
    session: {actions_per_minute: -1, bytes_per_minute: -1}
    agent: {actions_per_minute: -1, bytes_per_minute: -1}
    all: {actions_per_minute: -1, bytes_per_minute: -1}
`, url) + settings
	}, prepare)
}

// startFleetPolicy is startFleet with the policy policy(url) returns for
// the database at url.
func startFleetPolicy(t *testing.T, n int, policy func(url string) string, prepare func(home string)) *fleet {
	t.Helper()
	f := &fleet{url: pgtest.Database(t), dir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(f.dir, "README.md"), []byte("# a file to read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pol := policy(f.url)
	for i := range n {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, "policy.yaml"), []byte(pol), 0o600); err != nil {
			t.Fatal(err)
		}
		if prepare != nil {
			prepare(home)
		}
		if i > 0 {
			for _, name := range []string{"token", audit.SealFile, web.KeyName, kernel.EgressKeyFile} {
				b, err := os.ReadFile(filepath.Join(f.homes[0], name))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(home, name), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		f.homes = append(f.homes, home)
		f.daemons = append(f.daemons, overseertest.StartDaemon(t, home))
	}
	return f
}

// autoAction is a read in the working tree: the built-in policy lets it
// run unasked, and it is recorded.
func (f *fleet) autoAction(session string) map[string]any {
	return map[string]any{"tool": "Read", "kind": "file_read", "agent": "e2e", "session": session,
		"args": map[string]any{"file_path": "README.md"}, "cwd": f.dir}
}

// askingAction is a write outside the working tree: a person must answer.
func (f *fleet) askingAction(name string) map[string]any {
	return map[string]any{"tool": "Write", "agent": "e2e", "session": "asks", "cwd": f.dir,
		"args": map[string]any{"file_path": "/tmp/elsewhere/" + name, "content": "hi"}}
}

// fleetPost sends a request without failing the test on a transport error (a
// killed daemon or a stopped database is what some tests are about).
func fleetPost(d *overseertest.Daemon, path string, body any, auth bool) (int, []byte, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", d.URL(path), bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+d.Token)
	}
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// openDB opens the fleet's database directly, for the tests' checks.
func (f *fleet) openDB(t *testing.T) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), f.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// checkRecorded fails t unless every action in acked has its verdict in
// the audit log, and the log verifies with the fleet's verification key.
func (f *fleet) checkRecorded(t *testing.T, acked []string) {
	t.Helper()
	db := f.openDB(t)
	recs, err := db.QueryAudit(t.Context(), store.AuditQuery{Types: []string{audit.TypeVerdict}})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, r := range recs {
		have[r.ActionID] = true
	}
	for _, id := range acked {
		if !have[id] {
			t.Fatalf("acknowledged action %s has no verdict in the audit log (%d acknowledged, %d verdicts)", id, len(acked), len(recs))
		}
	}
	key, err := audit.PendingKey(f.homes[0])
	if err != nil {
		t.Fatal(err)
	}
	rep, err := audit.VerifyWith(t.Context(), db, audit.Options{Key: &key})
	if err != nil || !rep.OK {
		t.Fatalf("the fleet's audit log does not verify: %+v %v", rep, err)
	}
	// The same with the command line, from another instance's home.
	r := overseertest.Run(t, f.homes[len(f.homes)-1], "", "audit", "verify", "--key", key.String())
	if r.Code != 0 {
		t.Fatalf("overseer audit verify on the shared database: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// A fleet with the policy docs/deploy.md shows (the built-in one and the
// store, the quotas as they come): each instance serves an agent's calls,
// and one session's calls count against its one quota on every instance.
func TestFleetDefaultQuotas(t *testing.T) {
	f := startFleetPolicy(t, 2, func(url string) string {
		return "version: 1\nextends: builtin\nsettings:\n  store: '" + url + "'\n  limits:\n    session: {actions_per_minute: 1, burst: 2}\n"
	}, nil)
	// (Two calls: a third of the same call would be asked about as a
	// repeat.)
	for i := range 2 {
		code, body := f.daemons[i%2].Do(t, "POST", "/api/v1/actions", f.autoAction("one"), true)
		if o := decode[outcome](t, body); code != 200 || o.Decision != "allow" {
			t.Fatalf("call %d of the session: %d %s", i, code, body)
		}
	}
	// The session's third call, on either instance, is over its quota.
	code, body := f.daemons[0].Do(t, "POST", "/api/v1/actions", f.autoAction("one"), true)
	if code != http.StatusTooManyRequests || !bytes.Contains(body, []byte("session")) {
		t.Fatalf("the session's third call: %d %s", code, body)
	}
	// Another session has its own.
	if code, body := f.daemons[0].Do(t, "POST", "/api/v1/actions", f.autoAction("two"), true); code != 200 {
		t.Fatalf("another session: %d %s", code, body)
	}
}

// An approval opened on one instance and answered on a second wakes the
// asker waiting on a third.
func TestFleetApprovalAcrossInstances(t *testing.T) {
	f := startFleet(t, 3)
	a, b, c := f.daemons[0], f.daemons[1], f.daemons[2]
	code, body := a.Do(t, "POST", "/api/v1/actions", f.askingAction("x.txt"), false)
	if code != 200 {
		t.Fatalf("submit: %d %s", code, body)
	}
	o := decode[outcome](t, body)
	if o.Decision != "pending" || o.Approval == nil {
		t.Fatalf("submit: %+v", o)
	}
	got := make(chan outcome, 1)
	go func() {
		// The asker waits on the third instance (a status token is the
		// fleet's: the instances share the token).
		req, _ := http.NewRequest("GET", c.URL("/api/v1/actions/"+o.ActionID+"?wait=30s"), nil)
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
	time.Sleep(200 * time.Millisecond) // the asker is waiting
	code, body = b.Do(t, "POST", "/api/v1/approvals/"+o.Approval.ID+"/deny", map[string]any{"who": "ann", "reason": "no"}, true)
	if code != 200 {
		t.Fatalf("deny on the second instance: %d %s", code, body)
	}
	w := <-got
	if w.Decision != "deny" || w.Approval == nil || w.Approval.Status != "denied" {
		t.Fatalf("the asker on the third instance got %+v", w)
	}
	// A second answer, on the first instance, is recorded only.
	code, body = a.Do(t, "POST", "/api/v1/approvals/"+o.Approval.ID+"/approve", map[string]any{"who": "bob"}, true)
	if code != 200 && code != http.StatusConflict {
		t.Fatalf("late answer: %d %s", code, body)
	}
	code, body = c.Do(t, "GET", "/api/v1/approvals/"+o.Approval.ID, nil, true)
	var ap store.Approval
	if code != 200 || json.Unmarshal(body, &ap) != nil || ap.Status != store.StatusDenied || len(ap.Answers) != 2 {
		t.Fatalf("approval after a late answer: %d %s", code, body)
	}
}

// load posts auto actions to the daemons, round robin, from several
// clients until stop is closed; it returns the ids of the actions the
// daemons acknowledged (allowed), and fails t on any answer that allows
// without an id or on an allow that is not an auto action.
func (f *fleet) load(t *testing.T, daemons []*overseertest.Daemon, clients int, stop <-chan struct{}) []string {
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				d := daemons[(i+n)%len(daemons)]
				code, body, err := fleetPost(d, "/api/v1/actions", f.autoAction(fmt.Sprintf("load-%d-%d", i, n)), false)
				if err != nil {
					continue // a killed daemon: not acknowledged
				}
				var o outcome
				if json.Unmarshal(body, &o) != nil {
					continue
				}
				if o.Decision == "allow" {
					if code != 200 || o.ActionID == "" || o.Level != "auto" {
						t.Errorf("an allow that is not a recorded auto action: %d %s", code, body)
						return
					}
					mu.Lock()
					acked = append(acked, o.ActionID)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return acked
}

// Under load, one of three instances is killed (SIGKILL): no action any
// instance acknowledged is lost, the audit chain verifies, and the
// approvals the dead instance opened are answered through the others.
func TestFleetKillOneUnderLoad(t *testing.T) {
	f := startFleet(t, 3)
	victim := f.daemons[2]
	var pending []string
	for i := range 2 {
		code, body := victim.Do(t, "POST", "/api/v1/actions", f.askingAction(fmt.Sprintf("k%d.txt", i)), false)
		o := decode[outcome](t, body)
		if code != 200 || o.Approval == nil {
			t.Fatalf("submit to the victim: %d %s", code, body)
		}
		pending = append(pending, o.Approval.ID)
	}
	stop := make(chan struct{})
	done := make(chan []string)
	go func() { done <- f.load(t, f.daemons, 8, stop) }()
	time.Sleep(1500 * time.Millisecond)
	victim.Kill()
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	acked := <-done
	if len(acked) < 50 {
		t.Fatalf("only %d actions acknowledged under load", len(acked))
	}
	for i, id := range pending {
		d := f.daemons[i]
		code, body := d.Do(t, "POST", "/api/v1/approvals/"+id+"/approve", map[string]any{"who": "ann"}, true)
		if code != 200 {
			t.Fatalf("answering the dead instance's approval %s on instance %d: %d %s", id, i, code, body)
		}
		code, body = f.daemons[1-i].Do(t, "GET", "/api/v1/approvals/"+id, nil, true)
		var ap store.Approval
		if code != 200 || json.Unmarshal(body, &ap) != nil || ap.Status != store.StatusApproved || ap.Answer.Who != "ann" {
			t.Fatalf("approval %s on the other instance: %d %s", id, code, body)
		}
	}
	for _, d := range f.daemons[:2] {
		d.Kill()
	}
	f.checkRecorded(t, acked)
}

// The database restarts under the fleet: while it is down, requests fail
// closed (never an allow, an answer is not taken); afterwards every
// instance serves again on its own, and nothing acknowledged is lost.
func TestFleetDatabaseRestart(t *testing.T) {
	f := startFleet(t, 2)
	cluster := pgtest.Shared(t)
	a, b := f.daemons[0], f.daemons[1]
	code, body := a.Do(t, "POST", "/api/v1/actions", f.askingAction("r.txt"), false)
	o := decode[outcome](t, body)
	if code != 200 || o.Approval == nil {
		t.Fatalf("submit: %d %s", code, body)
	}
	acked := f.load(t, f.daemons, 4, closedAfter(500*time.Millisecond))

	if err := cluster.StopServer(true); err != nil { // as a crash: no shutdown checkpoint
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_ = cluster.StartServer() // for the tests after this one
		}
	}()
	for i, d := range f.daemons {
		code, body, err := fleetPost(d, "/api/v1/actions", f.autoAction(fmt.Sprintf("down-%d", i)), false)
		if err != nil {
			t.Fatalf("instance %d during the outage: %v", i, err)
		}
		var out outcome
		_ = json.Unmarshal(body, &out)
		if code == 200 || out.Decision == "allow" {
			t.Fatalf("instance %d allowed an action while the database was down: %d %s", i, code, body)
		}
		if out.Decision != "deny" && out.Decision != "pending" {
			t.Fatalf("instance %d during the outage: %d %s, want a deny", i, code, body)
		}
	}
	code, body, err := fleetPost(b, "/api/v1/approvals/"+o.Approval.ID+"/approve", map[string]any{"who": "ann"}, true)
	if err != nil || code == 200 {
		t.Fatalf("an answer was taken while the database was down: %d %s %v", code, body, err)
	}

	if err := cluster.StartServer(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	for i, d := range f.daemons {
		deadline := time.Now().Add(30 * time.Second)
		for try := 0; ; try++ {
			code, body, err := fleetPost(d, "/api/v1/actions", f.autoAction(fmt.Sprintf("up-%d-%d", i, try)), false)
			var out outcome
			if err == nil && json.Unmarshal(body, &out) == nil && code == 200 && out.Decision == "allow" {
				acked = append(acked, out.ActionID)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %d does not serve after the database came back: %d %s %v", i, code, body, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	code, body = b.Do(t, "POST", "/api/v1/approvals/"+o.Approval.ID+"/approve", map[string]any{"who": "ann"}, true)
	if code != 200 {
		t.Fatalf("answer after the restart: %d %s", code, body)
	}
	code, body = a.Do(t, "GET", "/api/v1/approvals/"+o.Approval.ID, nil, true)
	var ap store.Approval
	if code != 200 || json.Unmarshal(body, &ap) != nil || ap.Status != store.StatusApproved {
		t.Fatalf("the approval after the restart: %d %s", code, body)
	}
	for _, d := range f.daemons {
		d.Kill()
	}
	f.checkRecorded(t, acked)
}

// closedAfter returns a channel closed after d.
func closedAfter(d time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	time.AfterFunc(d, func() { close(ch) })
	return ch
}
