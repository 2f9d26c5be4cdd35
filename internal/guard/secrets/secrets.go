// Package secrets finds credentials in text: a shared, pure analyser that
// the egress guard runs on what an agent sends and that other parts of
// Overseer (MCP tool results, PostToolUse output) can run on what comes back.
//
// Three kinds of secret are found:
//
//   - known credential formats: gitleaks' maintained default rule set (cloud
//     keys, tokens of the code hosts and SaaS APIs, private key blocks,
//     JWTs, …), plus connection strings that carry a password;
//   - generic secrets: a high-entropy value next to a keyword such as key,
//     token, secret or password (gitleaks' generic-api-key rule);
//   - known values: the values of the person's own secret files and
//     secret environment variables, held only as keyed fingerprints (see
//     Fingerprints), found whole or embedded in a longer string.
//
// Decoders run first, so an encoded secret is found too: URL (percent)
// encoding, base64 (standard and URL alphabets, with or without padding),
// base32, hex, unicode and HTML escapes, zero-width characters removed and
// look-alike characters folded to ASCII; values split across fields or DNS
// labels are joined (see Part and JoinLabels).
//
// A Finding never holds the secret: Masked shows its first four
// characters and its length. Nothing here logs.
package secrets

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Finding is one secret found in a text.
type Finding struct {
	// Rule names what matched: a gitleaks rule id ("aws-access-token",
	// "github-pat", "private-key", "jwt", "generic-api-key" …),
	// "connection-string-password", or "known-value".
	Rule string `json:"rule"`
	// Description says what the rule finds, for a person.
	Description string `json:"description,omitempty"`
	// Masked is the secret's first four characters and its length:
	// "AKIA…(20 chars)". The secret itself is never kept.
	Masked string `json:"masked"`
	// Length is the secret's length in bytes.
	Length int `json:"length"`
	// Where lists the decoders that revealed the secret, outermost first
	// ("base64", "url > base64", "joined fields", "dns labels"); empty when
	// the secret is in the text as written.
	Where string `json:"where,omitempty"`
	// Part names the part of the input it was found in, as the caller
	// named it in ScanParts ("url", "header Authorization", "body").
	Part string `json:"part,omitempty"`
	// Generic is true for a high-entropy value next to a keyword, with no
	// known format: likely, not certain, a secret.
	Generic bool `json:"generic,omitempty"`
	// Source says where a known value was seen ("environment variable
	// GITHUB_TOKEN", "~/.aws/credentials").
	Source string `json:"source,omitempty"`
	// Start and End are the secret's byte offsets in the part's text when
	// it is there as written (Where is empty); End is 0 otherwise. Redact
	// uses them.
	Start int `json:"start,omitempty"`
	End   int `json:"end,omitempty"`
}

// String renders the finding for a person: rule, masked value, where.
func (f Finding) String() string {
	s := f.Rule + " " + f.Masked
	if f.Source != "" {
		s += " (the value of " + f.Source + ")"
	}
	var in []string
	if f.Part != "" {
		in = append(in, "in "+f.Part)
	}
	if f.Where != "" {
		in = append(in, "decoded from "+f.Where)
	}
	if len(in) > 0 {
		s += ", " + strings.Join(in, ", ")
	}
	return s
}

// Mask shows a secret as its first four characters and its length.
func Mask(s string) string {
	n := len(s)
	head := s
	if utf8.RuneCountInString(s) > 4 {
		i, k := 0, 0
		for k < 4 {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			k++
		}
		head = s[:i]
	}
	// Shorter secrets show less: never more than a third of a value.
	if n < 12 {
		head = head[:min(len(head), n/3)]
	}
	return fmt.Sprintf("%s…(%d chars)", sanitize(head), n)
}

// sanitize keeps a masked head printable on one line.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == utf8.RuneError {
			return '?'
		}
		return r
	}, s)
}

// Part is one piece of what is scanned, named for the findings.
type Part struct {
	Name string // "url", "header Authorization", "body", "argument text"
	Text string
}

// Options configure an Analyzer.
type Options struct {
	// Known are the fingerprints of the person's own secret values; nil
	// finds known formats and generic secrets only.
	Known *Fingerprints
	// MaxBytes caps how much of the parts of one scan is read (what lies
	// beyond is not scanned). Zero means DefaultMaxBytes.
	MaxBytes int
}

