// Package mcpguard is the guard for calls that reach Overseer through its MCP
// gateway. It turns what the gateway learnt about the called tool into
// findings the engine understands:
//
//   - the tool's MCP annotations (readOnlyHint, destructiveHint,
//     openWorldHint) become a soft classification, the level used when no
//     policy rule decides: a read-only tool of a closed world runs, a
//     destructive one waits for a person with the full preview;
//   - a tool whose input schema could not be checked is put to a person
//     (a hard floor), since its arguments were not validated.
//
// The gateway records these in the action's derived facts (Facts.Notes)
// with Annotate and MarkSchemaUnchecked. Annotations can lower a level, so
// their note is sealed with a key that lives only in this process and bound
// to the action's exact arguments: an agent that submits a forged note
// through another adapter gets a stricter verdict, never a looser one.
// Annotations only classify actions of kind mcp; a tool mapped to another
// kind (shell, file_write, …) is judged by that kind's guards and rules.
package mcpguard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/mcppin"
	"github.com/overseer-dev/overseer/internal/policy"
)

// Name is the guard's name, and its section in a policy file's guards.
const Name = "mcp"

// Prefixes of the notes this guard reads in Action.Facts.Notes.
const (
	// NoteAnnotations starts a sealed annotations note (see Annotate).
	NoteAnnotations = "mcp.annotations "
	// NoteSchemaUnchecked starts the note of a call whose arguments could
	// not be checked against the tool's input schema.
	NoteSchemaUnchecked = "mcp.schema-unchecked"
	// NoteStripped starts the note listing unknown arguments the gateway
	// removed before the call (informational; no finding).
	NoteStripped = "mcp.stripped-args"
	// NoteServerRead starts a sealed note of a read of a server's own data
	// through the gateway (a prompt, a resource): see MarkServerRead.
	NoteServerRead = "mcp.server-read "
)

// ErrInvalidConfig is returned for a configuration that cannot be used.
var ErrInvalidConfig = errors.New("mcpguard: invalid config")

