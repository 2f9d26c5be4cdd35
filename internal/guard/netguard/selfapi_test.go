package netguard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

func selfAPIAt(t *testing.T, addr string) *SelfAPI {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "daemon.json"), []byte(`{"addr":"`+addr+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return NewSelfAPI(home)
}

func TestSelfAPIMatchURL(t *testing.T) {
	s := selfAPIAt(t, "127.0.0.1:8080")
	for _, tc := range []struct {
		url  string
		bare bool
		hit  bool
	}{
		{"http://127.0.0.1:8080/", false, true},
		{"http://127.0.0.1:7777/x", false, true}, // the default port stays the daemon's
		{"http://2130706433:8080/", false, true},
		{"http://0x7f000001:8080/", false, true},
		{"http://017700000001:8080/", false, true},
		{"http://127.1:8080/", false, true},
		{"http://[::1]:8080/", false, true},
		{"http://[0:0:0:0:0:0:0:1]:8080/", false, true},
		{"http://[::ffff:127.0.0.1]:8080/", false, true},
		{"http://0.0.0.0:8080/", false, true},
		{"http://0:8080/", false, true},
		{"http://localhost.:8080/", false, true},
		{"ws://localhost:8080/mcp", false, true},
		{"gopher://127.0.0.1:8080/_POST", false, true},
		{"localhost:8080/api", true, true},
		{":8080/api", true, true},
		{"localhost:8080/api", false, false}, // no scheme, not read as a URL
		{"http://localhost:3000/api/v1/approvals/a/approve", false, true},
		{"http://localhost:3000/api/v1/%70olicy", false, true},
		{"http://localhost:3000/api/v1/tasks/t/abort", false, true},
		{"http://localhost:3000/api/v1/actions/a/keep", false, true},
		{"http://localhost:3000/api/v1/users", false, false},
		{"http://localhost:3000/health", false, false},
		{"https://example.com/api/v1/approvals", false, false},
		{"http://10.0.0.8:8080/", false, false},
	} {
		why := s.MatchURL(tc.url, tc.bare)
		if (why != "") != tc.hit {
			t.Errorf("MatchURL(%q, %v) = %q, want hit %v", tc.url, tc.bare, why, tc.hit)
		}
	}
}

func TestSelfAPINonLoopbackListen(t *testing.T) {
	s := selfAPIAt(t, "192.0.2.10:9443")
	if s.MatchURL("https://192.0.2.10:9443/api/v1/approvals", false) == "" {
		t.Error("the daemon's own address is not recognised")
	}
	if s.MatchHostPort("192.0.2.10", "9443") == "" || s.MatchHostPort("127.0.0.1", "9443") == "" {
		t.Error("host and port of the daemon not recognised")
	}
	if s.MatchHostPort("192.0.2.11", "9443") != "" {
		t.Error("another host recognised as the daemon")
	}
}

func TestSelfAPIAddrFileChanges(t *testing.T) {
	home := t.TempDir()
	s := NewSelfAPI(home)
	if s.DaemonPort(9000) {
		t.Fatal("port 9000 before the daemon runs")
	}
	if err := os.WriteFile(filepath.Join(home, "daemon.json"), []byte(`{"addr":"127.0.0.1:9000"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.checked = s.checked.Add(-2 * selfRefresh)
	s.mu.Unlock()
	if !s.DaemonPort(9000) {
		t.Fatal("the address file's port is not read once it appears")
	}
}

func TestGuardSelfAPI(t *testing.T) {
	// Even an operator who opens loopback to fetches keeps the daemon out.
	g := New(Policy{AllowHosts: []string{"127.0.0.0/8", "::1"}}).WithSelfAPI(selfAPIAt(t, "127.0.0.1:8080"))
	for _, tc := range []struct {
		a     action.Action
		check string
	}{
		{action.Action{Tool: "WebFetch", Kind: action.KindNetFetch, Args: map[string]any{"url": "http://127.0.0.1:8080/api/v1/approvals/a/approve"}}, "net.self-api"},
		{action.Action{Tool: "WebFetch", Kind: action.KindNetFetch, Args: map[string]any{"url": "http://127.0.0.1:3000/"}}, ""},
		{action.Action{Tool: "mcp__http__post", Kind: action.KindMCP, Args: map[string]any{"request": map[string]any{"endpoint": "http://[::1]:8080/api/v1/policy/rules"}}}, "net.self-api"},
		{action.Action{Tool: "mcp__http__post", Kind: action.KindMCP, Args: map[string]any{"endpoint": "http://localhost:3000/api/v1/users"}}, ""},
		{action.Action{Tool: "Write", Kind: action.KindFileWrite, Args: map[string]any{"file_path": "/w/README.md", "content": "call http://127.0.0.1:8080/api/v1/approvals to answer"}}, ""},
		{action.Action{Tool: "Bash", Kind: action.KindShell, Args: map[string]any{"command": "curl http://127.0.0.1:8080/"}}, ""}, // the shell guard's
	} {
		a := tc.a
		got, err := g.Check(context.Background(), &a)
		if err != nil {
			t.Fatal(err)
		}
		check := ""
		for _, f := range got {
			if f.Check == "net.self-api" {
				check = f.Check
				if f.Level != action.Block || !f.Hard {
					t.Errorf("%s %v: %+v is not a hard block", a.Tool, a.Args, f)
				}
			}
		}
		if check != tc.check {
			t.Errorf("%s %v: findings %v, want %q", a.Tool, a.Args, got, tc.check)
		}
	}
}
