package mcptool_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/plugin"
	mcptool "github.com/overseer-dev/overseer/plugins/tool/mcp"
)

// realSetup is a client in front of the npm filesystem server (allowed
// only data) and the everything server.
type realSetup struct {
	c    *mcptool.Client
	data string // the filesystem server's allowed directory
	clk  *clock.Fake
}

func newReal(t *testing.T) *realSetup {
	t.Helper()
	mod := peers(t)
	data := t.TempDir()
	t.Setenv("MCPTOOL_TEST_MARKER", "marker-from-the-environment")
	raw := `{"servers": {
	  "fs": {
	    "command": "node",
	    "args": [` + q(filepath.Join(mod, "server-filesystem", "dist", "index.js")) + `, ` + q(data) + `],
	    "tools": {
	      "write_file": {"kind": "file_write", "arg": "path"},
	      "read_text_file": {"kind": "file_read", "arg": "path"}
	    },
	    "hide_tools": ["move_*"]
	  },
	  "every": {
	    "command": "node",
	    "args": [` + q(filepath.Join(mod, "server-everything", "dist", "index.js")) + `, "stdio"],
	    "env": {"MCPTOOL_TEST_ENV": "${MCPTOOL_TEST_MARKER}"},
	    "restart": {"initial": "500ms", "max": "2s"}
	  }
	}}`
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	c, err := mcptool.New(ctxT(t), parse(t, raw), mcptool.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &realSetup{c: c, data: data, clk: clk}
}

func (s *realSetup) exec(t *testing.T, tool string, args map[string]any) (plugin.Result, error) {
	t.Helper()
	return s.c.Execute(ctxT(t), plugin.Call{Tool: tool, Args: args})
}

// TestRealServers runs the plugin against the real npm servers.
func TestRealServers(t *testing.T) {
	s := newReal(t)

	t.Run("listing", func(t *testing.T) {
		specs, err := s.c.Tools(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]plugin.ToolSpec{}
		for _, sp := range specs {
			if !strings.HasPrefix(sp.Name, "fs__") && !strings.HasPrefix(sp.Name, "every__") {
				t.Errorf("tool %q has no server prefix", sp.Name)
			}
			var schema map[string]any
			if err := json.Unmarshal(sp.InputSchema, &schema); err != nil || schema["type"] != "object" {
				t.Errorf("%s: input schema %s is not an object schema (%v)", sp.Name, sp.InputSchema, err)
			}
			byName[sp.Name] = sp
		}
		for name, kind := range map[string]string{
			"fs__write_file":        "file_write",
			"fs__read_text_file":    "file_read",
			"fs__list_directory":    "mcp",
			"every__echo":           "mcp",
			"every__get-sum":        "mcp",
			"every__get-env":        "mcp",
			"every__get-tiny-image": "mcp",
		} {
			sp, ok := byName[name]
			switch {
			case !ok:
				t.Errorf("%s is not listed", name)
			case sp.Kind != kind:
				t.Errorf("%s: kind %q, want %q", name, sp.Kind, kind)
			case sp.Description == "":
				t.Errorf("%s: no description", name)
			}
		}
		if _, ok := byName["fs__move_file"]; ok {
			t.Error("fs__move_file is listed although hidden")
		}
		if !strings.Contains(string(byName["fs__write_file"].InputSchema), `"path"`) {
			t.Errorf("write_file's schema lacks its path: %s", byName["fs__write_file"].InputSchema)
		}
	})

	t.Run("write then read a file", func(t *testing.T) {
		file := filepath.Join(s.data, "note.txt")
		args := map[string]any{"path": file, "content": "written through MCP\n"}
		res, err := s.exec(t, "fs__write_file", args)
		if err != nil || res.IsError {
			t.Fatalf("write: %v %+v", err, res)
		}
		if got, err := os.ReadFile(file); err != nil || string(got) != "written through MCP\n" {
			t.Fatalf("file on disk: %q %v", got, err)
		}
		if args["path"] != file || len(args) != 2 {
			t.Errorf("the arguments were changed: %v", args)
		}
		res, err = s.exec(t, "fs__read_text_file", map[string]any{"path": file})
		if err != nil || res.IsError || !strings.Contains(res.Output, "written through MCP") {
			t.Fatalf("read: %v %+v", err, res)
		}
		if res.Meta[mcptool.MetaServer] != "fs" || res.Meta[mcptool.MetaTool] != "read_text_file" {
			t.Errorf("meta %v", res.Meta)
		}
	})

	t.Run("reading outside the allowed directory is an error result", func(t *testing.T) {
		outside := filepath.Join(t.TempDir(), "secret.txt")
		if err := os.WriteFile(outside, []byte("not for the server"), 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := s.exec(t, "fs__read_text_file", map[string]any{"path": outside})
		if err != nil {
			t.Fatalf("want an error result, got the error %v", err)
		}
		if !res.IsError || strings.Contains(res.Output, "not for the server") || res.Output == "" {
			t.Fatalf("want IsError with a reason, got %+v", res)
		}
	})

	t.Run("echo", func(t *testing.T) {
		res, err := s.exec(t, "every__echo", map[string]any{"message": "héllo, 世界"})
		if err != nil || res.IsError || !strings.Contains(res.Output, "héllo, 世界") {
			t.Fatalf("echo: %v %+v", err, res)
		}
	})

	t.Run("environment expanded and passed", func(t *testing.T) {
		res, err := s.exec(t, "every__get-env", nil)
		if err != nil || !strings.Contains(res.Output, "marker-from-the-environment") {
			t.Fatalf("get-env: %v %.300s", err, res.Output)
		}
	})

	t.Run("image content is summarised", func(t *testing.T) {
		res, err := s.exec(t, "every__get-tiny-image", nil)
		if err != nil || res.IsError || !strings.Contains(res.Output, "[image image/png, ") {
			t.Fatalf("get-tiny-image: %v %+v", err, res)
		}
		if strings.Contains(res.Output, "iVBOR") {
			t.Errorf("the image's data leaked into the output: %.200s", res.Output)
		}
	})

	for _, tc := range []struct{ name, tool string }{
		{"hidden tool", "fs__move_file"},
		{"tool the server lacks", "fs__no_such_tool"},
		{"unknown server", "nope__echo"},
		{"no server prefix", "echo"},
	} {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			_, err := s.exec(t, tc.tool, map[string]any{"source": "a", "destination": "b"})
			if !errors.Is(err, mcptool.ErrUnknownTool) {
				t.Fatalf("want ErrUnknownTool, got %v", err)
			}
		})
	}
}

