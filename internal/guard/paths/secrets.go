package paths

import (
	_ "embed"
	"errors"
	"fmt"
	"path"
	"strings"
)

//go:embed secrets.txt
var builtinSecrets string

// BuiltinSecrets returns the built-in secret patterns (see ParseSecrets for
// their form).
func BuiltinSecrets() []string {
	pats, err := ParseSecrets(builtinSecrets)
	if err != nil {
		// The embedded list is checked by the tests; a broken build is a
		// programming error.
		panic(err)
	}
	return pats
}

// ErrBadPattern means a secret pattern cannot be used.
var ErrBadPattern = errors.New("bad secret pattern")

// ParseSecrets reads a pattern list: one pattern a line, blank lines and
// lines starting with "#" ignored, surrounding blanks trimmed. Each pattern
// is checked as ValidatePattern does.
func ParseSecrets(text string) ([]string, error) {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := ValidatePattern(line); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		out = append(out, line)
	}
	return out, nil
}

// ValidatePattern checks one secret pattern:
//
//	~/…  or /…   a path (each component a path.Match glob); the path and
//	             everything under it matches
//	name         a glob on the last component of a path, anywhere
//	!pattern     an exception to the patterns before it
func ValidatePattern(p string) error {
	body := strings.TrimPrefix(p, "!")
	switch {
	case body == "":
		return fmt.Errorf("%w: %q is empty", ErrBadPattern, p)
	case strings.HasPrefix(body, "!"):
		return fmt.Errorf("%w: %q negates twice", ErrBadPattern, p)
	case strings.ContainsRune(body, 0):
		return fmt.Errorf("%w: %q contains a NUL byte", ErrBadPattern, p)
	case body == "~" || body == "/" || body == "~/" || body == "*":
		return fmt.Errorf("%w: %q would match every path", ErrBadPattern, p)
	case !strings.HasPrefix(body, "/") && !strings.HasPrefix(body, "~/") && strings.Contains(body, "/"):
		return fmt.Errorf("%w: %q must be a path starting with / or ~/, or a file name without /", ErrBadPattern, p)
	}
	if _, err := path.Match(strings.ToLower(body), ""); err != nil {
		return fmt.Errorf("%w: %q: %v", ErrBadPattern, p, err)
	}
	return nil
}

// secretMatcher is a compiled, immutable pattern list.
type secretMatcher struct {
	rules []secretRule
}

type secretRule struct {
	negate  bool
	isPath  bool
	pattern string // lower case; home expanded for path patterns
	source  string // as written
	// shape lets most patterns skip path.Match: exact, prefix ("id_rsa*")
	// or suffix ("*.pem") comparisons; glob is the general case.
	shape shape
	fix   string // the literal part for exact, prefix and suffix shapes
}

type shape uint8

const (
	shapeGlob shape = iota
	shapeExact
	shapePrefix
	shapeSuffix
)

const globMeta = `*?[\`

// shapeOf classifies a lower-case pattern.
func shapeOf(p string) (shape, string) {
	switch {
	case !strings.ContainsAny(p, globMeta):
		return shapeExact, p
	case strings.HasSuffix(p, "*") && !strings.ContainsAny(p[:len(p)-1], globMeta):
		return shapePrefix, p[:len(p)-1]
	case strings.HasPrefix(p, "*") && !strings.ContainsAny(p[1:], globMeta+"/"):
		return shapeSuffix, p[1:]
	}
	return shapeGlob, ""
}

// compileSecrets compiles patterns, expanding "~/" to home. Path patterns
// starting with "~/" are skipped when home is unknown (they cannot match an
// absolute path then); callers fail closed on such paths anyway.
func compileSecrets(home string, patterns []string) (*secretMatcher, error) {
	m := &secretMatcher{}
	for _, p := range patterns {
		if err := ValidatePattern(p); err != nil {
			return nil, err
		}
		r := secretRule{source: p}
		body := p
		if strings.HasPrefix(body, "!") {
			r.negate = true
			body = body[1:]
		}
		switch {
		case strings.HasPrefix(body, "~/"):
			if home == "" {
				continue
			}
			r.isPath = true
			body = strings.TrimSuffix(home, "/") + body[1:]
		case strings.HasPrefix(body, "/"):
			r.isPath = true
		}
		r.pattern = strings.ToLower(path.Clean(body))
		if !r.isPath {
			r.pattern = strings.ToLower(body)
		}
		r.shape, r.fix = shapeOf(r.pattern)
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// match reports whether the clean absolute path p is a secret, and the
// pattern that decided it.
func (m *secretMatcher) match(p string) (string, bool) {
	lp := strings.ToLower(p)
	base := path.Base(lp)
	secret, by := false, ""
	for _, r := range m.rules {
		var hit bool
		switch {
		case r.isPath && r.shape == shapeExact:
			// lp is r.fix or under it (without building r.fix+"/").
			hit = strings.HasPrefix(lp, r.fix) && (len(lp) == len(r.fix) || lp[len(r.fix)] == '/')
		case r.isPath:
			hit = matchPathOrAncestor(r.pattern, lp)
		case r.shape == shapeExact:
			hit = base == r.fix
		case r.shape == shapePrefix:
			hit = strings.HasPrefix(base, r.fix)
		case r.shape == shapeSuffix:
			hit = strings.HasSuffix(base, r.fix)
		default:
			hit, _ = path.Match(r.pattern, base)
		}
		if !hit {
			continue
		}
		if r.negate {
			secret, by = false, ""
		} else if !secret {
			secret, by = true, r.source
		}
	}
	return by, secret
}

// matchPathOrAncestor reports whether pattern matches p or one of its
// ancestors (so "~/.ssh" covers "~/.ssh/id_rsa").
func matchPathOrAncestor(pattern, p string) bool {
	n := strings.Count(pattern, "/")
	// Only the ancestor with as many components as the pattern can match.
	idx, count := 0, 0
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			count++
			if count == n+1 {
				idx = i
				break
			}
		}
	}
	cand := p
	if idx > 0 {
		cand = p[:idx]
	}
	ok, _ := path.Match(pattern, cand)
	return ok
}
