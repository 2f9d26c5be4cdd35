// Package netguard is the network (SSRF) guard: it keeps agents' web
// fetches away from the machine they run on, the private network around it,
// and cloud metadata services.
//
// It works at two moments. Before an action runs, Guard judges the URL as
// written: a non-http(s) scheme, credentials in the URL, an unparseable URL,
// or a host that is a refused address in any spelling (decimal, hex, octal,
// short, IPv4-mapped IPv6, NAT64, 6to4, ...) or a local or metadata name is a
// hard block. When the fetch runs, the client from NewClient resolves host
// names itself, checks every address, and connects only to the address it
// checked, so DNS cannot point a harmless-looking name at a private address.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
)

// Guard checks net_fetch actions. It is safe for concurrent use.
type Guard struct {
	pol    *compiled
	polErr error
	self   *SelfAPI // Overseer's own daemon; nil knows the default port only
}

var _ guard.Guard = (*Guard)(nil)

// New returns a guard for pol. A policy that does not compile (see
// Policy.Validate) makes every Check of a net_fetch action fail, which the
// engine treats as "never auto".
func New(pol Policy) *Guard {
	c, err := pol.compile()
	return &Guard{pol: c, polErr: err}
}

// WithSelfAPI returns a copy of g that recognises the daemon described by
// self (see SelfAPI): fetches of it are refused even when the policy's
// allow_hosts opens loopback, and so are URL arguments of other kinds.
func (g *Guard) WithSelfAPI(self *SelfAPI) *Guard {
	c := *g
	c.self = self
	return &c
}

// Name returns "net".
func (g *Guard) Name() string { return "net" }

// Check judges the URL of a net_fetch action (argument "url" or "uri", or
// without one, each URL of its "prompt": see PromptURLs) and records it in
// a.Facts.URLs. A URL that is refused as written is a hard
// block; a fetch whose URL cannot be found needs a person (hard approve).
// Names that are not refused as written produce no finding: their addresses
// are checked when the client connects.
func (g *Guard) Check(_ context.Context, a *action.Action) ([]guard.Finding, error) {
	kind := a.Kind
	if kind == "" {
		kind = action.InferKind(a.Tool)
	}
	if kind != action.KindNetFetch {
		return g.selfAPIArgs(a, kind), nil
	}
	if g.polErr != nil {
		return nil, g.polErr
	}
	raws := []string{}
	if raw, ok := a.StringArg("url", "uri"); ok && raw != "" {
		raws = append(raws, raw)
	} else if p, ok := a.Args["prompt"].(string); ok && !hasArg(a, "url", "uri") {
		// A fetch tool that takes its URLs in its prompt (Gemini CLI's
		// web_fetch: "Summarize https://… and https://…") fetches each.
		var ok bool
		if raws, ok = PromptURLs(p); !ok {
			return []guard.Finding{{Check: "net.no-url", Level: action.Approve, Hard: true,
				Message: fmt.Sprintf("this fetch's prompt names more than %d URLs; a person must look at it", maxPromptURLs)}}, nil
		}
	}
	if len(raws) == 0 {
		return []guard.Finding{{
			Check:   "net.no-url",
			Level:   action.Approve,
			Hard:    true,
			Message: "this fetch has no url argument the net guard can check; a person must look at it",
		}}, nil
	}
	var fs []guard.Finding
	for _, raw := range raws {
		if !slices.Contains(a.Facts.URLs, raw) {
			a.Facts.URLs = append(a.Facts.URLs, raw)
		}
		if f, ok := g.urlFinding(raw); ok {
			fs = append(fs, f)
		}
	}
	return fs, nil
}

// hasArg reports whether a has any of the arguments names, of any type.
func hasArg(a *action.Action, names ...string) bool {
	for _, n := range names {
		if _, ok := a.Args[n]; ok {
			return true
		}
	}
	return false
}

// urlFinding judges one URL a fetch fetches: a finding when it is refused
// as written.
func (g *Guard) urlFinding(raw string) (guard.Finding, bool) {
	if f, ok := g.selfAPIFinding(raw); ok {
		return f, true
	}
	_, err := g.pol.checkRawURL(raw)
	if err == nil {
		return guard.Finding{}, false
	}
	check, advice := "net.url", "send a well-formed absolute http(s) URL"
	switch {
	case errors.Is(err, ErrRefused):
		check, advice = "net.ssrf", "agents may only fetch public addresses; an operator can allow an internal host in the policy (allow_hosts)"
	case errors.Is(err, ErrScheme):
		check, advice = "net.scheme", "only http and https URLs can be fetched"
	case errors.Is(err, ErrUserinfo):
		check, advice = "net.userinfo", "remove the user:password@ part; credentials do not belong in URLs"
	}
	return guard.Finding{
		Check:   check,
		Level:   action.Block,
		Hard:    true,
		Message: fmt.Sprintf("fetch refused: %v; %s", err, advice),
	}, true
}

// PromptURLs returns the URLs a fetch tool that takes them in its prompt
// may fetch: from every place where http:// or https:// begins (in any
// case, anywhere, even inside a word or another URL) to the next white
// space. Gemini CLI takes /https?:\/\/[^\s]+/ from its prompt; a text here
// ends only at white space that is white space both to JavaScript and to
// Go, and one begins wherever the agent's could, so every URL the agent
// fetches is the start of one read here (a longer one is refused as
// written, or names the same host). ok is false when the prompt holds more
// than maxPromptURLs.
func PromptURLs(p string) (urls []string, ok bool) {
	for start := 0; start < len(p); {
		// One run of text without white space: p[start:end].
		end := start
		for end < len(p) {
			r, size := utf8.DecodeRuneInString(p[end:])
			if bothSpace(r) {
				break
			}
			end += size
		}
		for i := start; i < end; i++ {
			// Not the scheme alone: the agent's needs a character after it.
			if n := schemeAt(p[:end], i); n > 0 && i+n < end {
				if len(urls) == maxPromptURLs {
					return nil, false
				}
				urls = append(urls, p[i:end])
			}
		}
		start = end
		for start < len(p) {
			r, size := utf8.DecodeRuneInString(p[start:])
			if !bothSpace(r) {
				break
			}
			start += size
		}
	}
	return urls, true
}

// maxPromptURLs bounds the URLs read from one prompt (Gemini CLI fetches
// at most 20); a prompt with more is put to a person.
const maxPromptURLs = 64

// schemeAt returns the length of "http://" or "https://" (in any case) at
// p[i:], or 0.
func schemeAt(p string, i int) int {
	for _, s := range []string{"https://", "http://"} {
		if len(p)-i >= len(s) && strings.EqualFold(p[i:i+len(s)], s) {
			return len(s)
		}
	}
	return 0
}

// bothSpace reports whether r is white space to Go (unicode.IsSpace) and
// to JavaScript's \s: all of Go's but U+0085.
func bothSpace(r rune) bool { return r != 0x85 && unicode.IsSpace(r) }
