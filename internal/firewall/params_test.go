package firewall_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/overseer-dev/overseer/internal/firewall"
)

func TestArgFilter(t *testing.T) {
	args := map[string]any{"command": "ls", "sudo": true, "x-trace": 1}
	for _, tc := range []struct {
		name, schema string
		stripped     []string
		unchecked    bool
	}{
		{"no schema", ``, nil, false},
		{"no properties", `{"type":"object"}`, nil, false},
		{"closed", `{"type":"object","properties":{"command":{}},"additionalProperties":false}`, []string{"sudo", "x-trace"}, false},
		{"additionalProperties absent", `{"type":"object","properties":{"command":{}}}`, []string{"sudo", "x-trace"}, false},
		{"additionalProperties true", `{"properties":{"command":{}},"additionalProperties":true}`, nil, false},
		{"additionalProperties schema", `{"properties":{"command":{}},"additionalProperties":{"type":"string"}}`, nil, false},
		{"pattern", `{"properties":{"command":{}},"patternProperties":{"^x-":{}}}`, []string{"sudo"}, false},
		{"bad pattern", `{"properties":{"command":{}},"patternProperties":{"(":{}}}`, nil, true},
		{"not JSON", `{`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := firewall.NewArgFilter(json.RawMessage(tc.schema))
			out, stripped := f.Filter(args)
			if !slices.Equal(stripped, tc.stripped) || (f.Unchecked != "") != tc.unchecked {
				t.Fatalf("stripped %v unchecked %q", stripped, f.Unchecked)
			}
			if len(out)+len(stripped) != len(args) || out["command"] != "ls" {
				t.Fatalf("kept %v", out)
			}
			if len(args) != 3 {
				t.Fatal("Filter changed its input")
			}
		})
	}
}

func FuzzArgFilter(f *testing.F) {
	f.Add(`{"type":"object","properties":{"command":{}},"additionalProperties":false}`, "command", "sudo")
	f.Add(`{"properties":{"a":{}},"patternProperties":{"^x-":{}}}`, "x-y", "b")
	f.Add(`{`, "a", "b")
	f.Fuzz(func(t *testing.T, schema, a, b string) {
		fl := firewall.NewArgFilter(json.RawMessage(schema))
		out, stripped := fl.Filter(map[string]any{a: 1, b: 2})
		for _, s := range stripped {
			if fl.Known(s) || out[s] != nil {
				t.Fatalf("%q stripped yet known or kept", s)
			}
		}
		for k := range out {
			if !fl.Known(k) {
				t.Fatalf("%q kept yet unknown", k)
			}
		}
	})
}
