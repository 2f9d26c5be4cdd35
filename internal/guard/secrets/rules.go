package secrets

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"sync"
)

// The known credential formats are gitleaks' default rule set
// (github.com/zricethezav/gitleaks/v8, config/gitleaks.toml, MIT; its
// licence is next to it), copied into gitleaks/ by `go generate` from the
// module version go.mod pins, and embedded: upgrading the module and
// regenerating upgrades the rules (TestEmbeddedRulesAreTheModules fails when
// the copy is stale). The copy is the TOML turned into JSON, read here into
// the few fields a content scan needs: neither gitleaks' detector, its
// configuration stack (viper, HCL…) nor a TOML parser is linked. Rules are
// parsed on the first scan of a process and each regular expression is
// compiled the first time one of its keywords is met, so a process that
// never scans pays nothing and one that scans pays only for the rules its
// texts call for.

//go:generate go run gen_rules.go

//go:embed gitleaks/gitleaks.json
var gitleaksJSON string

type tomlAllow struct {
	Description string   `json:"description"`
	Condition   string   `json:"condition"`
	RegexTarget string   `json:"regexTarget"`
	Regexes     []string `json:"regexes"`
	StopWords   []string `json:"stopwords"`
	Paths       []string `json:"paths"`
	Commits     []string `json:"commits"`
}

type tomlRule struct {
	ID          string      `json:"id"`
	Description string      `json:"description"`
	Regex       string      `json:"regex"`
	Path        string      `json:"path"`
	SecretGroup int         `json:"secretGroup"`
	Entropy     float64     `json:"entropy"`
	Keywords    []string    `json:"keywords"`
	Allowlists  []tomlAllow `json:"allowlists"`
	SkipReport  bool        `json:"skipReport"`
}

type tomlConfig struct {
	Allowlist  *tomlAllow  `json:"allowlist"`
	Allowlists []tomlAllow `json:"allowlists"`
	Rules      []tomlRule  `json:"rules"`
}

// lazyRe is a regular expression compiled on first use.
type lazyRe struct {
	src  string
	once sync.Once
	re   *regexp.Regexp
}

func (l *lazyRe) get() *regexp.Regexp {
	l.once.Do(func() {
		re, err := regexp.Compile(l.src)
		if err == nil {
			l.re = re
		}
	})
	return l.re
}

// allowlist is one of gitleaks' allowlists, restricted to what applies to
// content (regexes and stop words; lists that need a path or a commit are
// left out).
type allowlist struct {
	and     bool
	target  string // "", "match" or "line"
	regexes []*lazyRe
	stop    []string
}

func (a *allowlist) allowed(secret, match, line string) bool {
	target := secret
	switch a.target {
	case "match":
		target = match
	case "line":
		target = line
	}
	regexOK := false
	for _, r := range a.regexes {
		if re := r.get(); re != nil && re.MatchString(target) {
			regexOK = true
			break
		}
	}
	stopOK := false
	if len(a.stop) > 0 {
		ls := strings.ToLower(secret)
		for _, w := range a.stop {
			if strings.Contains(ls, w) {
				stopOK = true
				break
			}
		}
	}
	if a.and {
		return (len(a.regexes) == 0 || regexOK) && (len(a.stop) == 0 || stopOK) && (len(a.regexes) > 0 || len(a.stop) > 0)
	}
	return regexOK || stopOK
}

// rule is one compiled (lazily) gitleaks rule.
type rule struct {
	id        string
	desc      string
	re        lazyRe
	group     int
	entropy   float64
	allow     []*allowlist
	multiline bool // the match may span lines (private key blocks)
	generic   bool // a keyword near a high-entropy value, no known format
	// context rules match keyword, an assignment operator, then the value
	// (key = "…", "token": "…"): a keyword not followed by an operator
	// within a few bytes cannot start a match.
	context bool
	// maxLen is the longest match in bytes (approximately: runes), or -1
	// when unbounded; the window tried around a keyword is that wide.
	maxLen int
}

// ruleSet is the parsed rule set with its keyword index.
type ruleSet struct {
	rules  []*rule
	global []*allowlist
	kw     keywordIndex
	// always are rules without keywords (run on every long token run).
	always []int
}

var (
	rulesOnce sync.Once
	rulesVal  *ruleSet
	rulesErr  error
)

