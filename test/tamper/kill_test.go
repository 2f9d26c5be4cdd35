package tamper

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// TestKillLoop kills the daemon with SIGKILL 20 times at random moments
// while clients submit actions (some of which open approvals) and a person
// answers approvals. After each kill `overseer audit verify --key` passes,
// with no rule or approval lacking its record, and every action the
// daemon acknowledged is in the chain, every approval it acknowledged is
// in the queue, and every answer it acknowledged is applied.
func TestKillLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a daemon 20 times")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	key := filepath.Join(dir, "verify.key")
	t.Setenv("OVERSEER_NO_QR", "1")

	var (
		mu        sync.Mutex
		actions   = map[string]bool{}   // acknowledged action ids
		approvals = map[string]string{} // acknowledged approval id → "" (opened) or the status an answer acknowledged
	)
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	for round := 0; round < 20; round++ {
		t0 := time.Now()
		d := overseertest.StartDaemon(t, home)
		tStart := time.Since(t0)
		if round == 0 {
			if r := overseertest.Run(t, home, "", "audit", "key", "--out", key); r.Code != 0 {
				t.Fatalf("audit key --out: %s", r.Stderr)
			}
		}
		// Approvals still open, for the person to answer during the load.
		mu.Lock()
		var open []string
		for id, ans := range approvals {
			if ans == "" || ans == "pending" {
				open = append(open, id)
			}
		}
		mu.Unlock()

		stop := make(chan struct{})
		var wg sync.WaitGroup
		client := &http.Client{Timeout: 5 * time.Second}
		post := func(path string, body any, auth bool) (int, []byte) {
			b, _ := json.Marshal(body)
			req, _ := http.NewRequest("POST", d.URL(path), bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			if auth {
				req.Header.Set("Authorization", "Bearer "+d.Token)
			}
			resp, err := client.Do(req)
			if err != nil {
				return 0, nil
			}
			defer resp.Body.Close()
			var out bytes.Buffer
			_, _ = out.ReadFrom(resp.Body)
			return resp.StatusCode, out.Bytes()
		}
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) { // ends when stop closes or the daemon is gone
				defer wg.Done()
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					path := fmt.Sprintf("/tmp/proj/r%d-%d-%d.txt", round, w, n)
					tool := "Read"
					if n%10 == 9 {
						tool, path = "Write", fmt.Sprintf("/tmp/elsewhere/r%d-%d-%d.txt", round, w, n)
					}
					code, body := post("/api/v1/actions", map[string]any{"tool": tool, "agent": "load", "session": fmt.Sprint("s", w),
						"cwd": "/tmp/proj", "args": map[string]any{"file_path": path, "content": "x"}}, false)
					if code == 0 {
						return // the daemon is gone
					}
					var o struct {
						ActionID string               `json:"action_id"`
						Approval *struct{ ID string } `json:"approval"`
					}
					if code == 200 && json.Unmarshal(body, &o) == nil && o.ActionID != "" {
						mu.Lock()
						actions[o.ActionID] = true
						if o.Approval != nil {
							approvals[o.Approval.ID] = ""
						}
						mu.Unlock()
					}
				}
			}(w)
		}
		wg.Add(1)
		go func() { // the person, answering open approvals
			defer wg.Done()
			for _, id := range open {
				select {
				case <-stop:
					return
				default:
				}
				decision := "approve"
				if rng.IntN(2) == 0 {
					decision = "deny"
				}
				code, body := post("/api/v1/approvals/"+id+"/"+decision, map[string]any{"who": "ann", "channel": "test"}, true)
				if code == 0 {
					return
				}
				// The status acknowledged: this answer's, or an earlier
				// one's that was applied but never acknowledged (the kill
				// came first).
				var res struct {
					Approval struct{ Status string } `json:"approval"`
				}
				if code == 200 && json.Unmarshal(body, &res) == nil && res.Approval.Status != "" {
					mu.Lock()
					approvals[id] = res.Approval.Status
					mu.Unlock()
				}
			}
		}()
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		d.Kill()
		close(stop)
		wg.Wait()

		t1 := time.Now()
		v, r := verify(t, home, "--key", key)
		if testing.Verbose() {
			t.Logf("round %d: start %s, verify %s", round, tStart.Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
		}
		if !v.OK || r.Code != 0 || len(v.Findings) > 0 {
			t.Fatalf("round %d: verify after SIGKILL: %d\n%s\n%s", round, r.Code, r.Stdout, r.Stderr)
		}
		checkAcknowledged(t, home, round, actions, approvals, &mu)
	}
	mu.Lock()
	t.Logf("20 kills in %s: %d actions and %d approvals acknowledged, all there", time.Since(start).Round(time.Millisecond),
		len(actions), len(approvals))
	mu.Unlock()
}

// checkAcknowledged reads the killed daemon's database.
func checkAcknowledged(t *testing.T, home string, round int, actions map[string]bool, approvals map[string]string, mu *sync.Mutex) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(home, "overseer.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recorded := map[string]bool{}
	rows, err := db.Query(`SELECT action_id FROM audit WHERE type = 'action'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		recorded[id] = true
	}
	rows.Close()
	status := map[string]string{}
	rows, err = db.Query(`SELECT id, status FROM approvals`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, st string
		_ = rows.Scan(&id, &st)
		status[id] = st
	}
	rows.Close()
	mu.Lock()
	defer mu.Unlock()
	for id := range actions {
		if !recorded[id] {
			t.Fatalf("round %d: acknowledged action %s is not in the chain", round, id)
		}
	}
	for id, ans := range approvals {
		st, ok := status[id]
		switch {
		case !ok:
			t.Fatalf("round %d: acknowledged approval %s is gone", round, id)
		case ans != "" && ans != "pending" && st != ans:
			t.Fatalf("round %d: approval %s was answered %s (acknowledged) but is %s", round, id, ans, st)
		}
	}
}
