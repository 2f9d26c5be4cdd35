package secrets

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// minRun is the shortest run of token characters that can hold a secret
// of a known format; keyword rules are only tried near such runs.
const minRun = 12

// hugeRun is the length past which a run (a base64 image, a hex dump) is
// opaque: rules are tried near its two ends only, and the decoders look
// inside it.
const hugeRun = 4096

// tokenChar marks the bytes that make up tokens, keys and encoded data.
var tokenChar [256]bool

func init() {
	for c := 'a'; c <= 'z'; c++ {
		tokenChar[c] = true
		tokenChar[c-'a'+'A'] = true
	}
	for c := '0'; c <= '9'; c++ {
		tokenChar[c] = true
	}
	for _, c := range "_-+/=.~" {
		tokenChar[c] = true
	}
}

// run is a maximal run of token characters of at least minRun bytes.
type run struct {
	start, end int
	cls        byte // the run bits its every byte has (runHash, runHex)
}

// Run bits, over every byte of a run.
const (
	runToken = 1 << iota // always set for a token character
	runHash              // lower-case hex digit or dash: a hash, a UUID
	runHex               // hex digit
)

// runClass gives each byte its run bits (0: not a token character).
var runClass [256]byte

func init() {
	for c := 0; c < 256; c++ {
		if !tokenChar[c] {
			continue
		}
		b := byte(c)
		k := byte(runToken)
		if b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b == '-' {
			k |= runHash
		}
		if isHex(b) {
			k |= runHex
		}
		runClass[c] = k
	}
}

// runPool holds the slices of runs of finished surveys: a large text has
// thousands of runs.
var runPool = sync.Pool{New: func() any { return new([]run) }}

func getRuns() []run { return (*runPool.Get().(*[]run))[:0] }

// release returns the survey's runs to the pool; sv is not used after.
func (sv *survey) release() {
	if cap(sv.runs) > 0 && cap(sv.runs) <= 1<<20 {
		r := sv.runs[:0]
		runPool.Put(&r)
	}
	sv.runs = nil
}

// survey is what one pass over a text learns: its long token runs and
// whether any string-level decoder applies.
type survey struct {
	runs     []run
	percent  bool // %XX
	escape   bool // \u, \x, &#
	nonASCII bool
}

func surveyText(t string) survey {
	n := len(t)
	sv := survey{runs: getRuns()}
	i := 0
	for i < n {
		// A run of token characters.
		start := i
		cls := byte(0xff)
		for i < n {
			k := runClass[t[i]]
			if k == 0 {
				break
			}
			cls &= k
			i++
		}
		if i-start >= minRun {
			sv.runs = append(sv.runs, run{start, i, cls})
		}
		// Other characters, noting those a decoder needs.
		for i < n {
			k := byteKind[t[i]]
			if k == kindToken {
				break
			}
			if k == kindSpecial {
				sv.note(t, i)
			}
			i++
		}
	}
	return sv
}

// note looks at a byte that a string-level decoder may need (% \ & or a
// non-ASCII byte) and notes the decoder when it applies.
func (sv *survey) note(t string, i int) {
	n := len(t)
	switch c := t[i]; {
	case c == '%':
		if i+2 < n && isHex(t[i+1]) && isHex(t[i+2]) {
			sv.percent = true
		}
	case c == '\\':
		// \u \U \x \/ and octal hide characters; \n \" \\ do not.
		if i+1 < n && strings.IndexByte("uUx/0123", t[i+1]) >= 0 {
			sv.escape = true
		}
	case c == '&':
		if i+2 < n && (t[i+1] == '#' || isAlnum(t[i+1]) && strings.IndexByte(t[i+1:min(n, i+9)], ';') > 0) {
			sv.escape = true
		}
	case !sv.nonASCII:
		r, _ := utf8.DecodeRuneInString(t[i:])
		sv.nonASCII = foldable(r)
	}
}

const (
	kindPlain   = 0
	kindToken   = 1
	kindSpecial = 2 // % \ & and non-ASCII bytes: a decoder may apply
)

var byteKind [256]byte

func init() {
	for c := 0; c < 256; c++ {
		switch {
		case tokenChar[c]:
			byteKind[c] = kindToken
		case c == '%' || c == '\\' || c == '&' || c >= 0x80:
			byteKind[c] = kindSpecial
		}
	}
}

