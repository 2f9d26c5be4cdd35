package firewall

import (
	"context"
	"fmt"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/grant"
)

// GrantPrefix starts the name of the reason of a call inside a grant; the
// grant's id follows. GrantEdgePrefix starts that of a call at a grant's
// edge.
const (
	GrantPrefix     = "grant:"
	GrantEdgePrefix = "grant-edge:"
)

// delegation is L3's delegated mode. A call inside an active grant of its
// caller runs without a person: the grant takes the place of the user
// layer, the guards' soft classification and the per-kind default. It
// does not reach what stands above them: an admin rule still decides (the
// admin floor), an adaptive escalation of the user layer stays, a locked
// policy lets the grant only tighten, and the hard floors and the raises
// of L1, L2, L4 and L5 still apply. A call of a caller that holds a grant
// but that lies outside every active one (a tool not in the list, a path
// elsewhere, a budget spent, the expiry passed, a revocation) is put to a
// person: at least confirm.
func (ev *evaluation) delegation(ctx context.Context) {
	if ev.e.grants == nil {
		return
	}
	states, err := ev.e.grants.GrantsFor(ctx, ev.a)
	if why, ok := ctx.Value(noGrantsKey{}).(error); ok {
		states, err = nil, why
	}
	if err != nil {
		// A grant that cannot be read is no grant: the policy alone judges.
		ev.add(action.Reason{Layer: "L3", Source: action.SourceGrant, Name: "grant-unreadable", Level: action.Unset,
			Message: fmt.Sprintf("the grants could not be read, so none applies: %v", err)})
		return
	}
	if len(states) == 0 {
		return
	}
	o := grant.Judge(states, ev.a, ev.e.clock.Now(), ev.a.Kind == action.KindShell && ev.soft == action.Auto)
	switch {
	case o.Inside != nil:
		g := o.Inside
		level := action.Auto
		switch {
		case ev.admin != nil:
			level = ev.admin.Level
		case ev.user != nil && strings.HasPrefix(ev.user.Name, AdaptivePrefix):
			level = ev.user.Level
		case ev.snap.admin.Locked:
			level = ev.base
		}
		ev.base = level
		ev.add(action.Reason{Layer: "L3", Source: action.SourceGrant, Name: GrantPrefix + g.ID, Level: level,
			Message: fmt.Sprintf("inside grant %s (issued by %s for %s)", g.ID, g.IssuedBy, g.Subject)})
	case o.Edge != "":
		ev.base = action.Max(ev.base, action.Confirm)
		ev.add(action.Reason{Layer: "L3", Source: action.SourceGrant, Name: GrantEdgePrefix + o.EdgeGrant, Level: action.Confirm,
			Message: o.Edge + ": delegated mode ends here, a person decides"})
	}
}

type noGrantsKey struct{}

// WithoutGrants returns a context under which the engine judges as if no
// grant applied, because of why (a grant whose use could not be counted).
func WithoutGrants(ctx context.Context, why error) context.Context {
	return context.WithValue(ctx, noGrantsKey{}, why)
}

// InsideGrant returns the id of the grant v's call ran inside of, or "".
func InsideGrant(v *action.Verdict) string {
	for _, r := range v.Reasons {
		if r.Source == action.SourceGrant {
			if id, ok := strings.CutPrefix(r.Name, GrantPrefix); ok && id != "" {
				return id
			}
		}
	}
	return ""
}
