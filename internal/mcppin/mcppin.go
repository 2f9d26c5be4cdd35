// Package mcppin pins the definitions of upstream MCP tools, prompts,
// resources and resource templates. The gateway records each one's
// definition — for a tool: name, title, description, input and output
// schema, annotations; for a prompt: its arguments too; for a resource:
// its URI and media type — by hash the first time it sees it, per
// upstream server. A later, different definition (a "rug pull": a server
// that changes what a tool says after it was trusted) is withheld from
// clients until a person accepts it; so is a new tool whose definition
// carries instructions aimed at the model (package inject), unless the
// policy says to flag such tools instead.
//
// Pins live in the store's state (namespace "mcp.pins"), so that the
// gateway, the daemon's console and the CLI share them. Every error path
// withholds: a tool whose pin cannot be read or written is not offered.
package mcppin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/guard/inject"
	"github.com/overseer-dev/overseer/internal/store"
)

// maxDefinitionScan is the longest definition text scanned for
// instructions; a longer one is treated as poisoned.
const maxDefinitionScan = 4 << 20

// Namespace is the store state namespace of pins.
const Namespace = "mcp.pins"

// TypeAccept is the audit record type of a person's acceptance.
const TypeAccept = "mcp_pin_accept"

// Sentinel errors.
var (
	// ErrNothingToAccept: the tool has no pending definition.
	ErrNothingToAccept = errors.New("mcppin: nothing to accept")
	// ErrStale: the pending definition is not the one the person saw.
	ErrStale = errors.New("mcppin: the pending definition changed; look at it again")
	// ErrInvalidConfig is returned for a configuration that cannot be used.
	ErrInvalidConfig = errors.New("mcppin: invalid config")
)

// Mode says what happens to a suspicious or changed definition.
type Mode string

const (
	Withhold Mode = "withhold" // not offered until a person accepts it (default)
	Flag     Mode = "flag"     // offered, and an alert tells the person
	Off      Mode = "off"      // neither (poisoned definitions only)
)

// Config is read from the policy's guards.mcp section (pinning keys).
type Config struct {
	// Poisoned: a new tool whose definition has instructions aimed at the
	// model. Default withhold.
	Poisoned Mode `yaml:"poisoned_definitions" json:"poisoned_definitions,omitempty"`
	// Changed: a tool whose definition differs from the accepted one.
	// Default withhold; off is not allowed.
	Changed Mode `yaml:"changed_definitions" json:"changed_definitions,omitempty"`
}

// WithDefaults fills in unset modes.
func (c Config) WithDefaults() Config {
	if c.Poisoned == "" {
		c.Poisoned = Withhold
	}
	if c.Changed == "" {
		c.Changed = Withhold
	}
	return c
}

// Validate reports whether c can be used.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch c.Poisoned {
	case Withhold, Flag, Off:
	default:
		return fmt.Errorf("%w: poisoned_definitions must be withhold, flag or off, not %q", ErrInvalidConfig, c.Poisoned)
	}
	switch c.Changed {
	case Withhold, Flag:
	default:
		return fmt.Errorf("%w: changed_definitions must be withhold or flag, not %q", ErrInvalidConfig, c.Changed)
	}
	return nil
}

// Kind is what a pin is of. The zero value is a tool (pins written before
// prompts and resources were pinned have no kind).
type Kind string

const (
	KindTool     Kind = ""
	KindPrompt   Kind = "prompt"
	KindResource Kind = "resource"
	KindTemplate Kind = "resource_template"
)

// ParseKind reads a kind as people and URLs write it ("", "tool",
// "prompt", "resource", "resource_template" or "template").
func ParseKind(s string) (Kind, error) {
	switch s {
	case "", "tool":
		return KindTool, nil
	case "prompt":
		return KindPrompt, nil
	case "resource":
		return KindResource, nil
	case "resource_template", "template":
		return KindTemplate, nil
	}
	return "", fmt.Errorf("%w: kind must be tool, prompt, resource or resource_template, not %q", ErrInvalidConfig, s)
}

// String names the kind ("tool" for the zero value).
func (k Kind) String() string {
	if k == KindTool {
		return "tool"
	}
	return string(k)
}

