package firewall

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ArgFilter is L1's view of a tool's input schema: which argument names the
// tool declares. Arguments it does not know are stripped before the call is
// judged and run (seed 000, L1 parameter filtering), and the model is told
// which ones were ignored.
type ArgFilter struct {
	props    map[string]bool // nil: the schema declares none, any name is known
	patterns []*regexp.Regexp
	extra    bool // additionalProperties admits undeclared names
	// Unchecked says why the schema could not be read ("" when it was):
	// then nothing is stripped.
	Unchecked string
}

// NewArgFilter reads a tool's JSON Schema (an object schema). No schema, or
// one without "properties", strips nothing; additionalProperties true (or a
// schema) keeps undeclared arguments; patternProperties are honoured.
func NewArgFilter(schema json.RawMessage) *ArgFilter {
	f := &ArgFilter{}
	s := strings.TrimSpace(string(schema))
	if s == "" || s == "null" {
		return f
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		f.Unchecked = fmt.Sprintf("the input schema is not a JSON object: %v", err)
		return f
	}
	props, ok := m["properties"].(map[string]any)
	if !ok {
		return f
	}
	f.props = make(map[string]bool, len(props))
	for k := range props {
		f.props[k] = true
	}
	if pp, ok := m["patternProperties"].(map[string]any); ok {
		for p := range pp {
			re, err := regexp.Compile(p)
			if err != nil {
				f.props, f.Unchecked = nil, fmt.Sprintf("patternProperties %q is not a regular expression Overseer can read", p)
				return f
			}
			f.patterns = append(f.patterns, re)
		}
	}
	switch ap := m["additionalProperties"].(type) {
	case bool:
		f.extra = ap
	case map[string]any:
		f.extra = true
	}
	return f
}

// Known reports whether name is an argument the tool declares.
func (f *ArgFilter) Known(name string) bool {
	if f == nil || f.props == nil || f.extra || f.props[name] {
		return true
	}
	for _, re := range f.patterns {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// Filter returns args without the unknown arguments (args itself when
// none is unknown) and the names stripped, sorted.
func (f *ArgFilter) Filter(args map[string]any) (map[string]any, []string) {
	var stripped []string
	for k := range args {
		if !f.Known(k) {
			stripped = append(stripped, k)
		}
	}
	if len(stripped) == 0 {
		return args, nil
	}
	sort.Strings(stripped)
	out := make(map[string]any, len(args)-len(stripped))
	for k, v := range args {
		if f.Known(k) {
			out[k] = v
		}
	}
	return out, stripped
}

// StrippedNotice is what the model is told about stripped arguments.
func StrippedNotice(names []string) string {
	return fmt.Sprintf("Overseer: ignored unknown argument(s) %s: they are not in the tool's input schema.", strings.Join(names, ", "))
}
