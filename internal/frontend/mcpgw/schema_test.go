package mcpgw

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

var schemaCases = []struct {
	name, schema, args string
	stripped           string // comma-separated
	invalid            bool
	unchecked          bool
}{
	{"valid", `{"type":"object","properties":{"a":{"type":"number"}},"required":["a"]}`, `{"a":1}`, "", false, false},
	{"unknown stripped", `{"type":"object","properties":{"a":{"type":"number"}}}`, `{"a":1,"z":2,"y":3}`, "y,z", false, false},
	{"strict schema, unknown stripped then valid", `{"type":"object","properties":{"a":{}},"additionalProperties":false}`, `{"a":1,"z":2}`, "z", false, false},
	{"additional allowed by schema", `{"type":"object","properties":{"a":{}},"additionalProperties":{"type":"string"}}`, `{"a":1,"z":"s"}`, "", false, false},
	{"additional of the wrong type", `{"type":"object","properties":{"a":{}},"additionalProperties":{"type":"string"}}`, `{"z":2}`, "", true, false},
	{"pattern properties known", `{"type":"object","properties":{},"patternProperties":{"^x_":{}}}`, `{"x_1":1,"y":2}`, "y", false, false},
	{"no properties: anything", `{"type":"object"}`, `{"q":1}`, "", false, false},
	{"wrong type", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"a":1}`, "", true, false},
	{"missing required", `{"type":"object","properties":{"a":{}},"required":["a"]}`, `{}`, "", true, false},
	{"enum", `{"type":"object","properties":{"m":{"enum":["r","w"]}}}`, `{"m":"x"}`, "", true, false},
	{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"integer"}}}`, `{"a":1.5}`, "", true, false},
	{"draft-04 unchecked", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{}}}`, `{"a":1,"b":2}`, "b", false, true},
	{"remote ref unchecked", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, `{"a":1}`, "", false, true},
	{"bad pattern unchecked", `{"type":"object","properties":{},"patternProperties":{"(?<=x)":{}}}`, `{"a":1}`, "", false, true},
	{"no schema unchecked", `null`, `{"a":1}`, "", false, true},
	{"too deep unchecked", `{"type":"object","properties":{"a":` + strings.Repeat(`{"anyOf":[`, 20) + `{}` + strings.Repeat(`]}`, 20) + `}}`, `{"a":1,"b":2}`, "b", false, true},
}

func TestSchemaCheck(t *testing.T) {
	for _, c := range schemaCases {
		t.Run(c.name, func(t *testing.T) {
			var raw any
			if err := json.Unmarshal([]byte(c.schema), &raw); err != nil {
				t.Fatal(err)
			}
			s := compileSchema(raw)
			if (s.unchecked != "") != c.unchecked {
				t.Fatalf("unchecked %q, want %v", s.unchecked, c.unchecked)
			}
			args, err := decodeArgs(json.RawMessage(c.args))
			if err != nil {
				t.Fatal(err)
			}
			out, stripped, err := s.check(args)
			if got := strings.Join(stripped, ","); got != c.stripped {
				t.Fatalf("stripped %q, want %q", got, c.stripped)
			}
			if (err != nil) != c.invalid || (err != nil && !errors.Is(err, ErrInvalidArgs)) {
				t.Fatalf("err %v, want invalid %v", err, c.invalid)
			}
			for _, k := range stripped {
				if _, ok := out[k]; ok {
					t.Fatalf("%s still in %v", k, out)
				}
			}
		})
	}
}

func TestDecodeArgs(t *testing.T) {
	for _, ok := range []string{``, `null`, `{}`, `{"a":[1,{"b":null}]}`} {
		if _, err := decodeArgs(json.RawMessage(ok)); err != nil {
			t.Errorf("decodeArgs(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{`[]`, `1`, `"s"`, `{`, `{"a":1}x`} {
		if _, err := decodeArgs(json.RawMessage(bad)); !errors.Is(err, ErrInvalidArgs) {
			t.Errorf("decodeArgs(%q) = %v, want ErrInvalidArgs", bad, err)
		}
	}
}

func FuzzCheckArgs(f *testing.F) {
	for _, c := range schemaCases {
		f.Add(c.schema, c.args)
	}
	f.Fuzz(func(t *testing.T, schema, rawArgs string) {
		var raw any
		if json.Unmarshal([]byte(schema), &raw) != nil {
			return
		}
		s := compileSchema(raw)
		args, err := decodeArgs(json.RawMessage(rawArgs))
		if err != nil {
			return
		}
		in := len(args)
		out, stripped, err := s.check(args)
		if err != nil && !errors.Is(err, ErrInvalidArgs) {
			t.Fatalf("error does not wrap ErrInvalidArgs: %v", err)
		}
		if len(out)+len(stripped) != in {
			t.Fatalf("%d in, %d out + %d stripped", in, len(out), len(stripped))
		}
		for _, k := range stripped {
			if _, ok := out[k]; ok || s.known(k) {
				t.Fatalf("stripped %q is known or kept", k)
			}
		}
	})
}
