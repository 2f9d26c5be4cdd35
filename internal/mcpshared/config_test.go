package mcpshared_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/overseer-dev/overseer/internal/mcpshared"
)

var durationCases = []struct {
	name    string
	in      string // as written in YAML and (quoted) in JSON
	want    mcpshared.Duration
	wantErr string // "" when valid
}{
	{"seconds", "25s", mcpshared.Duration(25 * time.Second), ""},
	{"minutes", "5m", mcpshared.Duration(5 * time.Minute), ""},
	{"compound", "1m30s", mcpshared.Duration(90 * time.Second), ""},
	{"milliseconds", "200ms", mcpshared.Duration(200 * time.Millisecond), ""},
	{"off", "off", mcpshared.Off, ""},
	{"no unit", "25", 0, "bad duration \"25\""},
	{"word", "soon", 0, "bad duration \"soon\""},
	{"negative", "-5s", 0, "bad duration \"-5s\""},
	{"zero with unit", "0s", 0, "bad duration \"0s\""},
	{"empty", "", 0, "bad duration \"\""},
	{"capitalised off", "Off", 0, "bad duration \"Off\""},
}

func TestDurationJSON(t *testing.T) {
	for _, tc := range durationCases {
		t.Run(tc.name, func(t *testing.T) {
			var d mcpshared.Duration
			err := json.Unmarshal([]byte(`"`+tc.in+`"`), &d)
			checkDuration(t, d, err, tc.want, tc.wantErr)
		})
	}
	t.Run("zero is not off in JSON", func(t *testing.T) {
		var d mcpshared.Duration
		if err := json.Unmarshal([]byte(`"0"`), &d); err == nil {
			t.Fatalf("accepted \"0\" as %v", d)
		}
	})
	t.Run("a number is refused", func(t *testing.T) {
		var d mcpshared.Duration
		if err := json.Unmarshal([]byte(`25`), &d); err == nil {
			t.Fatalf("accepted 25 as %v", d)
		}
	})
}

func TestDurationYAML(t *testing.T) {
	for _, tc := range durationCases {
		t.Run(tc.name, func(t *testing.T) {
			var v struct {
				D mcpshared.Duration `yaml:"d"`
			}
			err := yaml.Unmarshal([]byte("\n\nd: '"+tc.in+"'\n"), &v)
			checkDuration(t, v.D, err, tc.want, tc.wantErr)
			if err != nil && !strings.Contains(err.Error(), "line 3:") {
				t.Errorf("the error does not name the line: %v", err)
			}
		})
	}
	extra := []struct {
		name, doc string
		want      mcpshared.Duration
		wantErr   string
	}{
		{"zero is off in YAML", "d: 0\n", mcpshared.Off, ""},
		{"unquoted off", "d: off\n", mcpshared.Off, ""},
		{"a list", "d: [1s]\n", 0, "line 1: want a duration like \"25s\""},
		{"a map", "d: {a: 1}\n", 0, "line 1: want a duration like \"25s\""},
	}
	for _, tc := range extra {
		t.Run(tc.name, func(t *testing.T) {
			var v struct {
				D mcpshared.Duration `yaml:"d"`
			}
			err := yaml.Unmarshal([]byte(tc.doc), &v)
			checkDuration(t, v.D, err, tc.want, tc.wantErr)
		})
	}
}

func checkDuration(t *testing.T, got mcpshared.Duration, err error, want mcpshared.Duration, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Fatalf("error %v, want one with %q", err, wantErr)
	case wantErr == "" && got != want:
		t.Fatalf("got %v, want %v", time.Duration(got), time.Duration(want))
	}
}

func TestDurationGetAndMarshal(t *testing.T) {
	const def = 7 * time.Second
	cases := []struct {
		name string
		d    mcpshared.Duration
		get  time.Duration
		text string
	}{
		{"unset is the default", 0, def, "0s"},
		{"off is zero", mcpshared.Off, 0, "off"},
		{"set", mcpshared.Duration(90 * time.Second), 90 * time.Second, "1m30s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.Get(def); got != tc.get {
				t.Errorf("Get = %v, want %v", got, tc.get)
			}
			b, err := tc.d.MarshalText()
			if err != nil || string(b) != tc.text {
				t.Errorf("MarshalText = %q, %v; want %q", b, err, tc.text)
			}
		})
	}
}

