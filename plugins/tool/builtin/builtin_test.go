package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/guard/netguard"
	"github.com/overseer-dev/overseer/internal/guard/paths"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
	"github.com/overseer-dev/overseer/plugin"
)

func newTools(t testing.TB, cfg Config) *Tools {
	t.Helper()
	tl, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func tempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// tracked returns a context with read tracking over a real SQLite store.
func tracked(t testing.TB) (context.Context, *paths.StoreTracker) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "overseer.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tr := paths.NewStoreTracker(db, nil)
	return paths.WithTracking(context.Background(), paths.Tracking{Reads: tr, Session: "s1"}), tr
}

func TestRegistered(t *testing.T) {
	inst, err := plugin.New(ID, json.RawMessage(`{"max_output_bytes": 1000}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := inst.(plugin.Tool); !ok {
		t.Fatalf("%T is not a plugin.Tool", inst)
	}
	if _, err := plugin.New(ID, json.RawMessage(`{"max_output_byte": 1000}`)); !errors.Is(err, ErrConfig) {
		t.Errorf("a misspelt field was accepted: %v", err)
	}
}

func TestSpecs(t *testing.T) {
	specs, err := newTools(t, Config{}).Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ToolBash: "shell", ToolFileRead: "file_read", ToolFileWrite: "file_write",
		ToolFileEdit: "file_edit", ToolWebFetch: "net_fetch", ToolSQLQuery: "sql", ToolSQLExec: "sql"}
	if len(specs) != len(want) {
		t.Fatalf("%d specs, want %d", len(specs), len(want))
	}
	for _, s := range specs {
		t.Run(s.Name, func(t *testing.T) {
			if want[s.Name] != s.Kind {
				t.Errorf("kind %q, want %q", s.Kind, want[s.Name])
			}
			var sch map[string]any
			if err := json.Unmarshal(s.InputSchema, &sch); err != nil || sch["type"] != "object" {
				t.Errorf("schema %s: %v", s.InputSchema, err)
			}
		})
	}
	if _, err := newTools(t, Config{}).Execute(context.Background(), plugin.Call{Tool: "nope"}); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("unknown tool error = %v", err)
	}
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"empty", ``, true},
		{"null", `null`, true},
		{"full", `{"home":"/h","max_output_bytes":10,"bash_timeout":"30s","net":{"allow_hosts":["wiki.corp.example"]},"web_max_bytes":1000,"sql":{"dsn":"/x.db","max_rows":5}}`, true},
		{"unknown field", `{"bash_timout":"30s"}`, false},
		{"timeout over the ceiling", `{"bash_timeout":"11m"}`, false},
		{"negative timeout", `{"bash_timeout":"-1s"}`, false},
		{"web cap over 1 MiB", `{"web_max_bytes":2000000}`, false},
		{"bad net policy", `{"net":{"allow_hosts":["10.0.0.0/99"]}}`, false},
		{"other driver", `{"sql":{"driver":"postgres"}}`, false},
		{"trailing", `{} {}`, false},
		{"not an object", `[1]`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig(json.RawMessage(tc.in))
			if (err == nil) != tc.ok {
				t.Errorf("ParseConfig(%s) error = %v, want ok=%v", tc.in, err, tc.ok)
			}
		})
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add(`{"bash_timeout":"30s","sql":{"dsn":"x"}}`)
	f.Add(`{"net":{"allow_hosts":["*.corp.example","10.1.0.0/16"]}}`)
	f.Add(`{"max_output_bytes":-1}`)
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ParseConfig(json.RawMessage(in))
		if err != nil {
			return
		}
		if _, err := New(c); err != nil {
			t.Fatalf("a parsed configuration does not build: %v", err)
		}
	})
}

func TestBash(t *testing.T) {
	dir := tempDir(t)
	if err := os.WriteFile(filepath.Join(dir, "here.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tl := newTools(t, Config{MaxOutputBytes: 64})
	tests := []struct {
		name    string
		args    map[string]any
		cwd     string
		isError bool
		want    []string
		meta    map[string]any
	}{
		{"echo", map[string]any{"command": "echo hello"}, dir, false, []string{"hello"}, map[string]any{"exit_code": 0}},
		{"runs in cwd", map[string]any{"command": "ls"}, dir, false, []string{"here.txt"}, nil},
		{"stderr is captured", map[string]any{"command": "printf oops >&2"}, dir, false, []string{"oops"}, nil},
		{"exit status", map[string]any{"command": "printf x; exit 3"}, dir, true, []string{"x", "exit status 3"}, map[string]any{"exit_code": 3}},
		{"output cap", map[string]any{"command": "printf '%0200d' 0"}, dir, false, []string{"output truncated", "136 more bytes"}, map[string]any{"truncated": true}},
		{"timeout", map[string]any{"command": "echo start; sleep 5", "timeout_seconds": json.Number("1")}, dir, true, []string{"start", "stopped after 1s"}, map[string]any{"timed_out": true}},
		{"description allowed", map[string]any{"command": "echo d", "description": "print d"}, dir, false, []string{"d"}, nil},
		{"unknown argument", map[string]any{"command": "echo x", "sudo": true}, dir, true, []string{"invalid arguments"}, nil},
		{"empty command", map[string]any{"command": ""}, dir, true, []string{"empty"}, nil},
		{"relative cwd", map[string]any{"command": "echo x"}, "rel", true, []string{"not an absolute path"}, nil},
		{"bad timeout", map[string]any{"command": "echo x", "timeout_seconds": json.Number("0")}, dir, true, []string{"positive"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, err := tl.Execute(context.Background(), plugin.Call{Tool: ToolBash, Args: tc.args, Cwd: tc.cwd})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tc.isError {
				t.Errorf("IsError = %v, want %v: %q", res.IsError, tc.isError, res.Output)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output %q lacks %q", res.Output, w)
				}
			}
			for k, v := range tc.meta {
				if fmt.Sprint(res.Meta[k]) != fmt.Sprint(v) {
					t.Errorf("meta[%s] = %v, want %v", k, res.Meta[k], v)
				}
			}
			if time.Since(start) > 4*time.Second {
				t.Errorf("took %s: the timeout did not stop the command", time.Since(start))
			}
		})
	}
}

func TestFileTools(t *testing.T) {
	type check func(t *testing.T, dir string, res plugin.Result, tr *paths.StoreTracker)
	contains := func(ws ...string) check {
		return func(t *testing.T, _ string, res plugin.Result, _ *paths.StoreTracker) {
			for _, w := range ws {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output %q lacks %q", res.Output, w)
				}
			}
		}
	}
	fileIs := func(name, want string) check {
		return func(t *testing.T, dir string, _ plugin.Result, _ *paths.StoreTracker) {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || string(b) != want {
				t.Errorf("%s = %q (%v), want %q", name, b, err, want)
			}
		}
	}
	readIs := func(name string, full bool) check {
		return func(t *testing.T, dir string, _ plugin.Result, tr *paths.StoreTracker) {
			ri, ok, err := tr.LastRead(context.Background(), "s1", filepath.Join(dir, name))
			if err != nil || !ok || ri.Full != full {
				t.Errorf("read record of %s = %+v %v %v, want full=%v", name, ri, ok, err, full)
			}
			h, _, _ := paths.HashFile(filepath.Join(dir, name))
			if ri.Hash != h {
				t.Errorf("recorded hash %s, file hash %s", ri.Hash, h)
			}
		}
	}
	noRead := func(name string) check {
		return func(t *testing.T, dir string, _ plugin.Result, tr *paths.StoreTracker) {
			if _, ok, _ := tr.LastRead(context.Background(), "s1", filepath.Join(dir, name)); ok {
				t.Errorf("%s has a read record", name)
			}
		}
	}
	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		isError bool
		checks  []check
	}{
		{"read whole file", ToolFileRead, map[string]any{"file_path": "a.txt"}, false,
			[]check{contains("one\ntwo\nthree\n"), readIs("a.txt", true)}},
		{"read a range", ToolFileRead, map[string]any{"file_path": "a.txt", "offset": json.Number("2"), "limit": json.Number("1")}, false,
			[]check{contains("two\n"), readIs("a.txt", false)}},
		{"read past the end", ToolFileRead, map[string]any{"file_path": "a.txt", "offset": json.Number("9")}, false,
			[]check{contains("no lines in this range")}},
		{"read through a link", ToolFileRead, map[string]any{"file_path": "link.txt"}, false,
			[]check{contains("one"), readIs("a.txt", true)}},
		{"read truncated is partial", ToolFileRead, map[string]any{"file_path": "big.txt"}, false,
			[]check{contains("output truncated"), readIs("big.txt", false)}},
		{"read a directory", ToolFileRead, map[string]any{"file_path": "."}, true, []check{contains("is a directory")}},
		{"read a binary file", ToolFileRead, map[string]any{"file_path": "bin.dat"}, true, []check{contains("binary")}},
		{"read a missing file", ToolFileRead, map[string]any{"file_path": "missing.txt"}, true, []check{contains("no such file")}},
		{"read a loop", ToolFileRead, map[string]any{"file_path": "loop"}, true, []check{contains("loop")}},
		{"read bad offset", ToolFileRead, map[string]any{"file_path": "a.txt", "offset": json.Number("-1")}, true, nil},
		{"write creates dirs", ToolFileWrite, map[string]any{"file_path": "new/dir/b.txt", "content": "B"}, false,
			[]check{contains("Created"), fileIs("new/dir/b.txt", "B"), readIs("new/dir/b.txt", true)}},
		{"write replaces, keeps mode", ToolFileWrite, map[string]any{"file_path": "exec.sh", "content": "#!/bin/sh\necho 2\n"}, false,
			[]check{contains("Wrote"), fileIs("exec.sh", "#!/bin/sh\necho 2\n"), func(t *testing.T, dir string, _ plugin.Result, _ *paths.StoreTracker) {
				fi, _ := os.Stat(filepath.Join(dir, "exec.sh"))
				if fi.Mode().Perm() != 0o755 {
					t.Errorf("mode = %v, want 0755", fi.Mode().Perm())
				}
			}}},
		{"write through a link writes the target", ToolFileWrite, map[string]any{"file_path": "link.txt", "content": "via link"}, false,
			[]check{fileIs("a.txt", "via link"), func(t *testing.T, dir string, _ plugin.Result, _ *paths.StoreTracker) {
				if fi, err := os.Lstat(filepath.Join(dir, "link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Error("the link was replaced")
				}
			}}},
		{"write onto a directory", ToolFileWrite, map[string]any{"file_path": "sub", "content": "x"}, true, nil},
		{"write without content", ToolFileWrite, map[string]any{"file_path": "c.txt"}, false, []check{fileIs("c.txt", "")}},
		{"edit unique", ToolFileEdit, map[string]any{"file_path": "a.txt", "old_string": "two", "new_string": "2"}, false,
			[]check{contains("1 replacement"), fileIs("a.txt", "one\n2\nthree\n"), readIs("a.txt", true)}},
		{"edit not unique", ToolFileEdit, map[string]any{"file_path": "dup.txt", "old_string": "x", "new_string": "y"}, true,
			[]check{contains("occurs 3 times"), fileIs("dup.txt", "x x x")}},
		{"edit replace_all", ToolFileEdit, map[string]any{"file_path": "dup.txt", "old_string": "x", "new_string": "y", "replace_all": true}, false,
			[]check{contains("3 replacement"), fileIs("dup.txt", "y y y")}},
		{"edit not found", ToolFileEdit, map[string]any{"file_path": "a.txt", "old_string": "four", "new_string": "4"}, true,
			[]check{contains("not found"), fileIs("a.txt", "one\ntwo\nthree\n")}},
		{"edit empty old", ToolFileEdit, map[string]any{"file_path": "a.txt", "old_string": "", "new_string": "4"}, true, []check{contains("file_write")}},
		{"edit same", ToolFileEdit, map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "one"}, true, nil},
		{"edit a file changed since the read", ToolFileEdit, map[string]any{"file_path": "stale.txt", "old_string": "v", "new_string": "w"}, true,
			[]check{contains("changed since you read it"), fileIs("stale.txt", "v2")}},
		{"edit with unknown argument", ToolFileEdit, map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "1", "force": true}, true,
			[]check{fileIs("a.txt", "one\ntwo\nthree\n"), noRead("a.txt")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tempDir(t)
			files := map[string]string{"a.txt": "one\ntwo\nthree\n", "dup.txt": "x x x", "bin.dat": "a\x00b",
				"big.txt": strings.Repeat("0123456789\n", 20), "exec.sh": "#!/bin/sh\necho 1\n", "stale.txt": "v1"}
			for n, c := range files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			os.Chmod(filepath.Join(dir, "exec.sh"), 0o755)
			os.Mkdir(filepath.Join(dir, "sub"), 0o755)
			os.Symlink("a.txt", filepath.Join(dir, "link.txt"))
			os.Symlink("loop", filepath.Join(dir, "loop"))
			ctx, tr := tracked(t)
			// stale.txt was read as v1, then changed to v2 behind the agent's back.
			h, mt, _ := paths.HashFile(filepath.Join(dir, "stale.txt"))
			tr.RecordRead(ctx, "s1", filepath.Join(dir, "stale.txt"), true, mt, h)
			os.WriteFile(filepath.Join(dir, "stale.txt"), []byte("v2"), 0o644)

			tl := newTools(t, Config{MaxOutputBytes: 100, Home: dir})
			res, err := tl.Execute(ctx, plugin.Call{Tool: tc.tool, Args: tc.args, Cwd: dir})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tc.isError {
				t.Fatalf("IsError = %v, want %v: %s", res.IsError, tc.isError, res.Output)
			}
			for _, c := range tc.checks {
				c(t, dir, res, tr)
			}
		})
	}
	t.Run("relative path without cwd", func(t *testing.T) {
		res, _ := newTools(t, Config{}).Execute(context.Background(), plugin.Call{Tool: ToolFileRead, Args: map[string]any{"file_path": "a.txt"}})
		if !res.IsError || !strings.Contains(res.Output, "relative") {
			t.Errorf("result = %+v", res)
		}
	})
	t.Run("without tracking nothing is recorded and nothing fails", func(t *testing.T) {
		dir := tempDir(t)
		os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x"), 0o644)
		res, _ := newTools(t, Config{}).Execute(context.Background(), plugin.Call{Tool: ToolFileRead, Args: map[string]any{"file_path": "a.txt"}, Cwd: dir})
		if res.IsError || res.Output != "x" {
			t.Errorf("result = %+v", res)
		}
	})
}

// TestWebFetchRefusesLoopback: whatever the spelling, web_fetch never sends
// a byte to a loopback listener.
func TestWebFetchRefusesLoopback(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "secret internal data")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	tl := newTools(t, Config{})
	urls := []string{
		srv.URL,
		"http://localhost:" + port + "/",
		"http://2130706433:" + port + "/",
		"http://0x7f000001:" + port + "/",
		"http://0177.0.0.1:" + port + "/",
		"http://127.1:" + port + "/",
		"http://[::ffff:127.0.0.1]:" + port + "/",
		"http://sub.localhost:" + port + "/",
		"http://127.0.0.1.:" + port + "/",
	}
	for _, u := range urls {
		t.Run(u, func(t *testing.T) {
			res, err := tl.Execute(context.Background(), plugin.Call{Tool: ToolWebFetch, Args: map[string]any{"url": u}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || strings.Contains(res.Output, "secret internal data") {
				t.Errorf("fetch of %s was not refused: %+v", u, res)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback server saw %d requests, want 0", n)
	}
}

// TestWebFetchAllowed exercises the fetch path against a loopback server
// an operator allowed explicitly (the only kind of server a test may use).
func TestWebFetchAllowed(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>T</title><style>p{}</style></head><body><h1>Title</h1><script>evil()</script><p>Hello <b>world</b></p><svg/><p>after svg</p></body></html>`)
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a":1}`)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("x", 5000))
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte{0x89, 'P', 'N', 'G'})
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/json", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/missing", http.NotFound)
	var methods atomic.Value
	mux.HandleFunc("/method", func(w http.ResponseWriter, r *http.Request) {
		methods.Store(r.Method)
		fmt.Fprint(w, "ok")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tl := newTools(t, Config{Net: netguard.Policy{AllowHosts: []string{"127.0.0.1"}}, WebMaxBytes: 1000, MaxOutputBytes: 4000})
	tests := []struct {
		path    string
		isError bool
		want    []string
		not     []string
	}{
		{"/page", false, []string{"Title", "Hello world", "after svg", "Status: 200"}, []string{"evil", "p{}", "<b>"}},
		{"/json", false, []string{`{"a":1}`}, nil},
		{"/big", false, []string{"body was cut at 1000 bytes"}, []string{strings.Repeat("x", 1001)}},
		{"/image", true, []string{"not text"}, nil},
		{"/redirect", false, []string{`{"a":1}`, "/json"}, nil},
		{"/loop", true, []string{"redirect"}, nil},
		{"/missing", true, []string{"404"}, nil},
		{"/method", false, []string{"ok"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			res, err := tl.Execute(context.Background(), plugin.Call{Tool: ToolWebFetch, Args: map[string]any{"url": srv.URL + tc.path}})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tc.isError {
				t.Errorf("IsError = %v, want %v: %.300s", res.IsError, tc.isError, res.Output)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output lacks %q: %.300s", w, res.Output)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(res.Output, n) {
					t.Errorf("output has %q", n)
				}
			}
		})
	}
	if m, _ := methods.Load().(string); m != http.MethodGet {
		t.Errorf("method = %q, want GET", m)
	}
}