// Definition is what a tool, prompt, resource or resource template says
// about itself, as pinned. Only the fields of its kind are set; the ones
// a tool lacks are left out of its canonical form, so that a tool's hash
// does not depend on them.
type Definition struct {
	// Kind is not part of the definition: it selects the pin.
	Kind         Kind   `json:"-"`
	Name         string `json:"name"`
	Title        string `json:"title,omitempty"`
	Description  string `json:"description,omitempty"`
	InputSchema  any    `json:"inputSchema,omitempty"`
	OutputSchema any    `json:"outputSchema,omitempty"`
	Annotations  any    `json:"annotations,omitempty"`
	// Arguments of a prompt.
	Arguments any `json:"arguments,omitempty"`
	// URI of a resource, URITemplate of a resource template, and the
	// media type of either.
	URI         string `json:"uri,omitempty"`
	URITemplate string `json:"uriTemplate,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
}

// Key is what names the definition within its server and kind: a
// resource's URI, a template's URI template, or else the name.
func (d Definition) Key() string {
	switch d.Kind {
	case KindResource:
		return d.URI
	case KindTemplate:
		return d.URITemplate
	}
	return d.Name
}

// Canonical returns the definition as indented JSON with sorted keys (a
// stable form to hash and to diff).
func (d Definition) Canonical() ([]byte, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return json.MarshalIndent(v, "", "  ") // maps marshal with sorted keys
}

// Hash is the hex SHA-256 of the canonical form.
func Hash(canonical []byte) string {
	h := sha256.Sum256(canonical)
	return hex.EncodeToString(h[:])
}

// Text is the definition's text that reaches the model.
func (d Definition) Text() string {
	return inject.DefinitionText(d.Title, d.Description, d.InputSchema, d.OutputSchema, d.Annotations, d.Arguments)
}

// Pending is a definition seen but not accepted.
type Pending struct {
	Hash       string          `json:"hash"`
	Definition json.RawMessage `json:"definition"`
	Reason     string          `json:"reason"` // "changed", "poisoned", "unsigned"
	Findings   *inject.Report  `json:"findings,omitempty"`
	Diff       string          `json:"diff,omitempty"` // against the accepted definition
	SeenAt     time.Time       `json:"seen_at"`
}

// Pin is one tool's (prompt's, resource's) record.
type Pin struct {
	Server string `json:"server"`
	// Kind is empty for a tool.
	Kind Kind `json:"kind,omitempty"`
	// Tool is the tool's or the prompt's name, the resource's URI or the
	// template's URI template (Definition.Key).
	Tool string `json:"tool"`
	// Hash and Definition are the accepted definition ("" when none has
	// been accepted yet: a poisoned tool seen first).
	Hash       string          `json:"hash,omitempty"`
	Definition json.RawMessage `json:"definition,omitempty"`
	// Flagged holds the findings of an accepted definition that was
	// offered with an alert (mode flag).
	Flagged    *inject.Report `json:"flagged,omitempty"`
	FirstSeen  time.Time      `json:"first_seen"`
	AcceptedBy string         `json:"accepted_by,omitempty"` // "first sight" or a person
	AcceptedAt time.Time      `json:"accepted_at,omitempty"`
	Pending    *Pending       `json:"pending,omitempty"`
	// Seq numbers the acceptances of the pin (Ledger): the accepted
	// definition is the Seq-th. 0 in a pin written before acceptances were
	// recorded, or without a Ledger.
	Seq int64 `json:"seq,omitempty"`
	// MAC is the accepted definition's signature (Signer), on a store
	// several instances share.
	MAC string `json:"mac,omitempty"`
}

// Signer signs accepted definitions. On a store that several instances
// share (a PostgreSQL database), whoever can write the database could
// otherwise put a changed definition's hash in a pin and have the gateway
// offer it; with a Signer, a pin is in force only with a MAC made with a
// key the database does not hold, and one without is withheld until a
// person accepts its definition again.
type Signer interface {
	Sign(body []byte) (string, error)
	Valid(body, mac []byte) bool
}

// signedBody is what a pin's MAC covers: which definition it is, the
// accepted definition's hash, the alert it was accepted with and which
// acceptance it is (left out when 0, so that the MAC of a pin signed
// before acceptances were numbered still checks).
func (p *Pin) signedBody() ([]byte, error) {
	return json.Marshal(struct {
		Server  string         `json:"server"`
		Kind    Kind           `json:"kind"`
		Tool    string         `json:"tool"`
		Hash    string         `json:"hash"`
		Flagged *inject.Report `json:"flagged"`
		Seq     int64          `json:"seq,omitempty"`
	}{p.Server, p.Kind, p.Tool, p.Hash, p.Flagged, p.Seq})
}

// TypePinned is the audit record type of an Acceptance (Ledger).
const TypePinned = "mcp_pinned"

// Acceptance is a definition accepted for a pin — at first sight, in flag
// mode, or by a person — as a Ledger keeps it: the Seq-th of the pin.
type Acceptance struct {
	Server  string         `json:"server"`
	Kind    Kind           `json:"kind,omitempty"`
	Tool    string         `json:"tool"`
	Hash    string         `json:"hash"`
	Flagged *inject.Report `json:"flagged,omitempty"`
	Seq     int64          `json:"seq"`
	By      string         `json:"by"`
	At      time.Time      `json:"at"`
}

// Ledger keeps the acceptances of definitions where a writer of the pins'
// store cannot take one back (the audit log, signed, on a shared
// database): a pin is in force only as the latest acceptance of its tool.
// Without it, such a writer could delete a pin (the gateway would pin a
// clean definition it had never accepted as a new tool's), or put back an
// older signed pin of the tool (a definition since changed and
// re-reviewed).
type Ledger interface {
	// Record records a durably. The registry records an acceptance
	// before it writes the pin that holds it.
	Record(ctx context.Context, a Acceptance) error
	// Latest returns the latest acceptance recorded for a pin (found
	// false when there is none), reading the records written since the
	// ledger last read them first.
	Latest(ctx context.Context, server string, kind Kind, name string) (a Acceptance, found bool, err error)
}

// KeepLedger makes r record every acceptance in l and offer a definition
// only as the latest acceptance of its pin. Call it before r is used.
func (r *Registry) KeepLedger(l Ledger) { r.ledger = l }

// ReasonNotLatest is a pending definition's reason when its pin does not
// hold the latest acceptance its Ledger records (the pin was deleted, or
// an older one put back) and the definition seen is not that one either.
const ReasonNotLatest = "not_latest"

// errRecordFirst stops a pin's update that accepts a definition: the
// acceptance is recorded (Ledger) before the pin is written again.
var errRecordFirst = errors.New("mcppin: record the acceptance first")

// moved is againstLedger's mark of a pin it changed.
var moved = []byte("moved")

// errLedgerBehind stops a pin's update that met a pin newer than the
// ledger as read: it is read again.
var errLedgerBehind = errors.New("mcppin: the ledger as read is behind the pin")

func sameReport(a, b *inject.Report) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// next is the number of the acceptance after a (nil: none yet). It is
// taken from the ledger alone: a pin's own number is whatever the
// database holds.
func (a *Acceptance) next() int64 {
	if a == nil {
		return 1
	}
	return a.Seq + 1
}

// holds reports whether p holds acceptance a as its accepted definition
// (its Seq aside).
func (p *Pin) holds(a Acceptance) bool {
	return p.Hash != "" && p.Hash == a.Hash && sameReport(p.Flagged, a.Flagged)
}

// latest is the pin's latest acceptance as the ledger has it (nil: none,
// or no ledger).
func (r *Registry) latest(ctx context.Context, server string, kind Kind, name string) (*Acceptance, error) {
	if r.ledger == nil {
		return nil, nil
	}
	a, found, err := r.ledger.Latest(ctx, server, kind, name)
	if err != nil {
		return nil, fmt.Errorf("reading the record of its acceptance: %w", err)
	}
	if !found {
		return nil, nil
	}
	return &a, nil
}

// current reports whether p, proved, is its tool's latest acceptance
// (always without a Ledger).
func (r *Registry) current(ctx context.Context, p *Pin) bool {
	if r.ledger == nil {
		return true
	}
	a, err := r.latest(ctx, p.Server, p.Kind, p.Tool)
	return err == nil && a != nil && a.Seq == p.Seq && p.holds(*a)
}

// Status is the outcome of Check.
type Status int

const (
	// Withheld is the zero value: a tool is never offered by accident.
	Withheld Status = iota
	Offered
	OfferedFlagged
)

// Outcome is what Check decided.
type Outcome struct {
	Status Status
	// Why is the reason a tool is withheld or flagged, for people and for
	// a client that calls it.
	Why string
	// New is true when this check recorded something a person should be
	// told of (a new pending definition, or a flagged one): the caller
	// audits it once.
	New bool
	Pin *Pin
}

// Registry reads and writes pins in a store.
type Registry struct {
	st  store.StateStore
	det func() *inject.Detector // compiled on first use
	now func() time.Time
	// signer, when set, signs accepted definitions and holds unsigned
	// ones to be accepted again (RequireSigned).
	signer Signer
	// ledger, when set, records acceptances, and a pin is in force only
	// as the latest one (KeepLedger).
	ledger Ledger
}

// RequireSigned makes r sign every definition it accepts and offer only
// those whose pin carries a valid signature. Call it before r is used.
func (r *Registry) RequireSigned(s Signer) { r.signer = s }

// proved reports whether p's accepted definition is in force: always
// without a Signer, else only with a valid MAC.
func (r *Registry) proved(p *Pin) bool {
	if r.signer == nil {
		return true
	}
	if p.Hash == "" || p.MAC == "" || !definitionOf(p.Definition, p.Hash) {
		return false // the definition shown for it is not the one signed
	}
	body, err := p.signedBody()
	return err == nil && r.signer.Valid(body, []byte(p.MAC))
}

// sign sets p's MAC for its accepted definition (none without a Signer).
func (r *Registry) sign(p *Pin) error {
	p.MAC = ""
	if r.signer == nil || p.Hash == "" {
		return nil
	}
	body, err := p.signedBody()
	if err != nil {
		return err
	}
	p.MAC, err = r.signer.Sign(body)
	if err != nil {
		return fmt.Errorf("signing the pin: %w", err)
	}
	return nil
}

// New returns a registry on st.
func New(st store.StateStore, now func() time.Time) *Registry {
	if now == nil {
		now = time.Now
	}
	return &Registry{st: st, det: inject.Default, now: now}
}

// key is a pin's state key. A tool's is the server and its name (as
// before other kinds were pinned); other kinds carry their kind.
func key(server string, kind Kind, name string) string {
	if kind == KindTool {
		return server + "\x00" + name
	}
	return server + "\x00" + string(kind) + "\x00" + name
}

// Check compares a definition with its pin and updates the pin. Any error
// withholds the tool (prompt, resource).
func (r *Registry) Check(ctx context.Context, server string, def Definition, cfg Config) Outcome {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return Outcome{Why: err.Error()}
	}
	canon, err := def.Canonical()
	if err != nil {
		return Outcome{Why: "its definition cannot be encoded: " + err.Error()}
	}
	h := Hash(canon)
	name := def.Key()
	if name == "" {
		return Outcome{Why: "its definition has no name"}
	}
	k := key(server, def.Kind, name)
	// The common case, an accepted definition seen again, is read without
	// taking the store's write lock (a gateway checks every tool, prompt
	// and resource of every upstream whenever it publishes).
	if cur, err := r.st.GetState(ctx, Namespace, k); err == nil {
		var p Pin
		if json.Unmarshal(cur, &p) == nil && p.Hash == h && r.proved(&p) && r.current(ctx, &p) {
			if p.Flagged != nil {
				return Outcome{Status: OfferedFlagged, Why: p.Flagged.Summary(), Pin: &p}
			}
			return Outcome{Status: Offered, Pin: &p}
		}
	}
	c := check{r: r, server: server, def: def, cfg: cfg, canon: canon, h: h, name: name}
	var first *Outcome // what the update that recorded an acceptance decided
	for try := 0; try < 4; try++ {
		c.latest, err = r.latest(ctx, server, def.Kind, name)
		if err != nil {
			return Outcome{Why: "its pin could not be checked: " + err.Error()}
		}
		c.lastTry = try == 3
		c.record = nil
		err = r.st.UpdateState(ctx, Namespace, k, c.update)
		switch {
		case errors.Is(err, errLedgerBehind):
			continue
		case errors.Is(err, errRecordFirst):
			if err := r.ledger.Record(ctx, *c.record); err != nil {
				return Outcome{Why: "its acceptance could not be recorded: " + err.Error()}
			}
			if c.out.Status != Withheld {
				o := c.out
				first = &o
			}
			continue
		case err != nil:
			return Outcome{Why: "its pin could not be checked: " + err.Error()}
		}
		if first != nil && c.out.Status != Withheld {
			// The pin now holds what was recorded: tell what was decided
			// then (an alert of flag mode).
			first.Pin = c.out.Pin
			return *first
		}
		return c.out
	}
	return Outcome{Why: "its pin could not be checked: it kept changing"}
}

// check is one Check's update of a pin.
type check struct {
	r       *Registry
	server  string
	def     Definition
	cfg     Config
	canon   []byte
	h, name string
	// latest is the pin's latest acceptance as the ledger was read (nil:
	// none, or no ledger); lastTry says that the ledger will not be read
	// again.
	latest  *Acceptance
	lastTry bool
	// out is what the update decided; record, the acceptance to record
	// before the pin is written (errRecordFirst).
	out    Outcome
	record *Acceptance
}

// accept records, before the pin is written, that p's definition (set by
// the caller) is accepted by who: the update stops with errRecordFirst
// when there is a Ledger; else p is signed.
func (c *check) accept(p *Pin, by string, at time.Time) error {
	p.AcceptedBy, p.AcceptedAt = by, at
	if c.r.ledger != nil {
		c.record = &Acceptance{Server: p.Server, Kind: p.Kind, Tool: p.Tool, Hash: p.Hash, Flagged: p.Flagged,
			Seq: c.latest.next(), By: by, At: at}
		return errRecordFirst
	}
	return c.r.sign(p)
}

func (c *check) update(old []byte) ([]byte, error) {
	r, h, canon := c.r, c.h, c.canon
	c.out = Outcome{}
	out := &c.out
	now := r.now().UTC()
	var p Pin
	if old != nil {
		if err := json.Unmarshal(old, &p); err != nil {
			return nil, fmt.Errorf("reading the pin: %w", err)
		}
	} else {
		p = Pin{Server: c.server, Kind: c.def.Kind, Tool: c.name, FirstSeen: now}
	}
	// An accepted definition no instance signed was written into the
	// shared database by something else: whatever it is, a person
	// accepts it before it is offered again.
	unproved := p.Hash != "" && !r.proved(&p)
	changed := old == nil // the pin differs from what is stored
	if r.ledger != nil {
		moved, done, err := c.againstLedger(&p, unproved, now)
		switch {
		case err != nil:
			return nil, err
		case done && moved == nil:
			return old, nil
		case done:
			return moved, nil
		}
		changed = changed || moved != nil
		unproved = p.Hash != "" && !r.proved(&p)
	}
	if p.Hash == h && !unproved {
		// The accepted definition. A pending one stays until a person
		// looks at it: another session's upstream may still serve it,
		// and a server that changed a definition and went back is
		// something the person should see.
		out.Status = Offered
		if p.Flagged != nil {
			out.Status, out.Why = OfferedFlagged, p.Flagged.Summary()
		}
		out.Pin = &p
		if changed {
			return json.Marshal(p)
		}
		return old, nil
	}
	if p.Pending != nil && p.Pending.Hash == h {
		out.Why = whyWithheld(p.Pending)
		out.Pin = &p
		if changed {
			return json.Marshal(p)
		}
		return old, nil
	}
	// Whole: an instruction in the middle of a long description
	// reaches the model as surely as one at its ends. Past
	// maxDefinitionScan, a definition is not read: it is suspect.
	findings := scan(r, c.def)
	cfg := c.cfg
	var err error
	switch {
	case unproved:
		p.Pending = &Pending{Hash: h, Definition: canon, Reason: ReasonUnsigned, Findings: findings, SeenAt: now}
		out.Why, out.New = whyWithheld(p.Pending), true
	case p.Hash == "" && old == nil && (findings == nil || cfg.Poisoned == Off):
		// First sight of a clean tool: pinned as it is.
		p.Hash, p.Definition = h, canon
		out.Status = Offered
		err = c.accept(&p, "first sight", now)
	case p.Hash == "" && old == nil && cfg.Poisoned == Flag:
		p.Hash, p.Definition, p.Flagged = h, canon, findings
		out.Status, out.Why, out.New = OfferedFlagged, "its definition has "+findings.Summary(), true
		err = c.accept(&p, "first sight", now)
	case p.Hash != "" && cfg.Changed == Flag:
		p.Pending = nil
		diff := Diff(Pretty(p.Definition), string(canon))
		p.Hash, p.Definition, p.Flagged = h, canon, findings
		out.Status, out.New = OfferedFlagged, true
		out.Why = "its definition changed since it was accepted (offered: changed_definitions is flag)\n" + diff
		err = c.accept(&p, "changed (flag mode)", now)
	default:
		reason := "changed"
		if p.Hash == "" {
			reason = "poisoned"
		}
		pend := &Pending{Hash: h, Definition: canon, Reason: reason, Findings: findings, SeenAt: now}
		if p.Hash != "" {
			pend.Diff = Diff(Pretty(p.Definition), string(canon))
		}
		p.Pending = pend
		out.Why, out.New = whyWithheld(pend), true
	}
	if err != nil {
		return nil, err
	}
	out.Pin = &p
	return json.Marshal(p)
}

// againstLedger brings p in line with the latest acceptance its Ledger
// records, before the definition seen is compared with it. A pin that
// holds that acceptance under an older number (written before acceptances
// were numbered, or put back from an older copy) takes its number; a pin
// that holds another definition, or none (deleted), is set to the
// acceptance when the definition seen is it, and otherwise withholds the
// definition seen until a person accepts it (ReasonNotLatest). A pin
// accepted before this version and not yet recorded is recorded first. done
// reports that the update ends with the pin as returned; else out is
// not nil when p was changed.
func (c *check) againstLedger(p *Pin, unproved bool, now time.Time) (out []byte, done bool, err error) {
	r, a := c.r, c.latest
	switch {
	case p.Hash != "" && !unproved && (a == nil && p.Seq > 0 || a != nil && p.Seq > a.Seq):
		// Newer than the ledger as read: read it again. What no record
		// backs was written without one (the record deleted): unproved.
		if !c.lastTry {
			return nil, false, errLedgerBehind
		}
		p.MAC = ""
		return moved, false, nil
	case a == nil && p.Hash != "" && !unproved:
		// Accepted before acceptances were recorded: recorded now, as
		// it was accepted.
		c.record = &Acceptance{Server: p.Server, Kind: p.Kind, Tool: p.Tool, Hash: p.Hash, Flagged: p.Flagged,
			Seq: 1, By: p.AcceptedBy, At: p.AcceptedAt}
		return nil, false, errRecordFirst
	case a == nil:
		return nil, false, nil
	case !unproved && p.holds(*a):
		if p.Seq == a.Seq {
			return nil, false, nil
		}
		p.Seq = a.Seq
		if err := r.sign(p); err != nil {
			return nil, false, err
		}
		return moved, false, nil
	case c.h == a.Hash:
		// The definition last accepted, seen again: the pin holds it
		// again.
		p.Hash, p.Definition, p.Flagged, p.Seq = a.Hash, c.canon, a.Flagged, a.Seq
		p.AcceptedBy, p.AcceptedAt = a.By, a.At
		if p.Pending != nil && p.Pending.Hash == c.h {
			p.Pending = nil
		}
		if err := r.sign(p); err != nil {
			return nil, false, err
		}
		return moved, false, nil
	}
	// The pin does not hold what was last accepted, and the definition
	// seen is something else: nothing in the pin is taken.
	if p.Hash == "" && p.Pending != nil && p.Pending.Hash == c.h {
		c.out = Outcome{Why: whyWithheld(p.Pending), Pin: p}
		return nil, true, nil // as stored
	}
	reason := ReasonNotLatest
	if unproved {
		reason = ReasonUnsigned
	}
	p.Hash, p.Definition, p.Flagged, p.MAC, p.Seq = "", nil, nil, "", a.Seq
	p.AcceptedBy, p.AcceptedAt = "", time.Time{}
	p.Pending = &Pending{Hash: c.h, Definition: c.canon, Reason: reason, Findings: scan(r, c.def), SeenAt: now}
	c.out = Outcome{Why: whyWithheld(p.Pending), New: true, Pin: p}
	b, err := json.Marshal(p)
	return b, true, err
}

// scan returns the findings of def's text (nil: none).
func scan(r *Registry, def Definition) *inject.Report {
	text := def.Text()
	var rep inject.Report
	if len(text) > maxDefinitionScan {
		rep = inject.Report{Target: "definition", Flagged: true, Score: 1, Threshold: 1, Findings: []inject.Finding{{
			Rule: "definition-too-long", Class: "unscannable", Weight: 1,
			Excerpt: fmt.Sprintf("a definition of %d bytes, over the %d scanned", len(text), maxDefinitionScan)}}}
	} else {
		rep = r.det().ScanWhole(text, inject.Definition)
	}
	if !rep.Flagged {
		return nil
	}
	return &rep
}

// ReasonUnsigned is a pending definition's reason when its pin's accepted
// definition carries no valid signature (Signer).
const ReasonUnsigned = "unsigned"

func whyWithheld(p *Pending) string {
	switch {
	case p.Reason == ReasonUnsigned:
		return "its pin in the shared database is not signed by an Overseer instance; a person must accept its definition again"
	case p.Reason == ReasonNotLatest:
		return "its pin in the shared database does not hold the definition last accepted (it was deleted, or an older one put back), " +
			"and this one was not accepted; a person must accept it"
	case p.Reason == "poisoned" && p.Findings != nil:
		return "its definition has " + p.Findings.Summary() + "; a person must accept it first"
	case p.Findings != nil:
		return "its definition changed since it was accepted, and the new one has " + p.Findings.Summary() + "; a person must accept the change first"
	}
	return "its definition changed since it was accepted; a person must accept the change first"
}

// List returns every pin, by server, kind and name.
func (r *Registry) List(ctx context.Context) ([]Pin, error) {
	m, err := r.st.ListState(ctx, Namespace)
	if err != nil {
		return nil, err
	}
	out := make([]Pin, 0, len(m))
	for k, v := range m {
		var p Pin
		if err := json.Unmarshal(v, &p); err != nil {
			return nil, fmt.Errorf("pin %q: %w", strings.ReplaceAll(k, "\x00", "/"), err)
		}
		if p.Pending != nil && p.Pending.Diff != "" {
			// Made again from the two definitions, not taken as stored:
			// what a person reads before accepting is the change itself,
			// whoever wrote the database.
			p.Pending.Diff = Diff(Pretty(p.Definition), Pretty(p.Pending.Definition))
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Server != out[j].Server {
			return out[i].Server < out[j].Server
		}
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Tool < out[j].Tool
	})
	return out, nil
}

// Version changes whenever a pin changes (a digest of every pin).
func (r *Registry) Version(ctx context.Context) (string, error) {
	m, err := r.st.ListState(ctx, Namespace)
	if err != nil {
		return "", err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write(m[k])
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Accept makes the pending definition of a tool the accepted one. hash,
// when not empty, must be the pending definition's (what the person was
// shown): a definition that changed again in between is not accepted.
func (r *Registry) Accept(ctx context.Context, server, tool, hash, who string) (*Pin, error) {
	return r.AcceptKind(ctx, server, KindTool, tool, hash, who)
}

// AcceptKind is Accept for a pin of any kind (name as Definition.Key).
// With a Ledger, the acceptance is recorded before the pin is written.
func (r *Registry) AcceptKind(ctx context.Context, server string, kind Kind, tool, hash, who string) (*Pin, error) {
	var (
		got    *Pin
		record *Acceptance // recorded: the pin is written as it says
	)
	for try := 0; try < 3; try++ {
		latest, err := r.latest(ctx, server, kind, tool)
		if err != nil {
			return nil, err
		}
		err = r.st.UpdateState(ctx, Namespace, key(server, kind, tool), func(old []byte) ([]byte, error) {
			if old == nil {
				return nil, fmt.Errorf("%w: no %s %s of server %s has been seen", ErrNothingToAccept, kind, tool, server)
			}
			var p Pin
			if err := json.Unmarshal(old, &p); err != nil {
				return nil, fmt.Errorf("reading the pin: %w", err)
			}
			if p.Pending == nil && record != nil && p.Seq == record.Seq && p.holds(*record) && r.proved(&p) {
				// A gateway that saw the definition just recorded wrote
				// the pin first.
				got = &p
				return old, nil
			}
			if p.Pending == nil {
				return nil, fmt.Errorf("%w: %s/%s has no pending definition", ErrNothingToAccept, server, tool)
			}
			if hash != "" && hash != p.Pending.Hash || record != nil && record.Hash != p.Pending.Hash {
				return nil, ErrStale
			}
			if !definitionOf(p.Pending.Definition, p.Pending.Hash) {
				// Not what a check wrote: a person shown this definition
				// would accept another one, the hash's.
				return nil, fmt.Errorf("%w: %s/%s's pending definition does not match its hash", ErrNothingToAccept, server, tool)
			}
			p.Hash, p.Definition, p.Flagged = p.Pending.Hash, p.Pending.Definition, p.Pending.Findings
			p.AcceptedBy, p.AcceptedAt, p.Pending = who, r.now().UTC(), nil
			if r.ledger != nil {
				if record == nil || !sameReport(record.Flagged, p.Flagged) {
					record = &Acceptance{Server: server, Kind: kind, Tool: tool, Hash: p.Hash, Flagged: p.Flagged,
						Seq: latest.next(), By: who, At: p.AcceptedAt}
					return nil, errRecordFirst
				}
				p.Seq, p.AcceptedAt = record.Seq, record.At
			}
			if err := r.sign(&p); err != nil {
				return nil, err
			}
			got = &p
			return json.Marshal(p)
		})
		if errors.Is(err, errRecordFirst) {
			if err := r.ledger.Record(ctx, *record); err != nil {
				return nil, fmt.Errorf("recording the acceptance: %w", err)
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		return got, nil
	}
	return nil, ErrStale
}

// definitionOf reports whether def, a definition as stored (compact), is
// the canonical definition whose hash is hash.
func definitionOf(def json.RawMessage, hash string) bool {
	return Hash([]byte(Pretty(def))) == hash
}

// Pretty is a stored definition in its canonical, indented form (the
// store keeps JSON compact): what Diff compares.
func Pretty(def json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, def, "", "  "); err != nil {
		return string(def)
	}
	return b.String()
}

// Diff is a line diff of two texts ("-" removed, "+" added, " " kept),
// with at most 3 lines of context around changes. Texts longer than 2000
// lines are compared as wholes.
func Diff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(al) > 2000 || len(bl) > 2000 {
		return "- (" + fmt.Sprint(len(al)) + " lines)\n+ (" + fmt.Sprint(len(bl)) + " lines)"
	}
	// Longest common subsequence table.
	n, m := len(al), len(bl)
	t := make([][]int32, n+1)
	for i := range t {
		t[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var ls []line
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && al[i] == bl[j]:
			ls = append(ls, line{' ', al[i]})
			i++
			j++
		case j < m && (i == n || t[i][j+1] >= t[i+1][j]):
			ls = append(ls, line{'+', bl[j]})
			j++
		default:
			ls = append(ls, line{'-', al[i]})
			i++
		}
	}
	keep := make([]bool, len(ls))
	for k, l := range ls {
		if l.op != ' ' {
			for c := max(0, k-3); c <= min(len(ls)-1, k+3); c++ {
				keep[c] = true
			}
		}
	}
	var out strings.Builder
	skipped := false
	for k, l := range ls {
		if !keep[k] {
			skipped = true
			continue
		}
		if skipped {
			out.WriteString("  …\n")
			skipped = false
		}
		out.WriteByte(l.op)
		out.WriteByte(' ')
		out.WriteString(l.text)
		out.WriteByte('\n')
	}
	return strings.TrimSuffix(out.String(), "\n")
}