func TestBackoffRange(t *testing.T) {
	s := func(n int) mcpshared.Duration { return mcpshared.Duration(time.Duration(n) * time.Second) }
	cases := []struct {
		name          string
		b             mcpshared.Backoff
		initial, ceil time.Duration
	}{
		{"defaults", mcpshared.Backoff{}, mcpshared.DefaultRestartInitial, mcpshared.DefaultRestartMax},
		{"both set", mcpshared.Backoff{Initial: s(1), Max: s(8)}, time.Second, 8 * time.Second},
		{"initial over the default ceiling", mcpshared.Backoff{Initial: s(60)}, time.Minute, time.Minute},
		{"max only", mcpshared.Backoff{Max: s(2)}, mcpshared.DefaultRestartInitial, 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			i, c := tc.b.Range()
			if i != tc.initial || c != tc.ceil {
				t.Fatalf("Range = %v, %v; want %v, %v", i, c, tc.initial, tc.ceil)
			}
		})
	}
}

// serverCase is one server of testdata/servers.yaml with the problems
// ValidateServer must report (substrings, in order; none: valid).
type serverCase struct {
	Name   string            `yaml:"name"`
	Key    string            `yaml:"key"`    // the server's name in the configuration; default "s"
	Server *mcpshared.Server `yaml:"server"` // nil: an empty entry
	Errors []string          `yaml:"errors"`
}

func loadServerCases(t testing.TB) []serverCase {
	t.Helper()
	b, err := os.ReadFile("testdata/servers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	var cases []serverCase
	if err := dec.Decode(&cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("only %d cases", len(cases))
	}
	return cases
}

func TestValidateServer(t *testing.T) {
	for _, tc := range loadServerCases(t) {
		t.Run(tc.Name, func(t *testing.T) {
			key := tc.Key
			if key == "" {
				key = "s"
			}
			got := mcpshared.ValidateServer(key, tc.Server)
			if len(got) != len(tc.Errors) {
				t.Fatalf("problems %q, want %d like %q", got, len(tc.Errors), tc.Errors)
			}
			for i, want := range tc.Errors {
				if !strings.Contains(got[i], want) || !strings.HasPrefix(got[i], "servers."+key) {
					t.Errorf("problem %d: %q, want one with %q starting with servers.%s", i, got[i], want, key)
				}
			}
		})
	}
}

// TestServerDecodesFromJSONAndYAML: the same server, written in either
// format, decodes to the same value, and what is written back as JSON
// decodes again to it.
func TestServerDecodesFromJSONAndYAML(t *testing.T) {
	y := `command: node
args: [a.js, --flag]
env: {K: v}
cwd: /srv
hidden: true
hide_tools: ["move_*"]
tools:
  run: {kind: shell, arg: cmd}
  w: {kind: file_write}
call_timeout: 90s
restart: {initial: 1s, max: off}
`
	j := `{"command": "node", "args": ["a.js", "--flag"], "env": {"K": "v"}, "cwd": "/srv", "hidden": true,
	"hide_tools": ["move_*"], "tools": {"run": {"kind": "shell", "arg": "cmd"}, "w": {"kind": "file_write"}},
	"call_timeout": "90s", "restart": {"initial": "1s", "max": "off"}}`
	var fromYAML, fromJSON, again mcpshared.Server
	ydec := yaml.NewDecoder(strings.NewReader(y))
	ydec.KnownFields(true)
	if err := ydec.Decode(&fromYAML); err != nil {
		t.Fatal(err)
	}
	jdec := json.NewDecoder(strings.NewReader(j))
	jdec.DisallowUnknownFields()
	if err := jdec.Decode(&fromJSON); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(fromJSON)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &again); err != nil {
		t.Fatalf("round trip: %v\n%s", err, out)
	}
	for name, got := range map[string]mcpshared.Server{"json": fromJSON, "round trip": again} {
		t.Run(name, func(t *testing.T) {
			a, _ := json.Marshal(fromYAML)
			b, _ := json.Marshal(got)
			if string(a) != string(b) {
				t.Fatalf("yaml %s\n%s %s", a, name, b)
			}
		})
	}
	if fromYAML.Restart.Max != mcpshared.Off || fromYAML.CallTimeout != mcpshared.Duration(90*time.Second) {
		t.Fatalf("durations %+v %v", fromYAML.Restart, fromYAML.CallTimeout)
	}
}

