package policy

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/lazyre"
)

// Values of a policy file's `extends`.
const (
	ExtendsBuiltin = "builtin" // the default: the built-in rules follow the file's
	ExtendsNone    = "none"    // only the file's rules
)

// maxFileBytes bounds the size of a policy file.
const maxFileBytes = 16 << 20

//go:embed builtin.yaml
var builtinYAML []byte

// Options tune how a policy's examples are checked when it loads.
type Options struct {
	// Prepare derives an example action's facts (as the engine's analyzers
	// would) before the example is matched. The example's Kind is inferred
	// from its tool name first when it gives none. When Prepare is nil,
	// action.DeriveFileFacts is used, plus a naive shell fallback for the
	// examples only: a shell example with no commands gets one Command
	// made by splitting args.command on white space.
	Prepare func(*action.Action) error
	// SkipExamples skips checking the rules' examples: for rules that were
	// checked when they were saved (the user layer, reloaded from storage).
	SkipExamples bool
}

// Policy is a compiled admin-layer policy: a policy file merged with the
// built-in default (unless it says `extends: none`), or the built-in default
// itself. It is immutable after Parse: callers must not modify its fields,
// maps or rules. It is safe for concurrent use.
type Policy struct {
	// Name is the name given to Parse (the path given to Load), or "builtin".
	Name string
	// Digest is the hex SHA-256 of the file's bytes, for the audit log.
	Digest string
	// Version is the file's format version (1).
	Version int
	// Extends is ExtendsBuiltin or ExtendsNone.
	Extends string
	// Locked means user-layer rules may only tighten, never loosen. The
	// engine enforces it.
	Locked bool
	// Defaults are the per-kind levels used when no rule matches: the file's,
	// filled from the built-in default's when the file extends it. Read them
	// with Default.
	Defaults map[action.Kind]action.Level
	// Settings tune the pipeline; every zero field has been filled from
	// DefaultSettings.
	Settings Settings
	// Rules are the file's rules (layer LayerAdmin) followed, when the file
	// extends the built-in default, by the built-in rules (LayerBuiltin).
	Rules []*Compiled

	guards map[string]*yaml.Node
	opts   Options
}

// fileDoc is the shape of a policy file.
type fileDoc struct {
	Version  int                     `yaml:"version"`
	Extends  string                  `yaml:"extends"`
	Locked   bool                    `yaml:"locked"`
	Defaults map[string]action.Level `yaml:"defaults"`
	Rules    []Rule                  `yaml:"rules"`
	Settings Settings                `yaml:"settings"`
	Guards   map[string]yaml.Node    `yaml:"guards"`
}

// Load reads and compiles the policy file at path. See Parse.
func Load(path string, opts Options) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("policy: read %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, &Error{File: path, Msg: fmt.Sprintf("file larger than %d bytes", maxFileBytes), Err: ErrInvalid}
	}
	return Parse(path, data, opts)
}

// Parse decodes, validates and compiles a policy file's content. name is
// used in error messages ("name:line: ..."). Decoding is strict: an unknown
// field anywhere is an error. Every rule's match and not_match examples are
// checked; a failing one is an error (wrapping ErrExample). All errors wrap
// ErrInvalid; several problems are joined (errors.Join of *Error).
func Parse(name string, data []byte, opts Options) (*Policy, error) {
	p, err := parse(name, data, opts, LayerAdmin)
	if err != nil {
		return nil, err
	}
	if p.Extends == ExtendsBuiltin {
		p.extend(Builtin())
	}
	return p, nil
}

// Builtin returns the built-in default policy. It is compiled once.
func Builtin() *Policy { return builtinPolicy() }

var builtinPolicy = sync.OnceValue(func() *Policy {
	// Its examples are checked by the tests (TestBuiltinExamplesPass), not
	// at every start: running them is most of the cost of compiling it,
	// and it is part of the binary.
	p, err := parse(LayerBuiltin, builtinYAML, Options{SkipExamples: true}, LayerBuiltin)
	if err != nil {
		// builtin.yaml is embedded and tested; this cannot happen in a
		// released binary.
		panic("policy: the built-in policy does not compile: " + err.Error())
	}
	return p
})