// DefaultMaxBytes is how much of one text is scanned by default.
const DefaultMaxBytes = 4 << 20

// Analyzer scans texts. It is safe for concurrent use.
type Analyzer struct {
	known    []*Fingerprints
	maxBytes int
}

// New returns an analyser.
func New(opts Options) *Analyzer {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	a := &Analyzer{maxBytes: opts.MaxBytes}
	if opts.Known != nil {
		a.known = []*Fingerprints{opts.Known}
	}
	return a
}

// With returns an analyser that also finds the values of fps (nil sets
// are skipped). a is not changed.
func (a *Analyzer) With(fps ...*Fingerprints) *Analyzer {
	c := *a
	c.known = append([]*Fingerprints(nil), a.known...)
	for _, f := range fps {
		if f != nil {
			c.known = append(c.known, f)
		}
	}
	return &c
}

var defaultAnalyzer = New(Options{})

// Scan finds the secrets of known formats and the generic secrets in text,
// after decoding it (see the package documentation). It is the shared
// entry point for any part of Overseer that wants to know whether a text
// carries a credential.
func Scan(text string) []Finding { return defaultAnalyzer.Scan(text) }

// ScanParts is Scan over several parts, with values split across parts
// joined (see Analyzer.ScanParts).
func ScanParts(parts []Part) []Finding { return defaultAnalyzer.ScanParts(parts) }

// Scan finds the secrets in text.
func (a *Analyzer) Scan(text string) []Finding {
	return a.ScanParts([]Part{{Text: text}})
}

// ScanParts finds the secrets in each part, and in the parts joined: the
// short parts (up to 64 bytes) are concatenated in order, two to six at a
// time, so that a key split across fields, headers or query parameters is
// found whole.
func (a *Analyzer) ScanParts(parts []Part) []Finding {
	c := newCollector()
	rs, err := loadRules()
	if err != nil {
		// The embedded rule set does not parse: a build problem the tests
		// catch. Report it as a finding so that callers fail closed.
		return []Finding{{Rule: "rules-unavailable", Description: err.Error(), Masked: "…"}}
	}
	budget := a.maxBytes
	for _, p := range parts {
		t := p.Text
		if len(t) > budget {
			t = t[:budget]
		}
		budget -= len(t)
		c.part = p.Name
		c.original = true
		a.scanDecoded(rs, t, c)
		if budget <= 0 {
			break
		}
	}
	if j := joinParts(parts); j != "" {
		c.part = "fields joined"
		c.joined = true
		c.original = false
		a.scanDecoded(rs, j, c)
	}
	return preferSpecific(c.out)
}

// preferSpecific drops a generic finding of a value that a rule of a
// known format also found ("token: ghp_…" is a GitHub token, not just a
// high-entropy value after a keyword).
func preferSpecific(fs []Finding) []Finding {
	known := map[string]bool{}
	for _, f := range fs {
		if !f.Generic {
			known[f.Masked] = true
		}
	}
	out := fs[:0]
	for _, f := range fs {
		if f.Generic && known[f.Masked] {
			continue
		}
		out = append(out, f)
	}
	return out
}

// joinParts concatenates consecutive short parts, 2 to 6 at a time, one
// combination a line: in the order given, and within each kind of part
// (the first word of its name: every "header", every "query" value), so
// that the pieces of a value split across headers are adjacent even when
// other arguments stand between them.
func joinParts(parts []Part) string {
	var all []string
	byKind := map[string][]string{}
	var kinds []string
	for _, p := range parts {
		t := strings.TrimSpace(p.Text)
		if len(t) == 0 || len(t) > 64 {
			continue
		}
		if len(all) < 64 {
			all = append(all, t)
		}
		k, _, _ := strings.Cut(p.Name, " ")
		if _, ok := byKind[k]; !ok {
			kinds = append(kinds, k)
		}
		if len(byKind[k]) < 64 {
			byKind[k] = append(byKind[k], t)
		}
	}
	var b strings.Builder
	combos := func(short []string) {
		for i := range short {
			for j := i + 2; j <= min(i+6, len(short)); j++ {
				for _, s := range short[i:j] {
					b.WriteString(s)
				}
				b.WriteByte('\n')
			}
		}
	}
	combos(all)
	for _, k := range kinds {
		if len(byKind[k]) > 1 && len(byKind[k]) < len(all) {
			combos(byKind[k])
		}
	}
	return b.String()
}

