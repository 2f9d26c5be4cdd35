package bench

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

	"go.yaml.in/yaml/v3"
)

// ErrInvalid is wrapped by every error about a malformed rule set.
var ErrInvalid = errors.New("bench: invalid rule set")

// maxRuleSetBytes bounds what ReadRuleSet reads.
const maxRuleSetBytes = 4 << 20

// RuleSet is the shared, engine-neutral form of the benchmark policy.
type RuleSet struct {
	Comment string `json:"comment,omitempty"`
	// Bench names the case the benchmarks evaluate.
	Bench string `json:"bench"`
	// Defaults are the per-kind levels used when no rule matches.
	Defaults map[string]string `json:"defaults"`
	// Rules are read in order; the first match wins.
	Rules []Rule `json:"rules"`
	// Cases are actions with the decision both engines must reach.
	Cases []Case `json:"cases"`
}

// Rule is one rule: every non-empty field must hold.
type Rule struct {
	Name  string   `json:"name"`
	Tool  []string `json:"tool,omitempty"`  // globs on the tool name, case-insensitive; '*' and '?' only
	Kind  []string `json:"kind,omitempty"`  // canonical kinds
	Agent []string `json:"agent,omitempty"` // globs on the agent name
	Cond  []Cond   `json:"cond,omitempty"`  // all must hold
	Level string   `json:"level"`
}