// DefaultSettings returns the settings every zero field of a policy's
// Settings is filled from.
func DefaultSettings() Settings {
	return Settings{
		Loop: LoopSettings{
			Window:        Duration(5 * time.Minute),
			SameArgs:      3,
			SameTool:      20,
			Level:         action.Confirm,
			LowConfidence: 0.5,
		},
		Meta:   MetaSettings{LowConfidence: 0.5, Streak: 3, Stagnation: 3},
		Gate:   GateSettings{Timeout: Duration(10 * time.Minute), Default: GateDeny},
		Adapt:  AdaptSettings{EscalateAfter: 3, RevertAfter: 5, HesitationAfter: Duration(30 * time.Second), ProposeAfter: 3},
		Params: ParamSettings{MaxArgBytes: 1 << 20},
		Limits: DefaultLimits(),
	}
}

// DefaultLimits are the daemon's limits when the policy sets none.
func DefaultLimits() LimitSettings {
	return LimitSettings{
		StoredBytes:        32 << 10,
		Session:            QuotaSettings{ActionsPerMinute: 300, Burst: 60, BytesPerMinute: 8 << 20},
		Agent:              QuotaSettings{ActionsPerMinute: 600, Burst: 120, BytesPerMinute: 16 << 20},
		All:                QuotaSettings{ActionsPerMinute: 1200, Burst: 240, BytesPerMinute: 32 << 20},
		DatabaseAlarmBytes: 1 << 30,
	}
}

// Values of GateSettings.Default.
const (
	GateDeny    = "deny"
	GateApprove = "approve"
)

var (
	yamlLineRE      = lazyre.New(`^yaml: line (\d+): (.*)$`)
	unknownAnchorRE = lazyre.New(`^unknown anchor '(.*)' referenced$`)
)

// lineOf returns the 1-based line of the first occurrence of s in data, or 0.
func lineOf(data []byte, s string) int {
	i := bytes.Index(data, []byte(s))
	if i < 0 {
		return 0
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}

func parse(name string, data []byte, opts Options, layer string) (*Policy, error) {
	d := &diag{file: name}
	sum := sha256.Sum256(data)
	p := &Policy{Name: name, Digest: hex.EncodeToString(sum[:]), opts: opts}

	root, err := parseYAML(data)
	if err != nil {
		msg := cleanYAMLError(err)
		line := 0
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		} else if m := unknownAnchorRE.FindStringSubmatch(msg); m != nil {
			line = lineOf(data, "*"+m[1])
		}
		d.errorf(line, "%s", msg)
		return nil, d.err()
	}
	var doc fileDoc
	dc := &decoder{d: d, lines: map[string]int{}}
	if root != nil {
		dc.decode(root, reflect.ValueOf(&doc).Elem(), "", "")
	}
	if err := d.err(); err != nil {
		return nil, err
	}

	switch doc.Version {
	case 0, 1:
		p.Version = 1
	default:
		d.errorf(dc.line("version"), "unsupported version %d (want 1)", doc.Version)
	}
	switch doc.Extends {
	case "", ExtendsBuiltin:
		p.Extends = ExtendsBuiltin
	case ExtendsNone:
		p.Extends = ExtendsNone
	default:
		d.errorf(dc.line("extends"), "unknown extends %q (want %q or %q)%s", doc.Extends,
			ExtendsBuiltin, ExtendsNone, suggest(doc.Extends, []string{ExtendsBuiltin, ExtendsNone}))
	}
	if layer == LayerBuiltin {
		p.Extends = ExtendsNone
	}
	p.Locked = doc.Locked

	p.Defaults = make(map[action.Kind]action.Level, len(action.Kinds))
	for _, k := range slices.Sorted(maps.Keys(doc.Defaults)) {
		l := doc.Defaults[k]
		line := dc.line("defaults." + k)
		switch {
		case !action.Kind(k).Valid():
			d.errorf(line, "unknown kind %q in defaults%s (want one of %s)", k, suggest(k, kindNames()),
				strings.Join(kindNames(), ", "))
		case !l.Valid():
			d.errorf(line, "defaults.%s: missing level", k)
		default:
			p.Defaults[action.Kind(k)] = l
		}
	}
	validateSettings(d, dc, &doc.Settings)
	validateStore(d, dc, &doc.Settings)

	seen := make(map[string]int, len(doc.Rules))
	for i, r := range doc.Rules {
		prefix := fmt.Sprintf("rules[%d]", i)
		line := func(sub string) int { return dc.line(join(prefix, sub)) }
		if first, dup := seen[r.Name]; dup && r.Name != "" {
			d.errorf(line(""), "duplicate rule name %q (first at line %d)", r.Name, first)
		} else {
			seen[r.Name] = line("")
		}
		if c := compileRule(d, r, layer, i, line); c != nil {
			p.Rules = append(p.Rules, c)
		}
	}
	if len(doc.Guards) > 0 {
		p.guards = make(map[string]*yaml.Node, len(doc.Guards))
		for k, n := range doc.Guards {
			p.guards[k] = &n
		}
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	for _, c := range p.Rules {
		if !opts.SkipExamples {
			checkExamples(d, c, opts)
		}
	}
	if err := d.err(); err != nil {
		return nil, err
	}

	p.Settings = doc.Settings
	fillSettings(&p.Settings, DefaultSettings())
	return p, nil
}

// extend merges base under p: base's defaults fill the kinds p leaves unset,
// and base's rules are read after p's.
func (p *Policy) extend(base *Policy) {
	for k, l := range base.Defaults {
		if _, ok := p.Defaults[k]; !ok {
			p.Defaults[k] = l
		}
	}
	fillSettings(&p.Settings, base.Settings)
	p.Rules = append(slices.Clip(p.Rules), base.Rules...)
}

// parseYAML parses one YAML document; nil for an empty one.
func parseYAML(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("yaml: line %d: a policy file holds one document; remove the second \"---\"", line)
	}
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return nil, nil
		}
		return doc.Content[0], nil
	}
	return &doc, nil
}

