package mcptool

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var configCases = []struct {
	name string
	raw  string
	want string // substring of the error; "" means valid
}{
	{"stdio server", `{"servers": {"fs": {"command": "node", "args": ["a.js"], "env": {"K": "v"}, "cwd": "/tmp"}}}`, ""},
	{"url server", `{"servers": {"web": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}}}}`, ""},
	{"everything set", `{"max_output_bytes": 10, "servers": {"a-1_b": {"command": "x", "call_timeout": "5m",
		"restart": {"initial": "1s", "max": "10s"}, "hide_tools": ["move_*", "glob"], "hidden": false,
		"tools": {"run": {"kind": "shell", "arg": "cmd"}, "w": {"kind": "file_write"}, "f": {"kind": "net_fetch", "arg": "u"}}}}}`, ""},
	{"call timeout off", `{"servers": {"a": {"command": "x", "call_timeout": "off"}}}`, ""},
	{"environment reference", `{"servers": {"a": {"command": "${BIN}", "env": {"TOKEN": "${TOKEN}"}}}}`, ""},
	{"empty", ``, "empty configuration"},
	{"null", `null`, "empty configuration"},
	{"no servers", `{}`, "no servers"},
	{"unknown field", `{"servers": {"a": {"command": "x", "comand": "y"}}}`, "unknown field"},
	{"unknown top-level field", `{"server": {}}`, "unknown field"},
	{"trailing data", `{"servers": {"a": {"command": "x"}}} {}`, "trailing data"},
	{"not an object", `[]`, "cannot unmarshal"},
	{"null server", `{"servers": {"a": null}}`, "servers.a: empty"},
	{"neither command nor url", `{"servers": {"a": {"args": ["x"]}}}`, "needs a command"},
	{"both command and url", `{"servers": {"a": {"command": "x", "url": "http://h/"}}}`, "both a command and a url"},
	{"url not http", `{"servers": {"a": {"url": "file:///x"}}}`, "not an http(s) URL"},
	{"url with args", `{"servers": {"a": {"url": "http://h/", "args": ["x"]}}}`, "for command servers"},
	{"command with headers", `{"servers": {"a": {"command": "x", "headers": {"A": "b"}}}}`, "for url servers"},
	{"bad server name", `{"servers": {"a b": {"command": "x"}}}`, "bad server name"},
	{"double underscore in name", `{"servers": {"a__b": {"command": "x"}}}`, "bad server name"},
	{"bad glob", `{"servers": {"a": {"command": "x", "hide_tools": ["["]}}}`, "bad glob"},
	{"bad kind", `{"servers": {"a": {"command": "x", "tools": {"t": {"kind": "rm"}}}}}`, "kind \"rm\""},
	{"shell without arg", `{"servers": {"a": {"command": "x", "tools": {"t": {"kind": "shell"}}}}}`, "needs arg"},
	{"bad duration", `{"servers": {"a": {"command": "x", "call_timeout": "soon"}}}`, "bad duration"},
	{"negative duration", `{"servers": {"a": {"command": "x", "call_timeout": "-1s"}}}`, "bad duration"},
	{"restart off", `{"servers": {"a": {"command": "x", "restart": {"initial": "off"}}}}`, "not a backoff"},
	{"restart max below initial", `{"servers": {"a": {"command": "x", "restart": {"initial": "2s", "max": "1s"}}}}`, "below initial"},
	{"negative max output", `{"max_output_bytes": -1, "servers": {"a": {"command": "x"}}}`, "negative"},
	{"unset variable", `{"servers": {"a": {"command": "x", "args": ["${NOPE}", "${NOPE}"], "env": {"A": "${ALSO_NOPE}"}}}}`,
		"environment variable ALSO_NOPE, NOPE is not set"},
}

func lookup(name string) (string, bool) {
	v, ok := map[string]string{"BIN": "/usr/bin/srv", "TOKEN": "t0k"}[name]
	return v, ok
}

func TestParseConfig(t *testing.T) {
	for _, tc := range configCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig(json.RawMessage(tc.raw), lookup)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tc.want != "" && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want ErrConfig with %q, got %v", tc.want, err)
			}
		})
	}
}

func TestParseConfigValues(t *testing.T) {
	c, err := parseConfig(json.RawMessage(`{"servers": {"a": {"command": "${BIN}", "args": ["--t=${TOKEN}"],
		"env": {"TOKEN": "${TOKEN}"}, "call_timeout": "90s", "restart": {"initial": "1s"},
		"tools": {"w": {"kind": "file_write", "arg": "p"}}}, "b": {"command": "y", "call_timeout": "off"}}}`), lookup)
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Servers["a"], c.Servers["b"]
	checks := []struct {
		name      string
		got, want any
	}{
		{"command expanded", a.Command, "/usr/bin/srv"},
		{"argument expanded", a.Args[0], "--t=t0k"},
		{"env expanded", a.Env["TOKEN"], "t0k"},
		{"call timeout", a.CallTimeout.Get(DefaultCallTimeout), 90 * time.Second},
		{"call timeout default", Duration(0).Get(DefaultCallTimeout), DefaultCallTimeout},
		{"call timeout off", b.CallTimeout.Get(DefaultCallTimeout), time.Duration(0)},
		{"kind", string(a.Tools["w"].Kind), "file_write"},
	}
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) {
			if ch.got != ch.want {
				t.Fatalf("got %v, want %v", ch.got, ch.want)
			}
		})
	}
	// The configuration survives a round trip (the CLI writes it back).
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseConfig(out, nil); err != nil {
		t.Fatalf("round trip: %v\n%s", err, out)
	}
}

func TestRestartDelay(t *testing.T) {
	s := &server{cfg: &ServerConfig{Restart: Backoff{Initial: Duration(time.Second), Max: Duration(5 * time.Second)}}}
	want := []time.Duration{0, 0, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for n, w := range want {
		if got := s.delay(n); got != w {
			t.Errorf("delay(%d) = %s, want %s", n, got, w)
		}
	}
	def := &server{cfg: &ServerConfig{}}
	if got := def.delay(2); got != DefaultRestartInitial {
		t.Errorf("default first backoff %s", got)
	}
	if got := def.delay(1000); got != DefaultRestartMax {
		t.Errorf("default ceiling %s", got)
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, tc := range configCases {
		f.Add(tc.raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := parseConfig(json.RawMessage(raw), lookup)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("an error that is not ErrConfig: %v", err)
			}
			return
		}
		// What parses is valid, has servers, and builds a client.
		if len(c.Servers) == 0 || c.Validate() != nil {
			t.Fatalf("accepted an invalid configuration: %q", raw)
		}
		for name, s := range c.Servers {
			if s == nil || strings.Contains(name, Sep) || (s.Command == "") == (s.URL == "") {
				t.Fatalf("accepted server %q: %+v", name, s)
			}
		}
	})
}
