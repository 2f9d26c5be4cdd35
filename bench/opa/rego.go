// Package opa renders the benchmark rule set (../testdata/rules100.json)
// as a Rego module and measures OPA evaluating it, for comparison with
// Overseer's Engine.Evaluate on the same rules (package bench). It is a
// module of its own so that Overseer never depends on OPA.
//
// The rules are an ordered list where the first match wins, written in
// Rego as one else-chain:
//
//	decision := {"level": "block", "rule": "a"} if { ... }
//	else := {"level": "auto", "rule": "b"} if { ... }
//	...
//	else := {"level": default_level, "rule": ""}
package opa

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by every error about a malformed rule set.
var ErrInvalid = errors.New("opa bench: invalid rule set")

// Query is the query whose value is the decision: {"level", "rule"}.
const Query = "data.overseer.bench.decision"

const maxRuleSetBytes = 4 << 20

// RuleSet is the shared, engine-neutral form of the benchmark policy. It
// mirrors package bench's RuleSet, which documents every field.
type RuleSet struct {
	Comment  string            `json:"comment,omitempty"`
	Bench    string            `json:"bench"`
	Defaults map[string]string `json:"defaults"`
	Rules    []Rule            `json:"rules"`
	Cases    []Case            `json:"cases"`
}

// Rule is one rule: every non-empty field must hold.
type Rule struct {
	Name  string   `json:"name"`
	Tool  []string `json:"tool,omitempty"`
	Kind  []string `json:"kind,omitempty"`
	Agent []string `json:"agent,omitempty"`
	Cond  []Cond   `json:"cond,omitempty"`
	Level string   `json:"level"`
}