// foldable reports characters that Fold changes: invisible ones, known
// look-alikes, and compatibility forms (full-width, mathematical letters).
func foldable(r rune) bool {
	if invisible(r) {
		return true
	}
	if _, ok := confusables[r]; ok {
		return true
	}
	return r >= 0xFF01 && r <= 0xFF5E || r >= 0x1D400 && r <= 0x1D7FF || r >= 0x2460 && r <= 0x24FF ||
		r >= 0x2070 && r <= 0x209F || r >= 0xFB00 && r <= 0xFB06
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// lookback is how far before a value a context rule's keyword may start:
// the keyword (up to 16 bytes), 20 name characters, 3 quotes or spaces,
// an operator of up to 4 and 5 more quotes or spaces.
const lookback = 48

// eachRegion calls fn for each stretch of text where keyword rules are
// tried: each long run, and the 48 bytes before it, where a context rule's
// keyword and operator stand before their value ("api_key": "…").
// Overlapping stretches are merged.
func eachRegion(t string, runs []run, fn func(start, end int)) {
	cs, ce := -1, -1 // the stretch being merged
	add := func(s, e int) {
		s, e = max(s, 0), min(e, len(t))
		if cs >= 0 && s <= ce {
			ce = max(ce, e)
			return
		}
		if cs >= 0 {
			fn(cs, ce)
		}
		cs, ce = s, e
	}
	for _, r := range runs {
		switch {
		case r.end-r.start > hugeRun:
			add(r.start-lookback, r.start+1024)
			add(r.end-1024, r.end)
		case r.cls&runHash != 0:
			// A hash or an id: no credential format is lower-case hex, but
			// a context rule's keyword may stand before it.
			add(r.start-lookback, r.start)
		default:
			add(r.start-lookback, r.end)
		}
	}
	if cs >= 0 {
		fn(cs, ce)
	}
}

// scanText runs every detector on one (decoded) text.
func (a *Analyzer) scanText(rs *ruleSet, t string, sv *survey, where string, c *collector) {
	if len(sv.runs) > 0 {
		a.scanRules(rs, t, sv, where, c)
	}
	if strings.Contains(t, "://") {
		scanConnStrings(t, where, c)
	}
	if strings.Contains(t, "PRIVATE KEY") {
		scanKeyHeaders(t, where, c)
	}
	for _, k := range a.known {
		k.scan(t, where, c)
	}
}

// scanRules tries gitleaks' rules whose keywords occur near long runs.
func (a *Analyzer) scanRules(rs *ruleSet, t string, sv *survey, where string, c *collector) {
	done := make([]int, len(rs.rules)) // per rule: the end of the last window tried
	eachRegion(t, sv.runs, func(start, end int) {
		rs.kw.each(t, start, end, func(pos int, e *kwEntry) {
			for _, idx := range e.rules {
				if done[idx] > pos {
					continue
				}
				done[idx] = a.tryRule(rs, idx, t, pos, len(e.kw), where, c)
			}
		})
		for _, idx := range rs.always {
			if done[idx] <= start {
				done[idx] = a.tryRuleWindow(rs, idx, t, start, end, where, c)
			}
		}
	})
}

// tryRule runs rule idx on the window around a keyword at pos and returns
// the window's end (or pos+1 when a cheap check rules the match out).
func (a *Analyzer) tryRule(rs *ruleSet, idx int, t string, pos, kwLen int, where string, c *collector) int {
	r := rs.rules[idx]
	var ws, we int
	switch {
	case r.context:
		// keyword, up to ~20 name characters, an operator, quotes, then
		// the value: the window ends with the value's run, which must be
		// long enough to be a secret.
		op := operatorAt(t, pos+kwLen)
		if op < 0 {
			return pos + 1
		}
		v := op
		for v < len(t) && v < op+8 && strings.IndexByte(" \t\r\n'\"`=:>|?,", t[v]) >= 0 {
			v++
		}
		ve := v
		for ve < len(t) && ve < v+512 && tokenChar[t[ve]] {
			ve++
		}
		if ve-v < 8 {
			return pos + 1
		}
		if r.id == "generic-api-key" {
			a.generic(rs, r, t, pos, kwLen, op, where, c)
			return ve
		}
		ws, we = max(pos-8, 0), min(ve+4, len(t))
	case r.multiline:
		ws, we = max(pos-16, 0), min(pos+16384, len(t))
	default:
		run := runAround(t, pos)
		if kwLen <= 4 && run < minRun {
			return pos + 1 // a short prefix ("ey", "akia") inside an ordinary word
		}
		switch {
		case r.maxLen >= 0:
			// The keyword is inside the match: the match lies within
			// maxLen of it on either side (runes counted as bytes).
			ws, we = max(pos-r.maxLen-8, 0), min(pos+r.maxLen+8, len(t))
		case run >= minRun:
			// An unbounded token (a JWT): its run, and a little around it.
			rs, re := runBounds(t, pos)
			ws, we = max(rs-16, 0), min(re+16, len(t))
		default:
			ws, we = max(pos-256, 0), min(pos+1024, len(t))
		}
	}
	if !r.multiline {
		if nl := strings.LastIndexByte(t[ws:pos], '\n'); nl >= 0 {
			ws += nl + 1
		}
		if nl := strings.IndexByte(t[pos:we], '\n'); nl >= 0 && r.maxLen >= 0 && !r.context {
			we = pos + nl
		}
	}
	return a.tryRuleWindow(rs, idx, t, ws, we, where, c)
}

// operatorAt returns the index just past an assignment operator (= : > ,
// | ?) that follows i within the few name characters, spaces and quotes
// gitleaks' context rules allow between a keyword and its operator, or -1.
func operatorAt(t string, i int) int {
	for j := i; j < len(t) && j < i+28; j++ {
		switch c := t[j]; {
		case c == '=' || c == ':' || c == '>' || c == ',' || c == '|' || c == '?':
			return j + 1
		case tokenChar[c] || c == ' ' || c == '\t' || c == '\'' || c == '"' || c == '\r' || c == '\n':
		default:
			return -1
		}
	}
	return -1
}

// runBounds returns the run of token characters around i.
func runBounds(t string, i int) (int, int) {
	s, e := i, i
	for s > 0 && tokenChar[t[s-1]] {
		s--
	}
	for e < len(t) && tokenChar[t[e]] {
		e++
	}
	return s, e
}

// runAround is the length of the run of token characters around i.
func runAround(t string, i int) int {
	s, e := runBounds(t, i)
	return e - s
}

func (a *Analyzer) tryRuleWindow(rs *ruleSet, idx int, t string, ws, we int, where string, c *collector) int {
	r := rs.rules[idx]
	if r.generic && c.joined {
		return we // generic values are judged in their own field only
	}
	re := r.re.get()
	if re == nil {
		return we
	}
	w := t[ws:we]
	for _, m := range re.FindAllStringSubmatchIndex(w, 8) {
		match := w[m[0]:m[1]]
		secret := match
		if r.group > 0 && 2*r.group+1 < len(m) && m[2*r.group] >= 0 {
			secret = w[m[2*r.group]:m[2*r.group+1]]
		} else if r.group == 0 {
			for g := 1; 2*g+1 < len(m); g++ {
				if m[2*g] >= 0 && m[2*g+1] > m[2*g] {
					secret = w[m[2*g]:m[2*g+1]]
					break
				}
			}
		}
		if strings.HasPrefix(secret, "-----") {
			// A PEM block: show the key material, not the header.
			if nl := strings.IndexByte(secret, '\n'); nl > 0 {
				secret = strings.TrimSpace(secret[nl+1:])
			}
		}
		if r.entropy != 0 && entropy(secret) <= r.entropy {
			continue
		}
		line := lineAround(w, m[0], m[1])
		if allowedBy(rs.global, secret, match, line) || allowedBy(r.allow, secret, match, line) || exampleValue(secret) {
			continue
		}
		c.addAt(Finding{Rule: r.id, Description: r.desc, Masked: Mask(secret), Length: len(secret), Generic: r.generic}, where, secret)
	}
	return we
}

// generic is gitleaks' generic-api-key rule in Go (its regular
// expression, 150 copies of a class, is too slow for Go's engine): a
// keyword, up to 20 name characters and 3 quotes or spaces, an operator,
// up to 5 quotes, spaces or =, then a value of 10 to 150 characters of
// [\w.=-] (or base64) that ends at a quote, a space, ; or the end, with
// an entropy above the rule's. The rule's allowlists and stop words apply.
func (a *Analyzer) generic(rs *ruleSet, r *rule, t string, pos, kwLen, op int, where string, c *collector) {
	kw := t[pos : pos+kwLen]
	if strings.EqualFold(kw, "api") && kw != "api" && kw != "Api" && kw != "API" {
		return // (?-i:[Aa]pi|API)
	}
	// Between the keyword and the operator: [ \t\w.-]{0,20} then [\s'"]{0,3}.
	j := pos + kwLen
	k := j
	for k < len(t) && k-j < 20 && (isWordByte(t[k]) || t[k] == '.' || t[k] == '-' || t[k] == ' ' || t[k] == '\t') {
		k++
	}
	q := k
	for q < len(t) && q-k < 3 && (t[q] == ' ' || t[q] == '\t' || t[q] == '\n' || t[q] == '\r' || t[q] == '\'' || t[q] == '"') {
		q++
	}
	op = -1
	for _, o := range genericOperators {
		if strings.HasPrefix(t[q:], o) {
			op = q + len(o)
			break
		}
	}
	if op < 0 {
		return
	}
	v := op
	for v < len(t) && v-op < 5 && strings.IndexByte("`'\" \t\r\n=", t[v]) >= 0 {
		v++
	}
	ve := v
	for ve < len(t) && ve-v < 151 && (isWordByte(t[ve]) || t[ve] == '.' || t[ve] == '=' || t[ve] == '-') {
		ve++
	}
	if ve-v < 10 || ve-v > 150 || !genericEnd(t, ve) {
		// The base64 form: [a-z0-9][a-z0-9+/]{11,}={0,3}.
		ve = v
		for ve < len(t) && (isAlnum(t[ve]) || ve > v && (t[ve] == '+' || t[ve] == '/')) {
			ve++
		}
		for e := 0; e < 3 && ve < len(t) && t[ve] == '='; e++ {
			ve++
		}
		if ve-v < 12 || !genericEnd(t, ve) {
			return
		}
	}
	secret := t[v:ve]
	if entropy(secret) <= r.entropy {
		return
	}
	ms := pos
	for ms > 0 && pos-ms < 50 && (isWordByte(t[ms-1]) || t[ms-1] == '.' || t[ms-1] == '-') {
		ms--
	}
	match := t[ms:ve]
	line := lineAround(t, ms, ve)
	if allowedBy(rs.global, secret, match, line) || allowedBy(r.allow, secret, match, line) || exampleValue(secret) {
		return
	}
	c.addAt(Finding{Rule: r.id, Description: r.desc, Masked: Mask(secret), Length: len(secret), Generic: true}, where, secret)
}

// genericOperators are the rule's operators, longest first.
var genericOperators = []string{":::=", "::=", ":=", "=>", "?=", "||", "=", ">", ":", ","}

func isWordByte(c byte) bool { return isAlnum(c) || c == '_' }

// genericEnd reports whether a generic value may end at i: a quote, a
// space, ;, an escaped line break, or the end of the text.
func genericEnd(t string, i int) bool {
	if i >= len(t) {
		return true
	}
	switch t[i] {
	case '`', '\'', '"', ' ', '\t', '\r', '\n', '\f', '\v', ';':
		return true
	case '\\':
		return i+1 < len(t) && (t[i+1] == 'n' || t[i+1] == 'r')
	}
	return false
}

func allowedBy(as []*allowlist, secret, match, line string) bool {
	for _, a := range as {
		if a.allowed(secret, match, line) {
			return true
		}
	}
	return false
}

// exampleValue reports values that documentation uses as examples: AWS's
// published example keys and obvious placeholders.
func exampleValue(s string) bool {
	for _, e := range documented {
		if strings.Contains(s, e) {
			return true
		}
	}
	u := strings.ToUpper(s)
	return strings.Contains(u, "EXAMPLE") || strings.Contains(u, "XXXXXXXX") || strings.Contains(u, "PLACEHOLDER") ||
		strings.Contains(u, "REDACTED") || strings.Contains(u, "YOUR_") || strings.Contains(u, "<YOUR")
}

// documented are credentials published in vendors' documentation as
// examples (any value containing one is an example).
var documented = []string{
	"sk_test_4eC39HqLyjWDarjtT1zdp7dc", "pk_test_TYooMQauvdEDq54NiTphI7jx", // Stripe
	"SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", // jwt.io's HS256 example
	"xoxb-not-a-real-token", "ghp_xxxxxxxxxxxx",
}

// lineAround is the line holding w[s:e], at most 512 bytes either side.
func lineAround(w string, s, e int) string {
	lo := max(0, s-512)
	ls := lo + strings.LastIndexByte(w[lo:s], '\n') + 1
	hi := min(len(w), e+512)
	le := strings.IndexByte(w[e:hi], '\n')
	if le < 0 {
		return w[ls:hi]
	}
	return w[ls : e+le]
}

// connSchemes are URL schemes whose user:password@ part is a credential.
var connSchemes = map[string]bool{
	"postgres": true, "postgresql": true, "mysql": true, "mariadb": true, "mongodb": true, "mongodb+srv": true,
	"redis": true, "rediss": true, "amqp": true, "amqps": true, "mssql": true, "sqlserver": true, "oracle": true,
	"clickhouse": true, "cockroachdb": true, "couchdb": true, "neo4j": true, "nats": true, "kafka": true,
	"ldap": true, "ldaps": true, "smtp": true, "smtps": true, "imap": true, "imaps": true, "ftp": true, "ftps": true,
	"sftp": true, "ssh": true, "http": true, "https": true, "git": true, "svn": true, "jdbc:postgresql": true,
	"jdbc:mysql": true, "jdbc:sqlserver": true, "jdbc:oracle:thin": true, "snowflake": true, "elasticsearch": true,
}

// placeholderPasswords are passwords that documentation writes.
var placeholderPasswords = map[string]bool{
	"password": true, "pass": true, "passwd": true, "pwd": true, "secret": true, "changeme": true, "xxx": true,
	"xxxx": true, "xxxxx": true, "xxxxxx": true, "****": true, "***": true, "******": true, "user": true,
	"pw": true, "mypassword": true, "yourpassword": true, "your_password": true, "postgres": true, "root": true,
	"admin": true, "example": true, "token": true, "foo": true, "bar": true, "test": true, "dummy": true,
}

// scanConnStrings finds scheme://user:password@host with a real-looking
// password.
func scanConnStrings(t, where string, c *collector) {
	for off := 0; ; {
		i := strings.Index(t[off:], "://")
		if i < 0 {
			return
		}
		i += off
		off = i + 3
		// The authority: up to the first / ? # or space; only one with
		// user:password@ is looked at further.
		e := off
		for e < len(t) && e-off < 512 {
			ch := t[e]
			if ch == '/' || ch == '?' || ch == '#' || ch <= ' ' || ch == '"' || ch == '\'' || ch == '`' || ch == '>' {
				break
			}
			e++
		}
		auth := t[off:e]
		at := strings.LastIndexByte(auth, '@')
		if at < 0 {
			continue
		}
		userinfo := auth[:at]
		colon := strings.IndexByte(userinfo, ':')
		if colon < 0 {
			continue
		}
		// The scheme: letters, digits, + . - : before "://".
		s := i
		for s > 0 && i-s < 24 && (isAlnum(t[s-1]) || t[s-1] == '+' || t[s-1] == '.' || t[s-1] == '-' || t[s-1] == ':') {
			s--
		}
		scheme := strings.ToLower(t[s:i])
		if !connSchemes[scheme] {
			continue
		}
		pw := userinfo[colon+1:]
		if len(pw) < 4 || placeholderPasswords[strings.ToLower(pw)] || isPlaceholder(pw) || exampleValue(pw) {
			continue
		}
		c.addAt(Finding{Rule: "connection-string-password", Description: "a " + scheme + " URL that carries a password",
			Masked: Mask(pw), Length: len(pw)}, where, pw)
	}
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isPlaceholder reports template variables and angle-bracket stand-ins.
func isPlaceholder(s string) bool {
	switch {
	case strings.HasPrefix(s, "$"), strings.HasPrefix(s, "%"), strings.HasPrefix(s, "<"),
		strings.HasPrefix(s, "{"), strings.HasPrefix(s, "["), strings.Contains(s, "${"), strings.Contains(s, "{{"):
		return true
	}
	if strings.Trim(s, "*xX.") == "" {
		return true
	}
	return false
}

// scanKeyHeaders finds a private key block's header followed by key
// material, with or without its footer (a key cut in two is still a key).
func scanKeyHeaders(t, where string, c *collector) {
	for off := 0; ; {
		i := strings.Index(t[off:], "PRIVATE KEY")
		if i < 0 {
			return
		}
		i += off
		off = i + 11
		// "-----BEGIN [A-Z ]*PRIVATE KEY-----" or "---- BEGIN SSH2 …"
		b := strings.LastIndex(t[max(0, i-64):i], "BEGIN")
		if b < 0 {
			continue
		}
		e := strings.Index(t[off:min(len(t), off+16)], "-----")
		if e < 0 {
			continue
		}
		body := off + e + 5
		// Count base64 characters of key material, skipping line breaks
		// and escaped ones.
		n, j := 0, body
		for j < len(t) && j-body < 8192 {
			ch := t[j]
			switch {
			case isAlnum(ch) || ch == '+' || ch == '/' || ch == '=':
				n++
			case ch == '\n' || ch == '\r' || ch == ' ' || ch == '\t' || ch == '\\':
			case ch == ':' || ch == ',' || ch == '-':
				// Proc-Type: / DEK-Info headers of encrypted PEM keys
			default:
				j = len(t)
				continue
			}
			if ch == '-' && strings.HasPrefix(t[j:], "-----END") {
				break
			}
			j++
		}
		if n < 40 {
			continue
		}
		head := t[max(0, i-64)+b : off]
		material := strings.TrimSpace(t[body:min(j, len(t))])
		c.addAt(Finding{Rule: "private-key", Description: "a private key block (" + strings.TrimSpace(head) + ")",
			Masked: Mask(material), Length: n}, where, material)
	}
}