func FuzzHTMLText(f *testing.F) {
	f.Add(`<html><head><title>T</title></head><body><p>a<b>b</b></p><script>x</script></body></html>`)
	f.Add(`<svg/><p>x`)
	f.Add(`</script></style><style><p>`)
	f.Fuzz(func(t *testing.T, doc string) {
		out := htmlText(doc)
		if strings.Contains(out, "\n\n\n") {
			t.Fatalf("blank lines not collapsed: %q", out)
		}
	})
}

func TestCapOutput(t *testing.T) {
	tests := []struct {
		in    string
		n     int
		want  string
		trunc bool
	}{
		{"short", 10, "short", false},
		{"exactly", 7, "exactly", false},
		{"héllo", 2, "h", true}, // never cut inside a character
		{"abcdef", 3, "abc", true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			meta := map[string]any{}
			got := capOutput(tc.in, tc.n, meta)
			if !strings.HasPrefix(got, tc.want) || (meta["truncated"] != nil) != tc.trunc {
				t.Errorf("capOutput(%q, %d) = %q, meta %v", tc.in, tc.n, got, meta)
			}
			if tc.trunc && !strings.Contains(got, "warning: output truncated") {
				t.Errorf("no warning in %q", got)
			}
		})
	}
	b := &cappedBuffer{max: 4}
	b.Write([]byte("ab"))
	b.Write([]byte("cé"))
	b.Write([]byte("zz"))
	meta := map[string]any{}
	if got := b.text(meta); !strings.HasPrefix(got, "abc\n[warning") || meta["truncated_bytes"] != int64(3) {
		t.Errorf("cappedBuffer text = %q, meta %v", got, meta)
	}
}
