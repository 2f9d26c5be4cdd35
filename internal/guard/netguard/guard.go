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

// Check judges the URL of a net_fetch action (argument "url" or "uri") and
// records it in a.Facts.URLs. A URL that is refused as written is a hard
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
	raw, ok := a.StringArg("url", "uri")
	if !ok || raw == "" {
		return []guard.Finding{{
			Check:   "net.no-url",
			Level:   action.Approve,
			Hard:    true,
			Message: "this fetch has no url argument the net guard can check; a person must look at it",
		}}, nil
	}
	if !slices.Contains(a.Facts.URLs, raw) {
		a.Facts.URLs = append(a.Facts.URLs, raw)
	}
	if f, ok := g.selfAPIFinding(raw); ok {
		return []guard.Finding{f}, nil
	}
	_, err := g.pol.checkRawURL(raw)
	if err == nil {
		return nil, nil
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
	return []guard.Finding{{
		Check:   check,
		Level:   action.Block,
		Hard:    true,
		Message: fmt.Sprintf("fetch refused: %v; %s", err, advice),
	}}, nil
}