func TestHides(t *testing.T) {
	s := &mcpshared.Server{HideTools: []string{"move_*", "exact"}}
	cases := []struct {
		tool string
		want bool
	}{
		{"move_file", true},
		{"move_", true},
		{"exact", true},
		{"exactly", false},
		{"read_file", false},
		{"", false},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			if got := s.Hides(tc.tool); got != tc.want {
				t.Fatalf("Hides(%q) = %v, want %v", tc.tool, got, tc.want)
			}
		})
	}
	t.Run("a hidden server hides everything", func(t *testing.T) {
		if !(&mcpshared.Server{Hidden: true}).Hides("anything") {
			t.Fatal("not hidden")
		}
	})
}

func TestExpandEnv(t *testing.T) {
	lookup := func(name string) (string, bool) {
		v, ok := map[string]string{"BIN": "/usr/bin/srv", "TOKEN": "t0k", "EMPTY": ""}[name]
		return v, ok
	}
	t.Run("every field", func(t *testing.T) {
		s := &mcpshared.Server{Command: "${BIN}", Args: []string{"--t=${TOKEN}", "$TOKEN", "${EMPTY}x"},
			Env: map[string]string{"A": "${TOKEN}"}, Cwd: "/home/${TOKEN}", URL: "http://h/${TOKEN}",
			Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}
		if err := mcpshared.ExpandEnv([]*mcpshared.Server{s, nil}, lookup); err != nil {
			t.Fatal(err)
		}
		got := []string{s.Command, s.Args[0], s.Args[1], s.Args[2], s.Env["A"], s.Cwd, s.URL, s.Headers["Authorization"]}
		want := []string{"/usr/bin/srv", "--t=t0k", "$TOKEN", "x", "t0k", "/home/t0k", "http://h/t0k", "Bearer t0k"}
		if !slices.Equal(got, want) {
			t.Fatalf("got %q\nwant %q", got, want)
		}
	})
	t.Run("unset variables are named once, sorted", func(t *testing.T) {
		a := &mcpshared.Server{Command: "${NOPE}", Args: []string{"${NOPE}"}}
		b := &mcpshared.Server{Env: map[string]string{"X": "${ALSO_NOPE}"}}
		err := mcpshared.ExpandEnv([]*mcpshared.Server{a, b}, lookup)
		if err == nil || err.Error() != "environment variable ALSO_NOPE, NOPE is not set" {
			t.Fatalf("error %v", err)
		}
		if a.Command != "${NOPE}" {
			t.Fatalf("an unresolved reference was changed: %q", a.Command)
		}
	})
	t.Run("no lookup resolves nothing", func(t *testing.T) {
		s := &mcpshared.Server{Command: "${BIN}"}
		if err := mcpshared.ExpandEnv([]*mcpshared.Server{s}, nil); err == nil || !strings.Contains(err.Error(), "BIN") {
			t.Fatalf("error %v", err)
		}
	})
}

// FuzzDuration: JSON and YAML read a duration alike (but for YAML's 0),
// whatever is accepted is "off" or positive, and it survives a round trip
// through its text.
func FuzzDuration(f *testing.F) {
	for _, tc := range durationCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := mcpshared.ParseDuration(s)
		var fromText mcpshared.Duration
		terr := fromText.UnmarshalText([]byte(s))
		if (err == nil) != (terr == nil) || fromText != d {
			t.Fatalf("ParseDuration %v, %v; UnmarshalText %v, %v", d, err, fromText, terr)
		}
		var fromYAML mcpshared.Duration
		yerr := fromYAML.UnmarshalYAML(&yaml.Node{Kind: yaml.ScalarNode, Value: s, Line: 1})
		if s != "0" && ((err == nil) != (yerr == nil) || fromYAML != d) {
			t.Fatalf("ParseDuration %v, %v; UnmarshalYAML %v, %v", d, err, fromYAML, yerr)
		}
		if err != nil {
			return
		}
		if d != mcpshared.Off && d <= 0 {
			t.Fatalf("accepted %q as %d", s, d)
		}
		b, _ := d.MarshalText()
		back, err := mcpshared.ParseDuration(string(b))
		if err != nil || back != d {
			t.Fatalf("round trip of %q: %q → %v, %v", s, b, back, err)
		}
	})
}