// loadRules parses gitleaks' default configuration once per process.
func loadRules() (*ruleSet, error) {
	rulesOnce.Do(func() { rulesVal, rulesErr = parseRules(gitleaksJSON) })
	return rulesVal, rulesErr
}

// genericRules are gitleaks' rules that match a keyword near a
// high-entropy value rather than a known format: a finding of theirs is
// "generic" (a person confirms) rather than a known credential.
var genericRules = map[string]bool{
	"generic-api-key": true,
	"curl-auth-user":  true,
}

func parseRules(src string) (*ruleSet, error) {
	var cfg tomlConfig
	if err := json.Unmarshal([]byte(src), &cfg); err != nil {
		return nil, fmt.Errorf("secrets: parsing gitleaks' rules: %w", err)
	}
	rs := &ruleSet{}
	if cfg.Allowlist != nil {
		if a := compileAllow(*cfg.Allowlist); a != nil {
			rs.global = append(rs.global, a)
		}
	}
	for _, a := range cfg.Allowlists {
		if a := compileAllow(a); a != nil {
			rs.global = append(rs.global, a)
		}
	}
	kws := map[string][]int{}
	for _, tr := range cfg.Rules {
		if tr.Regex == "" || tr.Path != "" || tr.SkipReport {
			continue // a rule on file names, or an auxiliary one
		}
		src := tr.Regex
		if strings.Contains(src, contextOperator) {
			// The optional name before a context rule's keyword only widens
			// the reported match, and as 50 copies of a class it makes Go's
			// regexp engine slow: drop it (the secret group is unchanged).
			src = strings.ReplaceAll(src, contextPrefix, "")
		}
		r := &rule{id: tr.ID, desc: tr.Description, re: lazyRe{src: src}, group: tr.SecretGroup,
			entropy: tr.Entropy, generic: genericRules[tr.ID],
			multiline: strings.Contains(tr.Regex, `[\s\S`) || strings.Contains(tr.Regex, `(?s)`),
			context:   strings.Contains(tr.Regex, contextOperator), maxLen: -1}
		if re, err := syntax.Parse(tr.Regex, syntax.Perl); err == nil {
			r.maxLen = maxLen(re)
		}
		for _, a := range tr.Allowlists {
			if a := compileAllow(a); a != nil {
				r.allow = append(r.allow, a)
			}
		}
		idx := len(rs.rules)
		rs.rules = append(rs.rules, r)
		if len(tr.Keywords) == 0 {
			rs.always = append(rs.always, idx)
			continue
		}
		for _, k := range tr.Keywords {
			k = strings.ToLower(k)
			if len(k) < 2 {
				rs.always = append(rs.always, idx)
				continue
			}
			kws[k] = append(kws[k], idx)
		}
	}
	rs.kw = newKeywordIndex(kws)
	return rs, nil
}

// contextOperator is the assignment-operator group of gitleaks' rules of
// the form keyword, operator, value.
const contextOperator = `(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)`

// contextPrefix is the optional name before a context rule's keyword.
const contextPrefix = `[\w.-]{0,50}?`

// maxLen is the longest text re can match, in runes, or -1 when there is
// no bound.
func maxLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return -1
	case syntax.OpRepeat:
		if re.Max < 0 {
			return -1
		}
		n := maxLen(re.Sub[0])
		if n < 0 {
			return -1
		}
		return n * re.Max
	case syntax.OpConcat:
		t := 0
		for _, s := range re.Sub {
			n := maxLen(s)
			if n < 0 {
				return -1
			}
			t += n
		}
		return t
	case syntax.OpAlternate:
		m := 0
		for _, s := range re.Sub {
			n := maxLen(s)
			if n < 0 {
				return -1
			}
			m = max(m, n)
		}
		return m
	}
	return 0 // empty matches and assertions
}

func compileAllow(t tomlAllow) *allowlist {
	if len(t.Paths) > 0 || len(t.Commits) > 0 {
		if strings.EqualFold(t.Condition, "AND") || (len(t.Regexes) == 0 && len(t.StopWords) == 0) {
			return nil // needs a path or a commit, which content does not have
		}
	}
	if len(t.Regexes) == 0 && len(t.StopWords) == 0 {
		return nil
	}
	a := &allowlist{and: strings.EqualFold(t.Condition, "AND"), target: t.RegexTarget}
	for _, r := range t.Regexes {
		a.regexes = append(a.regexes, &lazyRe{src: r})
	}
	for _, w := range t.StopWords {
		a.stop = append(a.stop, strings.ToLower(w))
	}
	return a
}

