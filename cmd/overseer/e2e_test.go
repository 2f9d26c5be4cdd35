package main_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// outcome is the agent-side API answer.
type outcome struct {
	ActionID string `json:"action_id"`
	Decision string `json:"decision"`
	Level    string `json:"level"`
	Reason   string `json:"reason"`
	// StatusToken reads the outcome (GET /api/v1/actions/{id}).
	StatusToken string `json:"status_token"`
	Approval    *struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	} `json:"approval"`
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// A daemon killed with SIGKILL while an approval is pending shows the same
// pending approval after restart, and answering it then releases the
// waiting caller.
func TestPendingApprovalSurvivesKill(t *testing.T) {
	home := t.TempDir()
	d := overseertest.StartDaemon(t, home)

	// A write outside the working tree needs a person (confirm).
	act := map[string]any{"tool": "Write", "agent": "e2e", "session": "s1", "cwd": "/tmp/proj",
		"args": map[string]any{"file_path": "/tmp/elsewhere/notes.txt", "content": "hi"}}
	code, body := d.Do(t, "POST", "/api/v1/actions", act, false)
	if code != 200 {
		t.Fatalf("submit: %d %s", code, body)
	}
	o := decode[outcome](t, body)
	if o.Decision != "pending" || o.Approval == nil || o.Level != "confirm" {
		t.Fatalf("submit outcome: %+v", o)
	}

	// The agent cannot approve its own request without the token.
	code, _ = d.Do(t, "POST", "/api/v1/approvals/"+o.Approval.ID+"/approve", map[string]any{"who": "agent"}, false)
	if code != http.StatusUnauthorized {
		t.Fatalf("approve without token: %d, want 401", code)
	}

	d.Kill()
	d = overseertest.StartDaemon(t, home)

	r := overseertest.Run(t, home, "", "approvals", "--json")
	if r.Code != 0 {
		t.Fatalf("approvals: %d %s", r.Code, r.Stderr)
	}
	var list []struct {
		ID, Tool, Level string
		CreatedAt       time.Time `json:"created_at"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("approvals --json: %v\n%s", err, r.Stdout)
	}
	if len(list) != 1 || list[0].ID != o.Approval.ID || list[0].Tool != "Write" || list[0].Level != "confirm" || list[0].CreatedAt.IsZero() {
		t.Fatalf("after restart: %+v", list)
	}

	// A caller waits on the action, with the status token it was given
	// before the restart; a person approves from the CLI.
	released := make(chan outcome, 1)
	go func() {
		req, _ := http.NewRequest("GET", d.URL("/api/v1/actions/"+o.ActionID+"?wait=30s"), nil)
		req.Header.Set("Authorization", "Bearer "+o.StatusToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			released <- outcome{Reason: err.Error()}
			return
		}
		defer resp.Body.Close()
		var got outcome
		_ = json.NewDecoder(resp.Body).Decode(&got)
		released <- got
	}()
	time.Sleep(300 * time.Millisecond) // let the caller start waiting
	r = overseertest.Run(t, home, "", "approve", o.Approval.ID, "--reason", "fine")
	if r.Code != 0 {
		t.Fatalf("approve: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	select {
	case got := <-released:
		if got.Decision != "allow" || !strings.Contains(got.Reason, "fine") {
			t.Fatalf("released caller got %+v", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting caller was not released")
	}

	// A second answer is recorded only.
	r = overseertest.Run(t, home, "", "deny", o.Approval.ID)
	if r.Code != 0 || !strings.Contains(r.Stdout, "recorded only") {
		t.Fatalf("late deny: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	r = overseertest.Run(t, home, "", "audit", "verify")
	if r.Code != 0 {
		t.Fatalf("audit verify after the run: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
}

// Editing any audit row in the SQLite file makes `overseer audit verify`
// fail and name that row.
func TestAuditTamperDetected(t *testing.T) {
	home := t.TempDir()
	for i := 0; i < 5; i++ {
		// eval opens the store (creating it); the commands that only read,
		// like approvals, refuse a home without one.
		r := overseertest.Run(t, home, `{"tool":"Read","args":{"file_path":"/tmp/x"}}`, "eval")
		if r.Code != 0 {
			t.Fatal(r.Stderr)
		}
	}
	d := overseertest.StartDaemon(t, home)
	for i := 0; i < 4; i++ {
		code, body := d.Do(t, "POST", "/api/v1/actions", map[string]any{"tool": "Read", "cwd": "/tmp",
			"args": map[string]any{"file_path": "/tmp/f" + string(rune('a'+i))}}, false)
		if code != 200 {
			t.Fatalf("submit: %d %s", code, body)
		}
	}
	d.Kill()
	if r := overseertest.Run(t, home, "", "audit", "verify"); r.Code != 0 {
		t.Fatalf("clean chain: %d %s", r.Code, r.Stderr)
	}
	db, err := sql.Open("sqlite", filepath.Join(home, "overseer.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var seq int64
	if err := db.QueryRowContext(ctx, `SELECT seq FROM audit WHERE type = 'action' AND instr(data, '/tmp/fc') > 0`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE audit SET data = replace(data, '/tmp/fc', '/tmp/fx') WHERE seq = ?`, seq); err != nil {
		t.Fatal(err)
	}
	r := overseertest.Run(t, home, "", "audit", "verify")
	if r.Code == 0 || !strings.Contains(r.Stderr, fmt.Sprintf("record %d", seq)) {
		t.Fatalf("tampered chain: code %d, stderr %q", r.Code, r.Stderr)
	}
}