func validateSettings(d *diag, dc *decoder, s *Settings) {
	at := func(p string) int { return dc.line("settings." + p) }
	nonNeg := func(p string, v int) {
		if v < 0 {
			d.errorf(at(p), "settings.%s: must not be negative", p)
		}
	}
	unit := func(p string, v float64) {
		if v < 0 || v > 1 {
			d.errorf(at(p), "settings.%s: must be between 0 and 1", p)
		}
	}
	nonNeg("loop.same_args", s.Loop.SameArgs)
	nonNeg("loop.same_tool", s.Loop.SameTool)
	unit("loop.low_confidence", s.Loop.LowConfidence)
	if s.Loop.Level == action.Auto {
		d.errorf(at("loop.level"), "settings.loop.level: a loop raises the level; want notify or stricter")
	}
	unit("metacognition.low_confidence", s.Meta.LowConfidence)
	nonNeg("metacognition.streak", s.Meta.Streak)
	if s.Meta.Stagnation < -1 {
		d.errorf(at("metacognition.stagnation"), "settings.metacognition.stagnation: want -1 (off) or more")
	}
	switch s.Gate.Default {
	case "", GateDeny, GateApprove:
	default:
		d.errorf(at("approvals.default"), "settings.approvals.default: unknown answer %q (want %q or %q)%s",
			s.Gate.Default, GateDeny, GateApprove, suggest(s.Gate.Default, []string{GateDeny, GateApprove}))
	}
	nonNeg("adaptation.escalate_after", s.Adapt.EscalateAfter)
	if s.Adapt.RevertAfter < -1 {
		d.errorf(at("adaptation.revert_after"), "settings.adaptation.revert_after: want -1 (never) or more")
	}
	if s.Adapt.ProposeAfter < -1 {
		d.errorf(at("adaptation.propose_after"), "settings.adaptation.propose_after: want -1 (never) or more")
	}
	nonNeg("params.max_arg_bytes", s.Params.MaxArgBytes)
	l := &s.Limits
	if l.StoredBytes < -1 || l.StoredBytes > 0 && l.StoredBytes < 4096 {
		d.errorf(at("limits.stored_bytes"), "settings.limits.stored_bytes: want -1 (no bound) or at least 4096")
	}
	for _, q := range []struct {
		name string
		q    QuotaSettings
	}{{"session", l.Session}, {"agent", l.Agent}, {"all", l.All}} {
		for _, f := range []struct {
			name string
			v    int
		}{{"actions_per_minute", q.q.ActionsPerMinute}, {"burst", q.q.Burst}, {"bytes_per_minute", q.q.BytesPerMinute}} {
			if f.v < -1 {
				p := "limits." + q.name + "." + f.name
				d.errorf(at(p), "settings.%s: want -1 (off) or more", p)
			}
		}
	}
	if l.DatabaseAlarmBytes < -1 {
		d.errorf(at("limits.database_alarm_bytes"), "settings.limits.database_alarm_bytes: want -1 (off) or more")
	}
}