// keywordIndex finds rule keywords case-insensitively: a bitset of the
// keywords' first two bytes (in every case) is checked at each position,
// and only a hit compares the keywords that start with those two bytes.
type keywordIndex struct {
	bigram  [65536 / 64]uint64 // over the bytes as written, every case of each keyword's
	bucket  []uint16           // lower-cased bigram → index+1 into buckets (65536 entries)
	buckets [][]kwEntry
	third   [][4]uint64 // per bucket: the lower-cased bytes its keywords have third (all for a 2-byte one)
	maxLen  int
}

type kwEntry struct {
	kw    string
	rules []int
}

func newKeywordIndex(kws map[string][]int) keywordIndex {
	ix := keywordIndex{bucket: make([]uint16, 65536)}
	keys := make([]string, 0, len(kws))
	for k := range kws {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b := uint16(k[0])<<8 | uint16(k[1])
		for _, c0 := range cases(k[0]) {
			for _, c1 := range cases(k[1]) {
				w := uint16(c0)<<8 | uint16(c1)
				ix.bigram[w>>6] |= 1 << (w & 63)
			}
		}
		if ix.bucket[b] == 0 {
			ix.buckets = append(ix.buckets, nil)
			ix.third = append(ix.third, [4]uint64{})
			ix.bucket[b] = uint16(len(ix.buckets))
		}
		i := ix.bucket[b] - 1
		ix.buckets[i] = append(ix.buckets[i], kwEntry{kw: k, rules: kws[k]})
		if len(k) == 2 {
			ix.third[i] = [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
		} else {
			ix.third[i][k[2]>>6] |= 1 << (k[2] & 63)
		}
		ix.maxLen = max(ix.maxLen, len(k))
	}
	return ix
}

// lower is ASCII lower-casing by table.
var lower [256]byte

func init() {
	for i := range lower {
		c := byte(i)
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
}

// cases are the bytes that lower-case to c (c is lower case).
func cases(c byte) []byte {
	if c >= 'a' && c <= 'z' {
		return []byte{c, c - 'a' + 'A'}
	}
	return []byte{c}
}

// hasPrefixFold reports whether s[i:] starts with kw (lower case).
func hasPrefixFold(s string, i int, kw string) bool {
	if len(s)-i < len(kw) {
		return false
	}
	for j := 0; j < len(kw); j++ {
		if lower[s[i+j]] != kw[j] {
			return false
		}
	}
	return true
}

// each calls fn for every keyword occurrence in s[from:to] (the keyword may
// run past to).
func (ix *keywordIndex) each(s string, from, to int, fn func(pos int, e *kwEntry)) {
	to = min(to, len(s)-1)
	for i := max(from, 0); i < to; i++ {
		w := uint16(s[i])<<8 | uint16(s[i+1])
		if ix.bigram[w>>6]&(1<<(w&63)) == 0 {
			continue
		}
		b := uint16(lower[s[i]])<<8 | uint16(lower[s[i+1]])
		bi := ix.bucket[b] - 1
		if i+2 < len(s) {
			if c := lower[s[i+2]]; ix.third[bi][c>>6]&(1<<(c&63)) == 0 {
				continue
			}
		}
		es := ix.buckets[bi]
		for k := range es {
			if hasPrefixFold(s, i, es[k].kw) {
				fn(i, &es[k])
			}
		}
	}
}

// entropy is the Shannon entropy of s in bits per byte, as gitleaks
// computes it (over runes).
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	var other map[rune]int
	n := 0
	for _, r := range s {
		n++
		if r < 256 {
			counts[r]++
			continue
		}
		if other == nil {
			other = map[rune]int{}
		}
		other[r]++
	}
	inv := 1 / float64(n)
	e := 0.0
	for _, c := range counts {
		if c > 0 {
			f := float64(c) * inv
			e -= f * math.Log2(f)
		}
	}
	for _, c := range other {
		f := float64(c) * inv
		e -= f * math.Log2(f)
	}
	return e
}
