package mcpgw

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"

	"github.com/google/jsonschema-go/jsonschema"
)

// ErrInvalidArgs means a call's arguments do not satisfy the tool's input
// schema: the call is refused.
var ErrInvalidArgs = errors.New("invalid arguments")

// argSchema is a tool's input schema, compiled once when the tool is
// listed: the L1 check of every call reads it.
type argSchema struct {
	resolved *jsonschema.Resolved // nil when the schema could not be compiled
	// props are the declared property names; nil when the schema declares
	// none (then any argument is known).
	props    map[string]bool
	patterns []*regexp.Regexp
	// extra is true when additionalProperties admits undeclared arguments
	// (true or a schema): they are then known, not stripped.
	extra bool
	// unchecked says why the schema could not be compiled ("" when it was).
	unchecked string
}

// Limits on the schemas the gateway validates against.
const (
	maxSchemaBytes = 256 << 10
	maxSchemaDepth = 32
)

// depth is the nesting depth of a decoded JSON value, counted up to a
// little past maxSchemaDepth.
func depth(v any, d int) int {
	if d > maxSchemaDepth {
		return d
	}
	m := d
	switch x := v.(type) {
	case map[string]any:
		for _, c := range x {
			m = max(m, depth(c, d+1))
		}
	case []any:
		for _, c := range x {
			m = max(m, depth(c, d+1))
		}
	}
	return m
}

// compileSchema compiles a tool's input schema as the upstream listed it.
// A schema that cannot be compiled still strips unknown arguments where it
// declares its properties; the call is marked unchecked, which puts it to
// a person.
func compileSchema(raw any) *argSchema {
	s := &argSchema{}
	b, err := json.Marshal(raw)
	if err != nil || raw == nil {
		s.unchecked = "the tool has no usable input schema"
		return s
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		s.unchecked = "the input schema is not a JSON object"
		return s
	}
	// A schema too large or too deep to validate quickly is not validated:
	// a server must not be able to stall every call with its schema.
	if len(b) > maxSchemaBytes || depth(m, 0) > maxSchemaDepth {
		s.unchecked = fmt.Sprintf("the input schema is over %d bytes or %d levels deep", maxSchemaBytes, maxSchemaDepth)
		if props, ok := m["properties"].(map[string]any); ok {
			s.props = make(map[string]bool, len(props))
			for k := range props {
				s.props[k] = true
			}
		}
		return s
	}
	if props, ok := m["properties"].(map[string]any); ok {
		s.props = make(map[string]bool, len(props))
		for k := range props {
			s.props[k] = true
		}
	}
	if pp, ok := m["patternProperties"].(map[string]any); ok {
		for p := range pp {
			re, err := regexp.Compile(p)
			if err != nil {
				s.unchecked = fmt.Sprintf("patternProperties %q is not a regular expression Overseer can read", p)
				s.props = nil // cannot tell known from unknown: strip nothing
				return s
			}
			s.patterns = append(s.patterns, re)
		}
	}
	switch ap := m["additionalProperties"].(type) {
	case bool:
		s.extra = ap
	case map[string]any:
		s.extra = true
	}
	if v, ok := m["$schema"]; ok && !supportedDraft(v) {
		s.unchecked = fmt.Sprintf("the input schema's draft %v cannot be validated (draft-07 and 2020-12 can)", v)
		return s
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(b, &js); err != nil {
		s.unchecked = fmt.Sprintf("the input schema cannot be read: %v", err)
		return s
	}
	r, err := js.Resolve(nil)
	if err != nil {
		s.unchecked = fmt.Sprintf("the input schema cannot be compiled: %v", err)
		return s
	}
	s.resolved = r
	return s
}

// known reports whether name is a declared argument.
func (s *argSchema) known(name string) bool {
	if s.props == nil || s.extra || s.props[name] {
		return true
	}
	for _, re := range s.patterns {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// check strips the unknown arguments and validates the rest. It returns
// the arguments to use (args itself when nothing was stripped), the names
// stripped (sorted), and an error wrapping ErrInvalidArgs when the
// arguments are invalid. A schema that could not be compiled validates
// nothing; the caller marks the call unchecked.
func (s *argSchema) check(args map[string]any) (map[string]any, []string, error) {
	var stripped []string
	for k := range args {
		if !s.known(k) {
			stripped = append(stripped, k)
		}
	}
	out := args
	if len(stripped) > 0 {
		sort.Strings(stripped)
		out = make(map[string]any, len(args)-len(stripped))
		for k, v := range args {
			if s.known(k) {
				out[k] = v
			}
		}
	}
	if s.resolved != nil {
		if err := validate(s.resolved, out); err != nil {
			return out, stripped, fmt.Errorf("%w: %v", ErrInvalidArgs, err)
		}
	}
	return out, stripped, nil
}

// validate runs the validator, which must not take the gateway down on a
// schema it mishandles: a panic is an invalid call.
func validate(r *jsonschema.Resolved, v map[string]any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the schema validator failed: %v", p)
		}
	}()
	return r.Validate(v)
}

// decodeArgs decodes a call's raw arguments: a JSON object, or nothing.
func decodeArgs(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, fmt.Errorf("%w: the arguments are not a JSON object: %v", ErrInvalidArgs, err)
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, nil
}

// supportedDraft reports whether the validator reads a $schema value.
func supportedDraft(v any) bool {
	switch v {
	case "", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2020-12/schema":
		return true
	}
	return false
}