// Redact returns text with the secrets Scan finds in it as written
// replaced by their masked form ("ghp_…(40 chars)"), every occurrence, and
// the findings. Secrets found only in a decoding (base64 …) cannot be
// replaced in place: they are among the findings, with Where set, for the
// caller to act on.
func Redact(text string) (string, []Finding) { return defaultAnalyzer.Redact(text) }

// Redact is the package's Redact with a's known values.
func (a *Analyzer) Redact(text string) (string, []Finding) {
	fs := a.Scan(text)
	type span struct{ s, e int }
	var spans []span
	seen := map[string]bool{}
	for _, f := range fs {
		if f.End <= f.Start || f.End > len(text) {
			continue
		}
		v := text[f.Start:f.End]
		if seen[v] {
			continue
		}
		seen[v] = true
		for off := 0; ; {
			i := strings.Index(text[off:], v)
			if i < 0 {
				break
			}
			spans = append(spans, span{off + i, off + i + len(v)})
			off += i + len(v)
		}
	}
	if len(spans) == 0 {
		return text, fs
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].s < spans[j].s })
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		if sp.s < last {
			continue // inside a span already replaced
		}
		b.WriteString(text[last:sp.s])
		b.WriteString(Mask(text[sp.s:sp.e]))
		last = sp.e
	}
	b.WriteString(text[last:])
	return b.String(), fs
}

// JoinLabels returns the labels of a host name below its last two joined
// without dots, every run of two to six consecutive labels on a line of its
// own ("AKIAIOSF.ODNN7EXA.MPLE.evil.com" → "AKIAIOSFODNN7EXA",
// "AKIAIOSFODNN7EXAMPLE", "ODNN7EXAMPLE"), or "" when there are fewer than
// two such labels: data sent out as DNS names is split into labels of at
// most 63 bytes.
func JoinLabels(host string) string {
	host = strings.TrimSuffix(host, ".")
	labels := strings.Split(host, ".")
	if len(labels) < 4 {
		return ""
	}
	labels = labels[:len(labels)-2]
	if len(labels) > 32 {
		labels = labels[:32]
	}
	var b strings.Builder
	for i := range labels {
		for j := i + 2; j <= min(i+6, len(labels)); j++ {
			for _, l := range labels[i:j] {
				b.WriteString(l)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// collector gathers findings without repeats.
type collector struct {
	out    []Finding
	seen   map[string]bool
	part   string
	joined bool
	// text is the text being scanned; original says it is the part as
	// written (not a decoding), base its offset in the part.
	text     string
	original bool
	base     int
}

func newCollector() *collector { return &collector{seen: map[string]bool{}} }

// addAt adds f for secret, a substring of the text being scanned.
func (c *collector) addAt(f Finding, where, secret string) {
	if c.original && where == "" && len(secret) > 0 && len(c.text) > 0 {
		off := int(uintptr(unsafe.Pointer(unsafe.StringData(secret))) - uintptr(unsafe.Pointer(unsafe.StringData(c.text))))
		if off >= 0 && off+len(secret) <= len(c.text) {
			f.Start, f.End = c.base+off, c.base+off+len(secret)
		}
	}
	c.add(f, where)
}

func (c *collector) add(f Finding, where string) {
	key := findingKey(f)
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	f.Part = c.part
	if c.joined {
		where = joinWhere("joined fields", where)
	}
	f.Where = where
	c.out = append(c.out, f)
}

// findingKey identifies a finding for dropping repeats.
func findingKey(f Finding) string {
	switch f.Rule {
	case "private-key":
		return f.Rule // gitleaks' rule and the header check find the same block
	case "known-value":
		return f.Rule + "\x00" + f.Source + "\x00" + fmt.Sprint(f.Length)
	}
	return f.Rule + "\x00" + f.Masked
}

// sub returns an empty collector with c's part, for a concurrent scan.
func (c *collector) sub() *collector {
	return &collector{seen: map[string]bool{}, part: c.part, joined: c.joined, original: c.original}
}

// merge adds the findings of a sub-collector, without repeats.
func (c *collector) merge(s *collector) {
	for _, f := range s.out {
		if key := findingKey(f); !c.seen[key] {
			c.seen[key] = true
			c.out = append(c.out, f)
		}
	}
}

func joinWhere(outer, inner string) string {
	switch {
	case outer == "":
		return inner
	case inner == "":
		return outer
	}
	return outer + " > " + inner
}
