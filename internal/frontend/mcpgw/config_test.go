package mcpgw_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/frontend/mcpgw"
)

func lookup(name string) (string, bool) {
	switch name {
	case "HOME":
		return "/home/ann", true
	case "GITHUB_TOKEN":
		return "t0k", true
	}
	return "", false
}

var configCases = []struct {
	name, yaml string
	err        string // "" when valid
}{
	{"minimal", "servers:\n  fs: {command: fs-server}\n", ""},
	{"no servers", "version: 1\n", ""},
	{"url server", "servers:\n  gh: {url: 'https://example.com/mcp', headers: {A: b}}\n", ""},
	{"mapping", "servers:\n  s:\n    command: x\n    tools: {run: {kind: shell, arg: cmd}, read: {kind: file_read}}\n", ""},
	{"unknown top-level field", "servrs: {}\n", "servrs"},
	{"unknown server field", "servers:\n  fs: {command: x, comand: y}\n", "comand"},
	{"unknown mapping field", "servers:\n  fs: {command: x, tools: {t: {kind: shell, arg: c, argh: d}}}\n", "argh"},
	{"bad version", "version: 2\n", "version 2"},
	{"neither command nor url", "servers:\n  fs: {args: [a]}\n", "needs a command"},
	{"both command and url", "servers:\n  fs: {command: x, url: 'http://h/'}\n", "both"},
	{"bad url", "servers:\n  fs: {url: 'ftp://h/x'}\n", "not an http"},
	{"headers on a command", "servers:\n  fs: {command: x, headers: {A: b}}\n", "headers are for url"},
	{"env on a url", "servers:\n  fs: {url: 'http://h/', env: {A: b}}\n", "for command servers"},
	{"bad name", "servers:\n  'a b': {command: x}\n", "bad server name"},
	{"double underscore name", "servers:\n  a__b: {command: x}\n", "bad server name"},
	// "a" offering "_x" and "a_" offering "x" would both be "a___x".
	{"name ending in underscore", "servers:\n  a: {command: x}\n  a_: {command: y}\n", "bad server name"},
	{"underscore inside a name", "servers:\n  a: {command: x}\n  a_b: {command: y}\n", ""},
	{"bad kind", "servers:\n  fs: {command: x, tools: {t: {kind: fetch}}}\n", "kind \"fetch\""},
	{"shell needs arg", "servers:\n  fs: {command: x, tools: {t: {kind: shell}}}\n", "needs arg"},
	{"bad glob", "servers:\n  fs: {command: x, hide_tools: ['[']}\n", "bad glob"},
	{"bad elicitation", "elicitation: always\n", "elicitation"},
	{"bad duration", "hold: soon\n", "bad duration"},
	{"negative duration", "hold: -5s\n", "bad duration"},
	{"hold too long", "hold: 1h\n", "over 10m"},
	{"backoff inverted", "servers:\n  fs: {command: x, restart: {initial: 10s, max: 1s}}\n", "below initial"},
	{"backoff off", "servers:\n  fs: {command: x, restart: {initial: off}}\n", "not a backoff"},
	{"call timeout and ping off", "servers:\n  fs: {command: x, call_timeout: off, ping: 0}\n", ""},
	{"duration not a scalar", "hold: [1s]\n", "want a duration"},
	{"unset variable", "servers:\n  fs: {command: x, args: ['${NOPE}']}\n", "NOPE"},
	{"two documents", "version: 1\n---\nversion: 1\n", "more than one"},
	{"empty", "", "empty"},
	{"not a map", "- a\n", "cannot unmarshal"},
}

func TestParseConfig(t *testing.T) {
	for _, c := range configCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := mcpgw.ParseConfig("mcp.yaml", []byte(c.yaml), lookup)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.err != "" && err == nil:
				t.Fatalf("accepted, want an error about %q", c.err)
			case c.err != "" && (!strings.Contains(err.Error(), c.err) || !errors.Is(err, mcpgw.ErrInvalidConfig)):
				t.Fatalf("error %q, want %q wrapping ErrInvalidConfig", err, c.err)
			}
		})
	}
}

func TestExampleConfig(t *testing.T) {
	b, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcpgw.ParseConfig("testdata/example.yaml", b, lookup)
	if err != nil {
		t.Fatal(err)
	}
	fs, gh, sh := c.Servers["fs"], c.Servers["github"], c.Servers["shell"]
	if fs.Args[2] != "/home/ann/projects" || gh.Headers["Authorization"] != "Bearer t0k" {
		t.Fatalf("variables not expanded: %v %v", fs.Args, gh.Headers)
	}
	if fs.Tools["write_file"].Kind != action.KindFileWrite || sh.Tools["run_command"].Arg != "cmd" {
		t.Fatalf("mappings %+v %+v", fs.Tools, sh.Tools)
	}
	if time.Duration(c.Hold) != 25*time.Second || time.Duration(sh.Restart.Max) != time.Minute || sh.Ping >= 0 {
		t.Fatalf("durations %v %v %v", c.Hold, sh.Restart.Max, sh.Ping)
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, c := range configCases {
		f.Add(c.yaml)
	}
	if b, err := os.ReadFile("testdata/example.yaml"); err == nil {
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := mcpgw.ParseConfig("fuzz.yaml", []byte(s), lookup)
		if err != nil {
			if !errors.Is(err, mcpgw.ErrInvalidConfig) {
				t.Fatalf("error does not wrap ErrInvalidConfig: %v", err)
			}
			return
		}
		// What parses validates.
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed but invalid: %v", err)
		}
	})
}