// fillSettings sets every zero field of s from def.
func fillSettings(s *Settings, def Settings) {
	fill(&s.Loop.Window, def.Loop.Window)
	fill(&s.Loop.SameArgs, def.Loop.SameArgs)
	fill(&s.Loop.SameTool, def.Loop.SameTool)
	fill(&s.Loop.Level, def.Loop.Level)
	fill(&s.Loop.LowConfidence, def.Loop.LowConfidence)
	fill(&s.Meta.LowConfidence, def.Meta.LowConfidence)
	fill(&s.Meta.Streak, def.Meta.Streak)
	fill(&s.Meta.Stagnation, def.Meta.Stagnation)
	fill(&s.Gate.Timeout, def.Gate.Timeout)
	fill(&s.Gate.Default, def.Gate.Default)
	fill(&s.Adapt.EscalateAfter, def.Adapt.EscalateAfter)
	fill(&s.Adapt.RevertAfter, def.Adapt.RevertAfter)
	fill(&s.Adapt.HesitationAfter, def.Adapt.HesitationAfter)
	fill(&s.Adapt.ProposeAfter, def.Adapt.ProposeAfter)
	fill(&s.Params.MaxArgBytes, def.Params.MaxArgBytes)
	fill(&s.Limits.StoredBytes, def.Limits.StoredBytes)
	for _, q := range []struct{ dst, def *QuotaSettings }{{&s.Limits.Session, &def.Limits.Session},
		{&s.Limits.Agent, &def.Limits.Agent}, {&s.Limits.All, &def.Limits.All}} {
		fill(&q.dst.ActionsPerMinute, q.def.ActionsPerMinute)
		fill(&q.dst.Burst, q.def.Burst)
		fill(&q.dst.BytesPerMinute, q.def.BytesPerMinute)
	}
	fill(&s.Limits.DatabaseAlarmBytes, def.Limits.DatabaseAlarmBytes)
	if s.Sandbox.ReadablePaths == nil {
		s.Sandbox.ReadablePaths = def.Sandbox.ReadablePaths
	}
	fill(&s.Sandbox.OutputDir, def.Sandbox.OutputDir)
}

func fill[T comparable](dst *T, def T) {
	var zero T
	if *dst == zero {
		*dst = def
	}
}

// Default returns the level for an action of kind k that no rule matched.
// A kind the policy does not name, an unknown kind and the empty kind get
// Confirm: never Auto.
func (p *Policy) Default(k action.Kind) action.Level {
	if !k.Valid() {
		return action.Confirm
	}
	if l, ok := p.Defaults[k]; ok && l.Valid() {
		return l
	}
	return action.Confirm
}

// GuardNames returns the names under `guards:` in the file, sorted, so the
// engine can refuse a configuration for a guard it does not have.
func (p *Policy) GuardNames() []string {
	return slices.Sorted(maps.Keys(p.guards))
}

// GuardConfig returns a copy of the configuration of the named guard as
// written under `guards:`, and whether there was one. Line numbers in the
// node are those of the policy file. Guards decode it with DecodeGuard.
func (p *Policy) GuardConfig(name string) (*yaml.Node, bool) {
	n, ok := p.guards[name]
	if !ok {
		return nil, false
	}
	budget := maxNodes
	return copyNode(n, &budget), true
}

// DecodeGuard decodes the configuration of the named guard into v (a
// pointer to a struct with yaml tags) strictly, as the rest of the file is
// decoded: unknown fields and wrong types are errors naming the file and the
// line. It reports whether there was a configuration; v is untouched when
// there was none.
func (p *Policy) DecodeGuard(name string, v any) (bool, error) {
	n, ok := p.guards[name]
	if !ok {
		return false, nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return true, fmt.Errorf("policy: DecodeGuard(%q): want a non-nil pointer, got %T", name, v)
	}
	d := &diag{file: p.Name}
	dc := &decoder{d: d}
	dc.decode(n, rv.Elem(), "guards."+name, "guards."+name)
	return true, d.err()
}

// DecodeRuleJSON decodes one rule from JSON strictly (unknown fields are
// errors), as the user layer stores them. It does not compile the rule; see
// CompileRules.
func DecodeRuleJSON(data []byte) (Rule, error) {
	var r Rule
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Rule{}, fmt.Errorf("%w: rule: %w", ErrInvalid, err)
	}
	if dec.More() {
		return Rule{}, fmt.Errorf("%w: rule: trailing data after the rule", ErrInvalid)
	}
	return r, nil
}