// TestRealServerCrashRestart kills the everything server: the call that
// finds it dead fails clearly, the next one restarts it; when it keeps
// dying, restarts wait out the backoff (on the fake clock).
func TestRealServerCrashRestart(t *testing.T) {
	s := newReal(t)
	echo := func() (plugin.Result, error) { return s.exec(t, "every__echo", map[string]any{"message": "ping"}) }
	kill := func() int {
		t.Helper()
		pid := s.c.PIDs()["every"]
		if pid == 0 {
			t.Fatal("the everything server is not running")
		}
		p, err := os.FindProcess(pid)
		if err == nil {
			err = p.Kill()
		}
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	if res, err := echo(); err != nil || res.IsError {
		t.Fatalf("first echo: %v %+v", err, res)
	}

	first := kill()
	_, err := echo()
	if !errors.Is(err, mcptool.ErrUnavailable) || !strings.Contains(err.Error(), "stopped") ||
		!strings.Contains(err.Error(), "restarted") {
		t.Fatalf("the call that found it dead: want a clear ErrUnavailable, got %v", err)
	}
	res, err := echo()
	if err != nil || !strings.Contains(res.Output, "ping") {
		t.Fatalf("echo after the restart: %v %+v", err, res)
	}
	if pid := s.c.PIDs()["every"]; pid == 0 || pid == first {
		t.Fatalf("not a new process: %d (was %d)", pid, first)
	}
	waitGone(t, "the killed server", func(p proc) bool { return p.PID == first })

	// A second crash at once: the restart waits out the backoff.
	kill()
	if _, err := echo(); !errors.Is(err, mcptool.ErrUnavailable) {
		t.Fatalf("after the second kill: %v", err)
	}
	if _, err := echo(); !errors.Is(err, mcptool.ErrUnavailable) || !strings.Contains(err.Error(), "restarting") {
		t.Fatalf("within the backoff: want ErrUnavailable (restarting), got %v", err)
	}
	s.clk.Advance(500 * time.Millisecond)
	if res, err := echo(); err != nil || !strings.Contains(res.Output, "ping") {
		t.Fatalf("after the backoff: %v %+v", err, res)
	}
	// The other server was not disturbed.
	if res, err := s.exec(t, "fs__list_allowed_directories", nil); err != nil || res.IsError {
		t.Fatalf("fs: %v %+v", err, res)
	}
}

// TestCloseLeavesNoProcess closes a client whose servers run, one of them
// behind a shell that leaves a process of its own: none survives Close.
func TestCloseLeavesNoProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	mod := peers(t)
	data := t.TempDir()
	everything := filepath.Join(mod, "server-everything", "dist", "index.js")
	// The shell starts a sleep that outlives nothing but would outlive the
	// server without the process group, then becomes the server.
	script := "sleep 300 & exec node " + strings.ReplaceAll(filepath.Join(mod, "server-filesystem", "dist", "index.js"), " ", `\ `) + ` "$0"`
	raw := `{"servers": {
	  "fs": {"command": "sh", "args": ["-c", ` + q(script) + `, ` + q(data) + `]},
	  "every": {"command": "node", "args": [` + q(everything) + `, "stdio", ` + q(data) + `]}
	}}`
	c, err := mcptool.New(ctxT(t), parse(t, raw))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tools(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	pids := c.PIDs()
	if len(pids) != 2 {
		t.Fatalf("want 2 running servers, got %v", pids)
	}
	inGroups := func(p proc) bool { return p.PGID == pids["fs"] || p.PGID == pids["every"] }
	if n := len(living(inGroups)); n < 3 {
		t.Fatalf("want the two servers and the sleep running, got %d process(es)", n)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	waitGone(t, "after Close", inGroups)
	waitGone(t, "children after Close", func(p proc) bool {
		return p.PPID == os.Getpid() && strings.Contains(p.Cmdline, data)
	})
	if _, err := c.Execute(ctxT(t), plugin.Call{Tool: "every__echo"}); !errors.Is(err, mcptool.ErrClosed) {
		t.Errorf("Execute after Close: %v", err)
	}
	if _, err := c.Tools(ctxT(t)); !errors.Is(err, mcptool.ErrClosed) {
		t.Errorf("Tools after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