// Cond is one condition on an action's arguments or derived facts. Op
// selects what is tested; Key names the argument for the arg_* ops and
// Name the program for command_arg.
type Cond struct {
	Op    string          `json:"op"`
	Key   string          `json:"key,omitempty"`
	Name  string          `json:"name,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Case is an action (as an adapter sends it) with the facts Overseer
// derives for it, and the decision: the level and the deciding rule's name
// (empty when the per-kind default decides).
type Case struct {
	Name   string          `json:"name"`
	Action json.RawMessage `json:"action"`
	Facts  json.RawMessage `json:"facts"`
	Level  string          `json:"level"`
	Rule   string          `json:"rule"`
}

// Condition operators. The value is a string unless noted.
const (
	OpArgPrefix       = "arg_prefix"       // args[key] starts with value
	OpArgSuffix       = "arg_suffix"       // args[key] ends with value
	OpArgContains     = "arg_contains"     // args[key] contains value
	OpArgRegex        = "arg_regex"        // args[key] matches the RE2 pattern value
	OpArgEquals       = "arg_equals"       // args[key] == value
	OpArgIn           = "arg_in"           // args[key] is one of value (a list of strings)
	OpPathPrefix      = "path_prefix"      // some derived path starts with value
	OpPathSuffix      = "path_suffix"      // some derived path ends with value
	OpPathContains    = "path_contains"    // some derived path contains value
	OpPathRegex       = "path_regex"       // some derived path matches value
	OpPathOutsideCwd  = "path_outside_cwd" // some derived path is outside the working directory (no value)
	OpURLPrefix       = "url_prefix"       // some URL starts with value
	OpURLRegex        = "url_regex"        // some URL matches value
	OpSQLClass        = "sql_class"        // the SQL statement class is value
	OpCommand         = "command"          // some shell command is named value
	OpCommandArg      = "command_arg"      // some shell command named name has the argument value
	OpConfidenceBelow = "confidence_below" // a reported confidence is below value (a number)
	OpCwdPrefix       = "cwd_prefix"       // the working directory starts with value
)

type valueType int

const (
	valNone valueType = iota
	valString
	valStrings
	valNumber
)

// ops gives each operator its value type and whether it needs a key or a name.
var ops = map[string]struct {
	val       valueType
	key, name bool
	regex     bool
}{
	OpArgPrefix:       {val: valString, key: true},
	OpArgSuffix:       {val: valString, key: true},
	OpArgContains:     {val: valString, key: true},
	OpArgRegex:        {val: valString, key: true, regex: true},
	OpArgEquals:       {val: valString, key: true},
	OpArgIn:           {val: valStrings, key: true},
	OpPathPrefix:      {val: valString},
	OpPathSuffix:      {val: valString},
	OpPathContains:    {val: valString},
	OpPathRegex:       {val: valString, regex: true},
	OpPathOutsideCwd:  {val: valNone},
	OpURLPrefix:       {val: valString},
	OpURLRegex:        {val: valString, regex: true},
	OpSQLClass:        {val: valString},
	OpCommand:         {val: valString},
	OpCommandArg:      {val: valString, name: true},
	OpConfidenceBelow: {val: valNumber},
	OpCwdPrefix:       {val: valString},
}

var levels = []string{"auto", "notify", "confirm", "approve", "block"}

var kinds = []string{"shell", "file_read", "file_write", "file_edit", "file_delete",
	"net_fetch", "sql", "mcp", "prompt", "other"}

// globRE is what a tool or agent pattern may hold: the subset of globs on
// which path.Match (Overseer) and glob.match (OPA) agree.
var globRE = regexp.MustCompile(`^[A-Za-z0-9_.:@*?-]+$`)

// ReadRuleSet reads and validates the rule set in the file at path.
func ReadRuleSet(path string) (*RuleSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRuleSetBytes+1))
	if err != nil {
		return nil, fmt.Errorf("bench: read %s: %w", path, err)
	}
	if len(data) > maxRuleSetBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrInvalid, path, maxRuleSetBytes)
	}
	return ParseRuleSet(data)
}

// ParseRuleSet decodes and validates a rule set. Decoding is strict: an
// unknown field is an error. Errors wrap ErrInvalid.
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
	if err := rs.validate(); err != nil {
		return nil, err
	}
	return &rs, nil
}

func (rs *RuleSet) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...))
	}
	for k, l := range rs.Defaults {
		if !slices.Contains(kinds, k) {
			bad("defaults: unknown kind %q", k)
		}
		if !slices.Contains(levels, l) {
			bad("defaults.%s: unknown level %q", k, l)
		}
	}
	names := map[string]bool{}
	for i, r := range rs.Rules {
		where := fmt.Sprintf("rules[%d] %q", i, r.Name)
		if strings.TrimSpace(r.Name) == "" {
			bad("rules[%d]: missing name", i)
		} else if names[r.Name] {
			bad("%s: duplicate name", where)
		}
		names[r.Name] = true
		if !slices.Contains(levels, r.Level) {
			bad("%s: unknown level %q", where, r.Level)
		}
		for _, k := range r.Kind {
			if !slices.Contains(kinds, k) {
				bad("%s: unknown kind %q", where, k)
			}
		}
		for _, g := range slices.Concat(r.Tool, r.Agent) {
			if g == "" || !globRE.MatchString(g) {
				bad("%s: glob %q may hold only letters, digits, _.:@- and the wildcards * and ?", where, g)
			}
		}
		for j, c := range r.Cond {
			if err := c.validate(); err != nil {
				bad("%s: cond[%d]: %v", where, j, err)
			}
		}
	}
	cases := map[string]bool{}
	for i, c := range rs.Cases {
		where := fmt.Sprintf("cases[%d] %q", i, c.Name)
		if strings.TrimSpace(c.Name) == "" || cases[c.Name] {
			bad("cases[%d]: missing or duplicate name %q", i, c.Name)
		}
		cases[c.Name] = true
		if !slices.Contains(levels, c.Level) {
			bad("%s: unknown level %q", where, c.Level)
		}
		if c.Rule != "" && !names[c.Rule] {
			bad("%s: unknown rule %q", where, c.Rule)
		}
		var act map[string]any
		if err := json.Unmarshal(c.Action, &act); err != nil || act == nil {
			bad("%s: action is not a JSON object", where)
		}
		if len(c.Facts) > 0 {
			var facts map[string]any
			if err := json.Unmarshal(c.Facts, &facts); err != nil || facts == nil {
				bad("%s: facts is not a JSON object", where)
			}
		}
	}
	if rs.Bench != "" && !cases[rs.Bench] {
		bad("bench: unknown case %q", rs.Bench)
	}
	return errors.Join(errs...)
}

func (c Cond) validate() error {
	op, ok := ops[c.Op]
	if !ok {
		return fmt.Errorf("unknown op %q", c.Op)
	}
	if op.key != (c.Key != "") {
		return fmt.Errorf("op %s: key is required for arg_* ops only", c.Op)
	}
	if op.name != (c.Name != "") {
		return fmt.Errorf("op %s: name is required for command_arg only", c.Op)
	}
	switch op.val {
	case valNone:
		if len(c.Value) > 0 {
			return fmt.Errorf("op %s takes no value", c.Op)
		}
	case valString:
		s, err := c.str()
		if err != nil {
			return err
		}
		if op.regex {
			if _, err := regexp.Compile(s); err != nil {
				return fmt.Errorf("op %s: %w", c.Op, err)
			}
		}
	case valStrings:
		if _, err := c.strs(); err != nil {
			return err
		}
	case valNumber:
		if _, err := c.num(); err != nil {
			return err
		}
	}
	return nil
}

func (c Cond) str() (string, error) {
	var s string
	if err := json.Unmarshal(c.Value, &s); err != nil {
		return "", fmt.Errorf("op %s: value must be a string", c.Op)
	}
	return s, nil
}

func (c Cond) strs() ([]string, error) {
	var ss []string
	if err := json.Unmarshal(c.Value, &ss); err != nil || len(ss) == 0 {
		return nil, fmt.Errorf("op %s: value must be a non-empty list of strings", c.Op)
	}
	return ss, nil
}

func (c Cond) num() (float64, error) {
	var f float64
	if err := json.Unmarshal(c.Value, &f); err != nil {
		return 0, fmt.Errorf("op %s: value must be a number", c.Op)
	}
	return f, nil
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

// policyRule is the YAML form of one rule in an Overseer policy file.
type policyRule struct {
	Name  string   `yaml:"name"`
	Tool  []string `yaml:"tool,omitempty,flow"`
	Kind  []string `yaml:"kind,omitempty,flow"`
	Agent []string `yaml:"agent,omitempty,flow"`
	When  string   `yaml:"when,omitempty"`
	Level string   `yaml:"level"`
}

// PolicyYAML renders the rule set as an Overseer policy file (`extends:
// none`, so the file's rules and defaults are the whole admin layer), each
// condition written in CEL.
func (rs *RuleSet) PolicyYAML() ([]byte, error) {
	doc := struct {
		Version  int               `yaml:"version"`
		Extends  string            `yaml:"extends"`
		Defaults map[string]string `yaml:"defaults"`
		Rules    []policyRule      `yaml:"rules"`
	}{Version: 1, Extends: "none", Defaults: rs.Defaults}
	for _, r := range rs.Rules {
		when, err := r.CEL()
		if err != nil {
			return nil, err
		}
		doc.Rules = append(doc.Rules, policyRule{Name: r.Name, Tool: r.Tool, Kind: r.Kind, Agent: r.Agent,
			When: when, Level: r.Level})
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("bench: encode policy: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("bench: encode policy: %w", err)
	}
	return buf.Bytes(), nil
}

// CEL renders the rule's conditions as one CEL expression (empty when it
// has none), as a person would write them in an Overseer policy.
func (r Rule) CEL() (string, error) {
	parts := make([]string, 0, len(r.Cond))
	for _, c := range r.Cond {
		s, err := c.CEL()
		if err != nil {
			return "", fmt.Errorf("rule %q: %w", r.Name, err)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " && "), nil
}

var celIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// celReserved are CEL's reserved words, which cannot be field selectors.
var celReserved = []string{"as", "break", "const", "continue", "else", "false", "for", "function", "if",
	"import", "in", "let", "loop", "package", "namespace", "null", "return", "true", "var", "void", "while"}

// celArg returns a presence test and an access expression for args[key].
func celArg(key string) (has, get string) {
	if celIdent.MatchString(key) && !slices.Contains(celReserved, key) {
		return "has(args." + key + ")", "args." + key
	}
	q := strconv.Quote(key)
	return q + " in args", "args[" + q + "]"
}

// CEL renders one condition.
func (c Cond) CEL() (string, error) {
	if err := c.validate(); err != nil {
		return "", err
	}
	s, _ := c.str()
	q := strconv.Quote(s)
	has, arg := celArg(c.Key)
	switch c.Op {
	case OpArgPrefix:
		return has + " && " + arg + ".startsWith(" + q + ")", nil
	case OpArgSuffix:
		return has + " && " + arg + ".endsWith(" + q + ")", nil
	case OpArgContains:
		return has + " && " + arg + ".contains(" + q + ")", nil
	case OpArgRegex:
		return has + " && " + arg + ".matches(" + q + ")", nil
	case OpArgEquals:
		return has + " && " + arg + " == " + q, nil
	case OpArgIn:
		ss, _ := c.strs()
		qs := make([]string, len(ss))
		for i, v := range ss {
			qs[i] = strconv.Quote(v)
		}
		return has + " && " + arg + " in [" + strings.Join(qs, ", ") + "]", nil
	case OpPathPrefix:
		return "facts.paths.exists(p, p.path.startsWith(" + q + "))", nil
	case OpPathSuffix:
		return "facts.paths.exists(p, p.path.endsWith(" + q + "))", nil
	case OpPathContains:
		return "facts.paths.exists(p, p.path.contains(" + q + "))", nil
	case OpPathRegex:
		return "facts.paths.exists(p, p.path.matches(" + q + "))", nil
	case OpPathOutsideCwd:
		return "facts.paths.exists(p, !p.in_cwd)", nil
	case OpURLPrefix:
		return "facts.urls.exists(u, u.startsWith(" + q + "))", nil
	case OpURLRegex:
		return "facts.urls.exists(u, u.matches(" + q + "))", nil
	case OpSQLClass:
		return "facts.sql_class == " + q, nil
	case OpCommand:
		return "facts.commands.exists(c, c.name == " + q + ")", nil
	case OpCommandArg:
		return "facts.commands.exists(c, c.name == " + strconv.Quote(c.Name) + " && " + q + " in c.args)", nil
	case OpConfidenceBelow:
		f, _ := c.num()
		// Overseer gives confidence -1 when the decider reported none.
		return "confidence >= 0.0 && confidence < " + strconv.FormatFloat(f, 'f', -1, 64) + floatSuffix(f), nil
	case OpCwdPrefix:
		return "cwd.startsWith(" + q + ")", nil
	}
	return "", fmt.Errorf("%w: unknown op %q", ErrInvalid, c.Op)
}

// floatSuffix makes a whole number a CEL double literal ("1" -> "1.0").
func floatSuffix(f float64) string {
	if s := strconv.FormatFloat(f, 'f', -1, 64); !strings.ContainsAny(s, ".eE") {
		return ".0"
	}
	return ""
}
