package cli

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
	_ "github.com/overseer-dev/overseer/plugins/tool/builtin" // registers tool.builtin
)

// cliEnv is a temporary Overseer home and a working directory outside it.
type cliEnv struct {
	home, proj, other string
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &cliEnv{home: filepath.Join(root, "home"), proj: filepath.Join(root, "proj"), other: filepath.Join(root, "other")}
	for _, d := range []string{e.home, e.proj, e.other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// run runs the CLI with --home and returns the exit status and output.
func (e *cliEnv) run(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(ctx, append([]string{"--home", e.home}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func (e *cliEnv) toolRun(t *testing.T, name string, args map[string]any, extra ...string) (int, string, string) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	// Generous: a run that judges SQL first compiles the SQL parser (a
	// WebAssembly module), seconds of CPU that a loaded machine stretches
	// past 30 s.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return e.run(t, ctx, append([]string{"tool", "run", name, "--cwd", e.proj, "--args", string(b)}, extra...)...)
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var actionIDRe = regexp.MustCompile(`overseer undo (act_[a-z0-9]+)`)

func TestToolRunWriteThenUndo(t *testing.T) {
	e := newCLIEnv(t)
	f := filepath.Join(e.proj, "notes.md")
	if err := os.WriteFile(f, []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := e.toolRun(t, "file_write", map[string]any{"file_path": "notes.md", "content": "rewritten\n"})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "level notify") {
		t.Errorf("a write in the working directory should run at notify: %s", stderr)
	}
	if readString(t, f) != "rewritten\n" {
		t.Fatal("the write did not happen")
	}
	m := actionIDRe.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no undo hint in %q", stderr)
	}
	id := m[1]

	ctx := context.Background()
	code, out, stderr := e.run(t, ctx, "undo", id, "--diff")
	if code != 0 || !strings.Contains(out, "-rewritten\n+original\n") {
		t.Errorf("undo --diff: exit %d, %q %s", code, out, stderr)
	}
	code, out, stderr = e.run(t, ctx, "undo", id)
	if code != 0 || !strings.Contains(out, "restored "+f) {
		t.Fatalf("undo: exit %d, %q %s", code, out, stderr)
	}
	if readString(t, f) != "original\n" {
		t.Error("undo did not restore the file")
	}
	code, _, stderr = e.run(t, ctx, "undo", id)
	if code == 0 || !strings.Contains(stderr, "already undone") {
		t.Errorf("second undo: exit %d, %s", code, stderr)
	}

	// A created file is removed by `undo --session --last`.
	code, _, stderr = e.toolRun(t, "file_write", map[string]any{"file_path": "new.txt", "content": "x"}, "--session", "s7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, out, _ = e.run(t, ctx, "undo", "--session", "s7", "--list")
	if code != 0 || !strings.Contains(out, filepath.Join(e.proj, "new.txt")) {
		t.Errorf("undo --list: exit %d, %q", code, out)
	}
	code, out, stderr = e.run(t, ctx, "undo", "--session", "s7", "--last", "1")
	if code != 0 || !strings.Contains(out, "undone act_") {
		t.Fatalf("undo --last: exit %d, %q %s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(e.proj, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the created file survived undo")
	}

	// Every undo is in the audit log.
	k, err := kernel.Open(ctx, kernel.Config{Home: e.home})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	recs, err := k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{kernel.TypeUndo}})
	if err != nil || len(recs) != 2 {
		t.Fatalf("undo audit records = %d, %v; want 2", len(recs), err)
	}
	if recs[0].ActionID != id || recs[0].Tool != "file_write" {
		t.Errorf("first undo record = %+v", recs[0])
	}
}

// TestToolRunWebFetchNeverReachesLoopback: even with --yes, no connection
// reaches a listener on a loopback address, in any spelling.
func TestToolRunWebFetchNeverReachesLoopback(t *testing.T) {
	e := newCLIEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, u := range []string{
		"http://127.0.0.1:" + port + "/",
		"http://localhost:" + port + "/admin",
		"http://2130706433:" + port + "/",
		"http://[::ffff:127.0.0.1]:" + port + "/",
		"http://0x7f.0.0.1:" + port + "/",
	} {
		t.Run(u, func(t *testing.T) {
			code, out, stderr := e.toolRun(t, "web_fetch", map[string]any{"url": u}, "--yes")
			if code == 0 {
				t.Errorf("web_fetch %s exited 0: %s %s", u, out, stderr)
			}
		})
	}
	// A connection that was made would be waiting in the listen queue.
	if err := ln.(*net.TCPListener).SetDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Fatal("a connection reached the loopback listener")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("Accept: %v, want a timeout", err)
	}
}

func TestToolRunBlocked(t *testing.T) {
	t.Run("policy rule", func(t *testing.T) {
		e := newCLIEnv(t)
		pol := filepath.Join(e.other, "policy.yaml")
		if err := os.WriteFile(pol, []byte(`version: 1
rules:
  - name: no-marker
    kind: shell
    when: 'args.command.contains("overseer-blocked-marker")'
    level: block
    message: the marker command is forbidden
`), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, stderr := e.toolRun(t, "bash", map[string]any{"command": "printf overseer-blocked-marker > marker.txt"}, "--yes", "--policy", pol)
		if code != 2 {
			t.Fatalf("exit %d, want 2: %s %s", code, out, stderr)
		}
		if !strings.Contains(stderr, "the marker command is forbidden") || !strings.Contains(stderr, "did not run") {
			t.Errorf("stderr does not give the reason: %s", stderr)
		}
		if _, err := os.Stat(filepath.Join(e.proj, "marker.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Error("the blocked command ran")
		}
	})
	t.Run("shell guard: mkfs", func(t *testing.T) {
		e := newCLIEnv(t)
		// Harmless even if it ran: the device does not exist.
		code, _, stderr := e.toolRun(t, "bash", map[string]any{"command": "mkfs.ext4 /dev/does-not-exist-overseer"}, "--yes")
		if code != 2 || !strings.Contains(stderr, "block") || !strings.Contains(stderr, "mkfs") {
			t.Errorf("exit %d, want 2 with the reason: %s", code, stderr)
		}
	})
	t.Run("a link into Overseer's home", func(t *testing.T) {
		e := newCLIEnv(t)
		if err := os.Symlink(e.home, filepath.Join(e.proj, "state")); err != nil {
			t.Fatal(err)
		}
		// The literal path is checked by the engine itself; the paths guard
		// also sees through the link.
		code, _, stderr := e.toolRun(t, "file_write", map[string]any{"file_path": e.home + "/policy.yaml", "content": "version: 1\n"}, "--yes")
		if code != 2 || !strings.Contains(stderr, "Overseer's own state") {
			t.Errorf("exit %d, want 2: %s", code, stderr)
		}
		code, _, stderr = e.toolRun(t, "file_write", map[string]any{"file_path": "state/policy.yaml", "content": "version: 1\n"}, "--yes")
		if code != 2 || !strings.Contains(stderr, "Overseer's own state") {
			t.Errorf("through the link: exit %d, want 2: %s", code, stderr)
		}
		if _, err := os.Stat(filepath.Join(e.home, "policy.yaml")); !errors.Is(err, os.ErrNotExist) {
			t.Error("the policy file was written")
		}
	})
}

func TestToolRunYes(t *testing.T) {
	e := newCLIEnv(t)
	out := filepath.Join(e.other, "report.txt")
	code, _, stderr := e.toolRun(t, "file_write", map[string]any{"file_path": out, "content": "report"}, "--yes")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "level confirm") {
		t.Errorf("a write outside the working directory should be confirm: %s", stderr)
	}
	if readString(t, out) != "report" {
		t.Error("not written")
	}
	ctx := context.Background()
	k, err := kernel.Open(ctx, kernel.Config{Home: e.home})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	recs, _ := k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{"answer"}})
	if len(recs) != 1 || !strings.Contains(string(recs[0].Data), `"channel":"cli-yes"`) {
		t.Errorf("answer records = %d: %v", len(recs), recs)
	}

	code, stdout, stderr := e.toolRun(t, "bash", map[string]any{"command": "echo hello from bash"}, "--yes")
	if code != 0 || stdout != "hello from bash\n" {
		t.Errorf("bash: exit %d, %q %s", code, stdout, stderr)
	}
	code, _, _ = e.toolRun(t, "bash", map[string]any{"command": "exit 4"}, "--yes")
	if code != 1 {
		t.Errorf("a failing command exited %d, want 1", code)
	}
}

// TestToolRunWaitsForAPerson: without --yes a confirm-level call waits,
// printing the approval id; another `overseer` process answers.
func TestToolRunWaitsForAPerson(t *testing.T) {
	for _, decision := range []string{"deny", "approve"} {
		t.Run(decision, func(t *testing.T) {
			e := newCLIEnv(t)
			target := filepath.Join(e.other, "x.txt")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			pr, pw := io.Pipe()
			ids := make(chan string, 1)
			go func() { // owned by this test; ends when pw is closed
				sc := bufio.NewScanner(pr)
				re := regexp.MustCompile(`waiting for approval (\S+)`)
				for sc.Scan() {
					if m := re.FindStringSubmatch(sc.Text()); m != nil {
						ids <- m[1]
					}
				}
				io.Copy(io.Discard, pr)
			}()
			codes := make(chan int, 1)
			go func() { // owned by this test; ends when Main returns
				defer pw.Close()
				args, _ := json.Marshal(map[string]any{"file_path": target, "content": "c"})
				codes <- Main(ctx, []string{"--home", e.home, "tool", "run", "file_write", "--cwd", e.proj, "--args", string(args)},
					strings.NewReader(""), io.Discard, pw)
			}()
			var id string
			select {
			case id = <-ids:
			case <-ctx.Done():
				t.Fatal("no approval id was printed")
			}
			if code, _, stderr := e.run(t, ctx, decision, id, "--who", "boss"); code != 0 {
				t.Fatalf("%s: exit %d: %s", decision, code, stderr)
			}
			code := <-codes
			_, err := os.Stat(target)
			switch decision {
			case "deny":
				if code != 2 || !errors.Is(err, os.ErrNotExist) {
					t.Errorf("denied: exit %d (want 2), file: %v", code, err)
				}
			case "approve":
				if code != 0 || err != nil {
					t.Errorf("approved: exit %d (want 0), file: %v", code, err)
				}
			}
		})
	}
}

func TestToolRunReadThenEdit(t *testing.T) {
	e := newCLIEnv(t)
	f := filepath.Join(e.proj, "main.go")
	if err := os.WriteFile(f, []byte("package main\n\nfunc old() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	edit := map[string]any{"file_path": "main.go", "old_string": "old", "new_string": "renamed"}
	code, _, stderr := e.toolRun(t, "file_edit", edit)
	if code != 2 || !strings.Contains(stderr, "read the file first") {
		t.Errorf("unread edit: exit %d, want 2: %s", code, stderr)
	}
	code, stdout, stderr := e.toolRun(t, "file_read", map[string]any{"file_path": "main.go"})
	if code != 0 || !strings.Contains(stdout, "func old()") {
		t.Fatalf("read: exit %d %q %s", code, stdout, stderr)
	}
	code, _, stderr = e.toolRun(t, "file_edit", edit)
	if code != 0 {
		t.Fatalf("edit after a full read: exit %d: %s", code, stderr)
	}
	if !strings.Contains(readString(t, f), "func renamed()") {
		t.Error("the edit did not happen")
	}
}

func TestToolRunUsage(t *testing.T) {
	e := newCLIEnv(t)
	ctx := context.Background()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad args json", []string{"tool", "run", "bash", "--args", "{nope"}, 2, "--args must be a JSON object"},
		{"args not an object", []string{"tool", "run", "bash", "--args", "[1]"}, 2, "--args must be a JSON object"},
		{"unknown plugin", []string{"tool", "run", "bash", "--plugin", "tool.nope"}, 1, "not registered"},
		{"bad plugin config", []string{"tool", "run", "bash", "--config", `{"nope":1}`}, 1, "unknown field"},
		{"unknown tool", []string{"tool", "run", "nope"}, 1, "no such tool"},
		{"undo without target", []string{"undo"}, 2, "name an action id"},
		{"undo unknown action", []string{"undo", "act_unknown"}, 1, "nothing kept"},
		{"undo diff unknown action", []string{"undo", "act_unknown", "--diff"}, 1, "nothing kept"},
		{"undo nothing in session", []string{"undo", "--session", "empty"}, 0, ""},
		{"undo prune", []string{"undo", "--prune", "--max-age", "1h"}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := e.run(t, ctx, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", code, tc.code, stderr, tc.want)
			}
		})
	}
	code, out, _ := e.run(t, ctx, "tool", "list")
	if code != 0 || !strings.Contains(out, `"name": "file_edit"`) {
		t.Errorf("tool list: exit %d, %.200q", code, out)
	}
}

func FuzzParseCallArgs(f *testing.F) {
	f.Add(`{"command":"ls"}`)
	f.Add(`{"file_path":"a","offset":1.5e3}`)
	f.Add(`{} {}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, s string) {
		if strings.HasPrefix(s, "@") {
			return // names a file
		}
		m, err := parseCallArgs(s)
		if err == nil && m == nil {
			t.Fatal("no error and no map")
		}
	})
}

func TestToolRunSQL(t *testing.T) {
	e := newCLIEnv(t)
	dsn := filepath.Join(e.other, "staging.db")
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, version INTEGER NOT NULL DEFAULT 1);
		INSERT INTO t (id, v) VALUES (1, 'a')`); err != nil {
		t.Fatal(err)
	}
	cfg := `{"sql":{"dsn":"` + dsn + `"}}`
	code, out, stderr := e.toolRun(t, "sql_query", map[string]any{"query": "SELECT v FROM t"}, "--yes", "--config", cfg)
	if code != 0 || !strings.Contains(out, "v\na\n") {
		t.Fatalf("sql_query: exit %d %q %s", code, out, stderr)
	}
	update := map[string]any{"table": "t", "id": 1, "version": 1, "set": map[string]any{"v": "b"}}
	if code, out, stderr = e.toolRun(t, "sql_exec", update, "--yes", "--config", cfg); code != 0 {
		t.Fatalf("sql_exec: exit %d %q %s", code, out, stderr)
	}
	// The same update again carries a stale version: a conflict, not a retry.
	code, out, _ = e.toolRun(t, "sql_exec", update, "--yes", "--config", cfg)
	if code != 1 || !strings.Contains(out, "version conflict") {
		t.Errorf("stale sql_exec: exit %d (want 1) %q", code, out)
	}
	var v string
	var version int
	if err := db.QueryRow(`SELECT v, version FROM t WHERE id = 1`).Scan(&v, &version); err != nil || v != "b" || version != 2 {
		t.Errorf("row = %q version %d (%v), want b 2", v, version, err)
	}
}