// Cond is one condition; see package bench for the operators.
type Cond struct {
	Op    string          `json:"op"`
	Key   string          `json:"key,omitempty"`
	Name  string          `json:"name,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Case is an action with the facts Overseer derives for it and the
// decision both engines must reach.
type Case struct {
	Name   string          `json:"name"`
	Action json.RawMessage `json:"action"`
	Facts  json.RawMessage `json:"facts"`
	Level  string          `json:"level"`
	Rule   string          `json:"rule"`
}

var levels = []string{"auto", "notify", "confirm", "approve", "block"}

// globRE is the glob subset on which Go's path.Match and OPA's glob.match
// agree.
var globRE = regexp.MustCompile(`^[A-Za-z0-9_.:@*?-]+$`)

// ReadRuleSet reads the rule set in the file at path.
func ReadRuleSet(path string) (*RuleSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opa bench: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRuleSetBytes+1))
	if err != nil {
		return nil, fmt.Errorf("opa bench: read %s: %w", path, err)
	}
	if len(data) > maxRuleSetBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrInvalid, path, maxRuleSetBytes)
	}
	return ParseRuleSet(data)
}

// ParseRuleSet decodes a rule set strictly (unknown fields are errors) and
// checks what the Rego rendering relies on. Package bench validates the
// rest. Errors wrap ErrInvalid.
func ParseRuleSet(data []byte) (*RuleSet, error) {
	var rs RuleSet
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rs); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the rule set", ErrInvalid)
	}
	for _, l := range rs.Defaults {
		if !slices.Contains(levels, l) {
			return nil, fmt.Errorf("%w: unknown default level %q", ErrInvalid, l)
		}
	}
	for _, r := range rs.Rules {
		if strings.TrimSpace(r.Name) == "" || !slices.Contains(levels, r.Level) {
			return nil, fmt.Errorf("%w: rule %q: missing name or unknown level %q", ErrInvalid, r.Name, r.Level)
		}
		for _, g := range slices.Concat(r.Tool, r.Agent) {
			if !globRE.MatchString(g) {
				return nil, fmt.Errorf("%w: rule %q: unsupported glob %q", ErrInvalid, r.Name, g)
			}
		}
		for _, c := range r.Cond {
			if _, err := c.rego(0); err != nil {
				return nil, fmt.Errorf("rule %q: %w", r.Name, err)
			}
		}
	}
	return &rs, nil
}

// Case returns the case named name.
func (rs *RuleSet) Case(name string) (Case, bool) {
	for _, c := range rs.Cases {
		if c.Name == name {
			return c, true
		}
	}
	return Case{}, false
}

// Input is what OPA is given for a case: the action as the adapter sent it,
// with the facts Overseer derives for it.
func (c Case) Input() (map[string]any, error) {
	var in map[string]any
	if err := json.Unmarshal(c.Action, &in); err != nil || in == nil {
		return nil, fmt.Errorf("%w: case %q: action is not a JSON object", ErrInvalid, c.Name)
	}
	facts := map[string]any{}
	if len(bytes.TrimSpace(c.Facts)) > 0 {
		if err := json.Unmarshal(c.Facts, &facts); err != nil || facts == nil {
			return nil, fmt.Errorf("%w: case %q: facts is not a JSON object", ErrInvalid, c.Name)
		}
	}
	in["facts"] = facts
	return in, nil
}

// quote writes s as a Rego string literal (JSON's syntax).
func quote(s string) string {
	b, _ := json.Marshal(s) // a string always encodes
	return string(b)
}

func quoteAll(ss []string, lower bool) string {
	qs := make([]string, len(ss))
	for i, s := range ss {
		if lower {
			s = strings.ToLower(s)
		}
		qs[i] = quote(s)
	}
	return strings.Join(qs, ", ")
}

// globLines matches the lower-cased value of field against globs, as
// Overseer does (case-insensitive; '*' does not cross '/').
func globLines(field, v string, globs []string) []string {
	lit := true
	for _, g := range globs {
		lit = lit && !strings.ContainsAny(g, "*?")
	}
	get := "lower(object.get(input, " + quote(field) + ", \"\"))"
	switch {
	case lit && len(globs) == 1:
		return []string{get + " == " + quote(strings.ToLower(globs[0]))}
	case lit:
		return []string{get + " in {" + quoteAll(globs, true) + "}"}
	}
	return []string{
		"some " + v + " in [" + quoteAll(globs, true) + "]",
		"glob.match(" + v + `, ["/"], ` + get + ")",
	}
}

// Rego renders the rule set as a Rego module whose decision (Query) is the
// first matching rule's level and name, or the per-kind default.
func (rs *RuleSet) Rego() (string, error) {
	var b strings.Builder
	b.WriteString("package overseer.bench\n\n")
	def, err := json.Marshal(rs.Defaults)
	if err != nil {
		return "", err
	}
	if rs.Defaults == nil {
		def = []byte("{}")
	}
	fmt.Fprintf(&b, "defaults := %s\n\n", def)
	b.WriteString(`default_level := object.get(defaults, object.get(input, "kind", ""), "confirm")` + "\n\n")
	b.WriteString("decision := ")
	for _, r := range rs.Rules {
		var lines []string
		switch len(r.Kind) {
		case 0:
		case 1:
			lines = append(lines, "input.kind == "+quote(r.Kind[0]))
		default:
			lines = append(lines, "input.kind in {"+quoteAll(r.Kind, false)+"}")
		}
		if len(r.Tool) > 0 {
			lines = append(lines, globLines("tool", "tool_glob", r.Tool)...)
		}
		if len(r.Agent) > 0 {
			lines = append(lines, globLines("agent", "agent_glob", r.Agent)...)
		}
		for i, c := range r.Cond {
			ls, err := c.rego(i)
			if err != nil {
				return "", fmt.Errorf("rule %q: %w", r.Name, err)
			}
			lines = append(lines, ls...)
		}
		if len(lines) == 0 {
			lines = []string{"true"}
		}
		fmt.Fprintf(&b, "{\"level\": %s, \"rule\": %s} if {\n\t%s\n} else := ", quote(r.Level), quote(r.Name),
			strings.Join(lines, "\n\t"))
	}
	b.WriteString("{\"level\": default_level, \"rule\": \"\"}\n")
	return b.String(), nil
}

func (c Cond) str() (string, error) {
	var s string
	if err := json.Unmarshal(c.Value, &s); err != nil {
		return "", fmt.Errorf("%w: op %s: value must be a string", ErrInvalid, c.Op)
	}
	return s, nil
}

// rego renders one condition as body lines; i keeps the iteration
// variables of several conditions of a rule apart.
func (c Cond) rego(i int) ([]string, error) {
	needKey := strings.HasPrefix(c.Op, "arg_")
	if needKey != (c.Key != "") || (c.Op == "command_arg") != (c.Name != "") {
		return nil, fmt.Errorf("%w: op %s: wrong key or name", ErrInvalid, c.Op)
	}
	arg := "input.args[" + quote(c.Key) + "]"
	p := "p" + strconv.Itoa(i)
	u := "u" + strconv.Itoa(i)
	cmd := "c" + strconv.Itoa(i)
	if c.Op == "path_outside_cwd" {
		if len(c.Value) > 0 {
			return nil, fmt.Errorf("%w: op %s takes no value", ErrInvalid, c.Op)
		}
		return []string{"some " + p + " in input.facts.paths", "not " + p + ".in_cwd"}, nil
	}
	switch c.Op {
	case "arg_in":
		var ss []string
		if err := json.Unmarshal(c.Value, &ss); err != nil || len(ss) == 0 {
			return nil, fmt.Errorf("%w: op %s: value must be a non-empty list of strings", ErrInvalid, c.Op)
		}
		return []string{arg + " in {" + quoteAll(ss, false) + "}"}, nil
	case "confidence_below":
		var f float64
		if err := json.Unmarshal(c.Value, &f); err != nil {
			return nil, fmt.Errorf("%w: op %s: value must be a number", ErrInvalid, c.Op)
		}
		return []string{"input.confidence >= 0", "input.confidence < " + strconv.FormatFloat(f, 'f', -1, 64)}, nil
	}
	s, err := c.str()
	if err != nil {
		return nil, err
	}
	q := quote(s)
	regex := func() error {
		if _, err := regexp.Compile(s); err != nil {
			return fmt.Errorf("%w: op %s: %v", ErrInvalid, c.Op, err)
		}
		return nil
	}
	switch c.Op {
	case "arg_prefix":
		return []string{"startswith(" + arg + ", " + q + ")"}, nil
	case "arg_suffix":
		return []string{"endswith(" + arg + ", " + q + ")"}, nil
	case "arg_contains":
		return []string{"contains(" + arg + ", " + q + ")"}, nil
	case "arg_regex":
		return []string{"regex.match(" + q + ", " + arg + ")"}, regex()
	case "arg_equals":
		return []string{arg + " == " + q}, nil
	case "path_prefix":
		return []string{"some " + p + " in input.facts.paths", "startswith(" + p + ".path, " + q + ")"}, nil
	case "path_suffix":
		return []string{"some " + p + " in input.facts.paths", "endswith(" + p + ".path, " + q + ")"}, nil
	case "path_contains":
		return []string{"some " + p + " in input.facts.paths", "contains(" + p + ".path, " + q + ")"}, nil
	case "path_regex":
		return []string{"some " + p + " in input.facts.paths", "regex.match(" + q + ", " + p + ".path)"}, regex()
	case "url_prefix":
		return []string{"some " + u + " in input.facts.urls", "startswith(" + u + ", " + q + ")"}, nil
	case "url_regex":
		return []string{"some " + u + " in input.facts.urls", "regex.match(" + q + ", " + u + ")"}, regex()
	case "sql_class":
		return []string{"input.facts.sql_class == " + q}, nil
	case "command":
		return []string{"some " + cmd + " in input.facts.commands", cmd + ".name == " + q}, nil
	case "command_arg":
		return []string{"some " + cmd + " in input.facts.commands", cmd + ".name == " + quote(c.Name), q + " in " + cmd + ".args"}, nil
	case "cwd_prefix":
		return []string{"startswith(object.get(input, \"cwd\", \"\"), " + q + ")"}, nil
	}
	return nil, fmt.Errorf("%w: unknown op %q", ErrInvalid, c.Op)
}