// `overseer eval` is a stable contract: one JSON object with level and reasons.
func TestEvalContract(t *testing.T) {
	home := t.TempDir()
	cases := []struct {
		in, want string
	}{
		{`{"tool":"Read","args":{"file_path":"README.md"},"cwd":"/src"}`, "auto"},
		{`{"tool":"Write","args":{"file_path":"a.go","content":"x"},"cwd":"/src"}`, "notify"},
		{`{"tool":"file_write","args":{"path":"/etc/hosts"},"cwd":"/src"}`, "confirm"},
		{`{"tool":"Bash","args":{"command":"git push origin main"},"cwd":"/src"}`, "approve"},
	}
	for _, c := range cases {
		r := overseertest.Run(t, home, c.in, "eval")
		if r.Code != 0 {
			t.Fatalf("eval %s: %d %s", c.in, r.Code, r.Stderr)
		}
		var out struct {
			Level   string            `json:"level"`
			Reasons []json.RawMessage `json:"reasons"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
			t.Fatalf("eval output: %v\n%s", err, r.Stdout)
		}
		if out.Level != c.want || out.Reasons == nil {
			t.Errorf("eval %s = %s (reasons %d), want %s", c.in, out.Level, len(out.Reasons), c.want)
		}
	}
	// A broken policy file never yields auto.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nrules:\n  - name: x\n    levle: auto\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := overseertest.Run(t, home, `{"tool":"Read","args":{"file_path":"x"}}`, "eval", "--policy", bad)
	if r.Code != 0 || !strings.Contains(r.Stdout, `"approve"`) || !strings.Contains(r.Stderr, "bad.yaml:4:") {
		t.Fatalf("eval with a broken policy: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	// Bad input is an error, not a verdict.
	if r := overseertest.Run(t, home, `not json`, "eval"); r.Code == 0 {
		t.Fatal("eval accepted invalid JSON")
	}
}

func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "overseer-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// With --tls-cert/--tls-key the daemon serves HTTPS and the CLI finds it,
// pinning the announced certificate.
func TestDaemonOverTLS(t *testing.T) {
	home := t.TempDir()
	cert, key := selfSigned(t, t.TempDir())
	overseertest.StartDaemon(t, home, "--tls-cert", cert, "--tls-key", key)
	b, err := os.ReadFile(filepath.Join(home, "daemon.json"))
	if err != nil || !strings.Contains(string(b), `"tls":true`) {
		t.Fatalf("daemon.json: %s %v", b, err)
	}
	r := overseertest.Run(t, home, "", "approvals", "--json")
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != "[]" {
		t.Fatalf("approvals over TLS: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	// Without TLS a non-loopback address is refused.
	r = overseertest.Run(t, t.TempDir(), "", "serve", "--addr", "0.0.0.0:0")
	if r.Code == 0 || !strings.Contains(r.Stderr, "not a loopback address") {
		t.Fatalf("serve on 0.0.0.0 without TLS: %d %q", r.Code, r.Stderr)
	}
}
