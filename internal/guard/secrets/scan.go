package secrets

import (
	"strings"
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
type run struct{ start, end int }

// survey is what one pass over a text learns: its long token runs and
// whether any string-level decoder applies.
type survey struct {
	runs     []run
	percent  bool // %XX
	escape   bool // \u, \x, &#
	nonASCII bool
}

func surveyText(t string) survey {
	var sv survey
	start := -1
	for i := 0; i < len(t); i++ {
		c := t[i]
		if tokenChar[c] {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			if i-start >= minRun {
				sv.runs = append(sv.runs, run{start, i})
			}
			start = -1
		}
		switch {
		case c == '%':
			if i+2 < len(t) && isHex(t[i+1]) && isHex(t[i+2]) {
				sv.percent = true
			}
		case c == '\\' || c == '&':
			sv.escape = true
		case c >= 0x80:
			sv.nonASCII = true
		}
	}
	if start >= 0 && len(t)-start >= minRun {
		sv.runs = append(sv.runs, run{start, len(t)})
	}
	return sv
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// regions are the stretches of text around long runs where keyword rules
// are tried: a keyword may stand up to 256 bytes before its value.
func regions(t string, runs []run) []run {
	var out []run
	add := func(s, e int) {
		s, e = max(s, 0), min(e, len(t))
		if n := len(out); n > 0 && s <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, e)
			return
		}
		out = append(out, run{s, e})
	}
	for _, r := range runs {
		if r.end-r.start > hugeRun {
			add(r.start-256, r.start+1024)
			add(r.end-1024, r.end+64)
			continue
		}
		add(r.start-256, r.end+64)
	}
	return out
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
	if a.known != nil {
		a.known.scan(t, where, c)
	}
}

// scanRules tries gitleaks' rules whose keywords occur near long runs.
func (a *Analyzer) scanRules(rs *ruleSet, t string, sv *survey, where string, c *collector) {
	done := make([]int, len(rs.rules)) // per rule: the end of the last window tried
	for _, reg := range regions(t, sv.runs) {
		rs.kw.each(t, reg.start, reg.end, func(pos int, e *kwEntry) {
			for _, idx := range e.rules {
				if done[idx] > pos {
					continue
				}
				done[idx] = a.tryRule(rs, idx, t, pos, where, c)
			}
		})
		for _, idx := range rs.always {
			if done[idx] <= reg.start {
				done[idx] = a.tryRuleWindow(rs, idx, t, reg.start, reg.end, where, c)
			}
		}
	}
}

// tryRule runs rule idx on the window around a keyword at pos and returns
// the window's end.
func (a *Analyzer) tryRule(rs *ruleSet, idx int, t string, pos int, where string, c *collector) int {
	r := rs.rules[idx]
	var ws, we int
	if r.multiline {
		ws, we = max(pos-16, 0), min(pos+16384, len(t))
	} else {
		ws = max(pos-256, 0)
		if nl := strings.LastIndexByte(t[ws:pos], '\n'); nl >= 0 {
			ws += nl + 1
		}
		we = min(pos+1024, len(t))
		if nl := strings.IndexByte(t[pos:we], '\n'); nl >= 0 {
			we = pos + nl
		}
	}
	return a.tryRuleWindow(rs, idx, t, ws, we, where, c)
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
		c.add(Finding{Rule: r.id, Description: r.desc, Masked: Mask(secret), Length: len(secret), Generic: r.generic}, where)
	}
	return we
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
	u := strings.ToUpper(s)
	return strings.Contains(u, "EXAMPLE") || strings.Contains(u, "XXXXXXXX") || strings.Contains(u, "PLACEHOLDER") ||
		strings.Contains(u, "REDACTED") || strings.Contains(u, "YOUR_") || strings.Contains(u, "<YOUR")
}

func lineAround(w string, s, e int) string {
	ls := strings.LastIndexByte(w[:s], '\n') + 1
	le := strings.IndexByte(w[e:], '\n')
	if le < 0 {
		return w[ls:]
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
		// The scheme: letters, digits, + . - : before "://".
		s := i
		for s > 0 && (isAlnum(t[s-1]) || t[s-1] == '+' || t[s-1] == '.' || t[s-1] == '-' || t[s-1] == ':') {
			s--
		}
		scheme := strings.ToLower(t[s:i])
		if !connSchemes[scheme] {
			continue
		}
		// The authority: up to the first / ? # or space.
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
		pw := userinfo[colon+1:]
		if len(pw) < 4 || placeholderPasswords[strings.ToLower(pw)] || isPlaceholder(pw) || exampleValue(pw) {
			continue
		}
		c.add(Finding{Rule: "connection-string-password", Description: "a " + scheme + " URL that carries a password",
			Masked: Mask(pw), Length: len(pw)}, where)
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
		c.add(Finding{Rule: "private-key", Description: "a private key block (" + strings.TrimSpace(head) + ")",
			Masked: Mask(t[body:min(len(t), body+n)]), Length: n}, where)
	}
}