// Annotations are the behaviour hints an MCP server gives for a tool. A nil
// pointer means the server did not say (the protocol's defaults apply:
// destructive and open world).
type Annotations struct {
	ReadOnly    bool  `json:"read_only,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
	Idempotent  bool  `json:"idempotent,omitempty"`
	OpenWorld   *bool `json:"open_world,omitempty"`
}

// Declared reports whether the server said anything about the tool's
// behaviour. A tool without hints gets no classification from this guard.
func (an Annotations) Declared() bool {
	return an.ReadOnly || an.Destructive != nil || an.OpenWorld != nil || an.Idempotent
}

// Config sets the level of each class of annotated tool. It is read from a
// policy file's guards.mcp section; zero fields take the defaults.
type Config struct {
	// ReadOnly: readOnlyHint true and openWorldHint false. Default auto.
	ReadOnly action.Level `yaml:"read_only" json:"read_only"`
	// ReadOnlyOpenWorld: readOnlyHint true, open world (openWorldHint true
	// or unsaid), such as a web search. Default notify.
	ReadOnlyOpenWorld action.Level `yaml:"read_only_open_world" json:"read_only_open_world"`
	// Additive: not read-only, destructiveHint false. Default confirm.
	Additive action.Level `yaml:"additive" json:"additive"`
	// Destructive: not read-only, destructiveHint true or unsaid. Default
	// approve.
	Destructive action.Level `yaml:"destructive" json:"destructive"`
	// UncheckedSchema is the floor for a call whose arguments could not be
	// checked against the tool's schema. Default confirm; at least confirm.
	UncheckedSchema action.Level `yaml:"unchecked_schema" json:"unchecked_schema"`
	// IgnoreAnnotations turns the classification by annotations off: every
	// unmapped MCP tool gets the mcp kind's default.
	IgnoreAnnotations bool `yaml:"ignore_annotations" json:"ignore_annotations"`
	// ReadName: a tool without annotations (an agent's own MCP call seen by
	// its hooks, which carry no annotations) whose name only reads
	// (get_issue, list-projects, searchCode: see readName). Default notify.
	ReadName action.Level `yaml:"read_name" json:"read_name"`
	// IgnoreNames turns the classification by name off.
	IgnoreNames bool `yaml:"ignore_names" json:"ignore_names"`
	// PoisonedDefinitions is what the gateway does with a new tool whose
	// definition has instructions aimed at the model: withhold (default:
	// until a person accepts it), flag (offer it and alert) or off.
	PoisonedDefinitions mcppin.Mode `yaml:"poisoned_definitions" json:"poisoned_definitions,omitempty"`
	// ChangedDefinitions is what the gateway does with a tool whose
	// definition changed since it was accepted: withhold (default) or flag.
	ChangedDefinitions mcppin.Mode `yaml:"changed_definitions" json:"changed_definitions,omitempty"`
}

// Pinning is the configuration of the gateway's definition pins.
func (c Config) Pinning() mcppin.Config {
	return mcppin.Config{Poisoned: c.PoisonedDefinitions, Changed: c.ChangedDefinitions}.WithDefaults()
}

// DefaultConfig is the configuration with every default filled in.
func DefaultConfig() Config {
	return Config{
		ReadOnly:          action.Auto,
		ReadOnlyOpenWorld: action.Notify,
		Additive:          action.Confirm,
		Destructive:       action.Approve,
		UncheckedSchema:   action.Confirm,
		ReadName:          action.Notify,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	fill := func(l *action.Level, def action.Level) {
		if *l == action.Unset {
			*l = def
		}
	}
	fill(&c.ReadOnly, d.ReadOnly)
	fill(&c.ReadOnlyOpenWorld, d.ReadOnlyOpenWorld)
	fill(&c.Additive, d.Additive)
	fill(&c.Destructive, d.Destructive)
	fill(&c.UncheckedSchema, d.UncheckedSchema)
	fill(&c.ReadName, d.ReadName)
	return c
}

// Validate reports whether c can be used.
func (c Config) Validate() error {
	c = c.withDefaults()
	for name, l := range map[string]action.Level{"read_only": c.ReadOnly, "read_only_open_world": c.ReadOnlyOpenWorld,
		"additive": c.Additive, "destructive": c.Destructive, "unchecked_schema": c.UncheckedSchema, "read_name": c.ReadName} {
		if !l.Valid() {
			return fmt.Errorf("%w: %s: level %s", ErrInvalidConfig, name, l)
		}
	}
	if err := c.Pinning().Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if c.UncheckedSchema < action.Confirm {
		return fmt.Errorf("%w: unchecked_schema must be confirm or stricter, not %s", ErrInvalidConfig, c.UncheckedSchema)
	}
	return nil
}

// Guard is the MCP guard. It is safe for concurrent use.
type Guard struct {
	cfg Config
}

var _ guard.Guard = (*Guard)(nil)

// New builds the guard. Zero fields of cfg take the defaults.
func New(cfg Config) (*Guard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Guard{cfg: cfg.withDefaults()}, nil
}

// FromPolicy builds the guard from a policy's guards.mcp section (the
// defaults when the section is absent).
func FromPolicy(p *policy.Policy) (*Guard, error) {
	var cfg Config
	if p != nil {
		if _, err := p.DecodeGuard(Name, &cfg); err != nil {
			return nil, err
		}
	}
	g, err := New(cfg)
	if err != nil {
		return nil, fmt.Errorf("guards.%s: %w", Name, err)
	}
	return g, nil
}

// Name implements guard.Guard.
func (g *Guard) Name() string { return Name }

// Check implements guard.Guard. It reads only the notes the gateway wrote;
// an action without them yields no finding.
func (g *Guard) Check(_ context.Context, a *action.Action) ([]guard.Finding, error) {
	var out []guard.Finding
	annotated := false
	for _, n := range a.Facts.Notes {
		switch {
		case strings.HasPrefix(n, NoteSchemaUnchecked):
			why := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(n, NoteSchemaUnchecked), ":"))
			out = append(out, guard.Finding{Check: "mcp.schema-unchecked", Level: g.cfg.UncheckedSchema, Hard: true,
				Message: fmt.Sprintf("the arguments of %s could not be checked against its input schema (%s)", a.Tool, why)})
		case strings.HasPrefix(n, NoteServerRead):
			what, err := openRead(a, n)
			if err != nil {
				out = append(out, guard.Finding{Check: "mcp.unsealed-annotations", Level: action.Confirm, Hard: true,
					Message: fmt.Sprintf("the %s call carries a read note Overseer did not record (%v)", a.Tool, err)})
				continue
			}
			if a.Kind != action.KindMCP {
				continue
			}
			annotated = true
			out = append(out, guard.Finding{Check: "mcp.server-read", Level: g.cfg.ReadOnly, Hard: false,
				Message: fmt.Sprintf("%s reads the server's own data (MCP %s); what its arguments name is judged by the other guards", a.Tool, what)})
		case strings.HasPrefix(n, NoteAnnotations):
			an, err := open(a, n)
			if err != nil {
				// Not sealed by this process for these arguments: someone
				// wrote hints that would lower the level. Never trust them.
				out = append(out, guard.Finding{Check: "mcp.unsealed-annotations", Level: action.Confirm, Hard: true,
					Message: fmt.Sprintf("the %s call carries tool annotations Overseer did not record (%v)", a.Tool, err)})
				continue
			}
			if g.cfg.IgnoreAnnotations || a.Kind != action.KindMCP || !an.Declared() {
				continue
			}
			annotated = true
			out = append(out, g.classify(a.Tool, an))
		}
	}
	if !annotated && !g.cfg.IgnoreNames && a.Kind == action.KindMCP && inertArgs(a.Args, 0) {
		if tool, ok := readName(a.Tool); ok {
			out = append(out, guard.Finding{Check: "mcp.read-name", Level: g.cfg.ReadName, Hard: false,
				Message: fmt.Sprintf("%s is named as a tool that only reads (%s); its server gave no annotations here", a.Tool, tool)})
		}
	}
	return out, nil
}

// activeArgs are argument names whose value says what a call does (a
// statement, a command, code, a URL): a call with one is not classified by
// its tool's name.
var activeArgs = map[string]bool{
	"sql": true, "query": true, "statement": true, "stmt": true, "command": true, "cmd": true, "commands": true,
	"script": true, "code": true, "expression": true, "expr": true, "eval": true, "shell": true, "program": true,
	"url": true, "uri": true, "urls": true, "endpoint": true, "webhook": true, "method": true, "body": true,
}

// inertArgs reports whether args hold nothing that says what the call does
// (see activeArgs) and no URL, to a depth of 8.
func inertArgs(v any, depth int) bool {
	if depth > 8 {
		return false
	}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if activeArgs[strings.ToLower(k)] || !inertArgs(x, depth+1) {
				return false
			}
		}
	case []any:
		for _, x := range v {
			if !inertArgs(x, depth+1) {
				return false
			}
		}
	case string:
		return !strings.Contains(v, "://")
	}
	return true
}

// readName reports whether an MCP tool's name (mcp__server__tool, or the
// tool alone) only reads: its first word is a reading verb and no word of
// it writes. The name is the server's word, as annotations are; the
// arguments are judged by the other guards all the same (paths, SQL,
// URLs, secrets in them).
func readName(full string) (string, bool) {
	tool := action.ToolName(full)
	if !action.ReadsByName(tool) {
		return tool, false
	}
	for _, w := range action.NameWords(tool)[1:] {
		if secretWords[w] {
			return tool, false
		}
	}
	return tool, true
}

// secretWords are words of the names of tools that read secrets (get_env,
// read_credentials, list_api_keys): what they return is not harmless to
// put in the model's context, so they keep the default.
var secretWords = map[string]bool{
	"env": true, "envs": true, "environment": true, "secret": true, "secrets": true, "credential": true,
	"credentials": true, "creds": true, "token": true, "tokens": true, "key": true, "keys": true,
	"apikey": true, "password": true, "passwords": true, "passwd": true, "auth": true, "cookie": true,
	"cookies": true, "private": true, "vault": true, "kms": true, "ssh": true, "gpg": true, "cert": true,
	"certs": true, "certificate": true, "certificates": true, "session": true, "sessions": true, "otp": true,
}

// classify maps annotations to a soft finding.
func (g *Guard) classify(tool string, an Annotations) guard.Finding {
	f := guard.Finding{Hard: false}
	switch {
	case an.ReadOnly && an.OpenWorld != nil && !*an.OpenWorld:
		f.Check, f.Level = "mcp.read-only", g.cfg.ReadOnly
		f.Message = fmt.Sprintf("the server declares %s read-only, in a closed world (readOnlyHint)", tool)
	case an.ReadOnly:
		f.Check, f.Level = "mcp.read-only-open-world", g.cfg.ReadOnlyOpenWorld
		f.Message = fmt.Sprintf("the server declares %s read-only, reaching the open world (readOnlyHint, openWorldHint)", tool)
	case an.Destructive != nil && !*an.Destructive:
		f.Check, f.Level = "mcp.additive", g.cfg.Additive
		f.Message = fmt.Sprintf("the server declares %s changes its environment without destroying anything (destructiveHint false)", tool)
	default:
		f.Check, f.Level = "mcp.destructive", g.cfg.Destructive
		f.Message = fmt.Sprintf("the server declares %s may destroy data (destructiveHint)", tool)
	}
	return f
}

// Annotate records the tool's annotations in a's facts, sealed for this
// process and a's exact arguments: call it after a's tool, kind, working
// directory and arguments are final. Nothing is recorded for a tool
// without behaviour hints.
func Annotate(a *action.Action, an Annotations) {
	if !an.Declared() {
		return
	}
	body, err := json.Marshal(an)
	if err != nil {
		return // cannot happen for this type; no note means no lowering
	}
	a.Facts.Notes = append(a.Facts.Notes, NoteAnnotations+string(body)+" sig="+seal(a.ArgsHash(), body))
}

// MarkSchemaUnchecked records that a's arguments could not be checked
// against the tool's input schema, and why.
func MarkSchemaUnchecked(a *action.Action, why string) {
	a.Facts.Notes = append(a.Facts.Notes, NoteSchemaUnchecked+": "+why)
}

// MarkStripped records the unknown arguments removed from a call.
func MarkStripped(a *action.Action, names []string) {
	if len(names) > 0 {
		a.Facts.Notes = append(a.Facts.Notes, NoteStripped+": "+strings.Join(names, ", "))
	}
}

// ErrUnsealed means an annotations note was not sealed by this process for
// the action's arguments.
var ErrUnsealed = errors.New("mcpguard: annotations not sealed for this call")

// ParseNote reads an annotations note without checking its seal: the
// annotations and the seal as written. It is the parser the fuzz target
// exercises; Check also verifies the seal.
func ParseNote(n string) (Annotations, string, error) {
	an, _, sig, err := parseNote(n)
	return an, sig, err
}

func parseNote(n string) (an Annotations, body, sig string, err error) {
	rest, ok := strings.CutPrefix(n, NoteAnnotations)
	if !ok {
		return an, "", "", fmt.Errorf("%w: not an annotations note", ErrUnsealed)
	}
	i := strings.LastIndex(rest, " sig=")
	if i < 0 {
		return an, "", "", fmt.Errorf("%w: no seal", ErrUnsealed)
	}
	body, sig = rest[:i], rest[i+len(" sig="):]
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&an); err != nil {
		return Annotations{}, "", "", fmt.Errorf("%w: %v", ErrUnsealed, err)
	}
	if dec.More() {
		return Annotations{}, "", "", fmt.Errorf("%w: trailing data", ErrUnsealed)
	}
	return an, body, sig, nil
}

func open(a *action.Action, n string) (Annotations, error) {
	an, body, sig, err := parseNote(n)
	if err != nil {
		return Annotations{}, err
	}
	if !hmac.Equal([]byte(sig), []byte(seal(a.ArgsHash(), []byte(body)))) {
		return Annotations{}, ErrUnsealed
	}
	return an, nil
}

var (
	keyOnce sync.Once
	key     [32]byte
)

// seal is a MAC of the annotations bound to the arguments' hash, under a
// key made at random once per process and never written anywhere.
func seal(argsHash string, body []byte) string {
	keyOnce.Do(func() {
		if _, err := rand.Read(key[:]); err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
	})
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(argsHash))
	m.Write([]byte{'\n'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// MarkServerRead records that a is a read of its server's own data that
// the gateway makes for a client (what: "prompts/get", "resources/read"),
// sealed for this process and a's exact arguments like annotations: such
// a read is classified as a read-only tool of a closed world (read_only),
// while its arguments' paths, URLs and secrets are judged as any call's.
// Call it after a's tool, kind, working directory and arguments are final.
func MarkServerRead(a *action.Action, what string) {
	body := []byte(strings.ReplaceAll(what, " ", "_"))
	a.Facts.Notes = append(a.Facts.Notes, NoteServerRead+string(body)+" sig="+seal(a.ArgsHash(), append([]byte("read:"), body...)))
}

// openRead checks a server-read note's seal and returns what it says.
func openRead(a *action.Action, n string) (string, error) {
	rest := strings.TrimPrefix(n, NoteServerRead)
	i := strings.LastIndex(rest, " sig=")
	if i < 0 {
		return "", fmt.Errorf("%w: no seal", ErrUnsealed)
	}
	body, sig := rest[:i], rest[i+len(" sig="):]
	if !hmac.Equal([]byte(sig), []byte(seal(a.ArgsHash(), append([]byte("read:"), body...)))) {
		return "", ErrUnsealed
	}
	return body, nil
}
