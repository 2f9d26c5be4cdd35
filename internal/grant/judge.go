package grant

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

// State is a grant with its use, and its ancestors (nearest first) with
// theirs: a child is active only while every ancestor is.
type State struct {
	Grant     *Grant
	Usage     Usage
	Ancestors []State
}

// Outcome is the judgement of one action against its subject's grants.
type Outcome struct {
	// Inside is the grant the action is inside of (nil: none).
	Inside *Grant
	// Chain is Inside and its ancestors, nearest first: each is charged.
	Chain []string
	// Edge is set when the action's subject holds a grant but the action
	// is outside every active one: why, for the person asked.
	Edge string
	// EdgeGrant is the grant whose edge was reached.
	EdgeGrant string
}

// Under reports whether the subject of the action holds (or held, within
// Remembered) any of the grants.
func (o Outcome) Under() bool { return o.Inside != nil || o.Edge != "" }

// Judge decides whether a is inside one of states (the grants whose
// subject matches a; see Subject.Matches) at now. Grants are tried in the
// order given; the first that covers a wins.
// effectFree says the guards classified the call as without effect (a
// read-only shell command): only then is a shell call inside a read-only
// permit.
func Judge(states []State, a *action.Action, now time.Time, effectFree bool) Outcome {
	var out Outcome
	for i := range states {
		st := &states[i]
		if !st.Grant.Subject.Matches(a) || forgotten(st.Grant, now) {
			continue
		}
		why := st.inactive(now)
		if why == "" {
			why = st.Grant.covers(a, effectFree)
		}
		if why == "" {
			out.Inside = st.Grant
			out.Chain = append([]string{st.Grant.ID}, ancestorIDs(st)...)
			out.Edge, out.EdgeGrant = "", ""
			return out
		}
		if out.Edge == "" {
			out.Edge, out.EdgeGrant = why, st.Grant.ID
		}
	}
	return out
}

func ancestorIDs(st *State) []string {
	ids := make([]string, 0, len(st.Ancestors))
	for _, an := range st.Ancestors {
		ids = append(ids, an.Grant.ID)
	}
	return ids
}

// forgotten reports whether g ended more than Remembered ago.
func forgotten(g *Grant, now time.Time) bool {
	end := g.Expires
	if g.Revoked != nil && g.Revoked.At.Before(end) {
		end = g.Revoked.At
	}
	return now.Sub(end) > Remembered
}

// inactive says why the grant (or an ancestor) cannot be used at now, or "".
func (st *State) inactive(now time.Time) string {
	if why := active(st.Grant, st.Usage, now); why != "" {
		return why
	}
	for _, an := range st.Ancestors {
		if why := active(an.Grant, an.Usage, now); why != "" {
			return "its parent " + why
		}
	}
	return ""
}

// active says why g with usage u is not active at now, or "".
func active(g *Grant, u Usage, now time.Time) string {
	id := "grant " + g.ID
	switch {
	case g.Revoked != nil:
		return fmt.Sprintf("%s was revoked by %s at %s", id, g.Revoked.By, g.Revoked.At.UTC().Format(time.RFC3339))
	case !now.Before(g.Expires):
		return fmt.Sprintf("%s expired at %s", id, g.Expires.UTC().Format(time.RFC3339))
	case g.Budget.Steps > 0 && u.Steps >= g.Budget.Steps:
		return fmt.Sprintf("%s has used its budget of %d steps", id, g.Budget.Steps)
	case g.Budget.Tokens > 0 && u.Tokens >= g.Budget.Tokens:
		return fmt.Sprintf("%s has used its budget of %d tokens", id, g.Budget.Tokens)
	case g.Budget.CostUSD > 0 && u.CostUSD >= g.Budget.CostUSD:
		return fmt.Sprintf("%s has used its budget of $%.4f", id, g.Budget.CostUSD)
	case g.Budget.WallTime > 0 && !u.First.IsZero() && now.Sub(u.First) >= time.Duration(g.Budget.WallTime):
		return fmt.Sprintf("%s has used its wall time of %s", id, time.Duration(g.Budget.WallTime))
	}
	return ""
}

// Active says why g with usage u is not active at now, or "" when it is.
func Active(g *Grant, u Usage, now time.Time) string { return active(g, u, now) }

// covers says why a is outside every permit of g, or "" when it is inside one.
func (g *Grant) covers(a *action.Action, effectFree bool) string {
	var first string
	for i, p := range g.Allow {
		why := p.admits(a, effectFree)
		if why == "" {
			return ""
		}
		if first == "" {
			first = why
			if len(g.Allow) > 1 {
				first = fmt.Sprintf("permit %d: %s", i+1, why)
			}
		}
	}
	return fmt.Sprintf("%s outside grant %s (%s)", callName(a), g.ID, first)
}

func callName(a *action.Action) string { return fmt.Sprintf("%s (%s) is", a.Tool, a.Kind) }

// admits says why a is outside p, or "".
func (p Permit) admits(a *action.Action, effectFree bool) string {
	if len(p.Tools) > 0 && !slices.ContainsFunc(p.Tools, func(q string) bool { return toolMatch(q, a.Tool) }) {
		return fmt.Sprintf("tool %s is not in the list", a.Tool)
	}
	if len(p.Kinds) > 0 && !slices.Contains(p.Kinds, a.Kind) {
		return fmt.Sprintf("kind %s is not in the list", a.Kind)
	}
	for _, f := range a.Facts.Paths {
		if p.ReadOnly && f.Intent != action.PathRead {
			return fmt.Sprintf("it would %s %s and the grant is read-only", intentVerb(f.Intent), f.Path)
		}
		if len(p.Under) > 0 && !slices.ContainsFunc(p.Under, func(d string) bool { return action.Within(d, f.Path) }) {
			return fmt.Sprintf("%s is not under %s", f.Path, strings.Join(p.Under, ", "))
		}
	}
	if p.ReadOnly {
		if a.Kind == action.KindFileWrite || a.Kind == action.KindFileEdit || a.Kind == action.KindFileDelete {
			return fmt.Sprintf("a %s is not a read and the grant is read-only", a.Kind)
		}
		if a.Kind == action.KindSQL && a.Facts.SQLClass != "read" {
			return "an SQL statement that is not a read and the grant is read-only"
		}
		if a.Kind == action.KindShell && !effectFree {
			return "the guards do not know this command to be read-only and the grant is read-only"
		}
	}
	for _, u := range a.Facts.URLs {
		h := hostOf(u)
		if h == "" || !slices.Contains(p.Hosts, h) {
			return fmt.Sprintf("it reaches %s, a host the grant does not list", u)
		}
	}
	return ""
}

func intentVerb(i action.PathIntent) string {
	switch i {
	case action.PathWrite:
		return "write"
	case action.PathDelete:
		return "delete"
	}
	return "hand to a program of unknown effect"
}

func toolMatch(q, name string) bool {
	if q == "*" || q == name {
		return true
	}
	ok, err := path.Match(q, name)
	return err == nil && ok
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Hostname())
}
