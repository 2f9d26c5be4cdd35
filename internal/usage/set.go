package usage

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
)

// Set is the compiled, immutable set of rate limits and budget caps that a
// check reads.
type Set struct {
	Limits []RateLimit
	Caps   []BudgetCap
	Prices Prices
	risk   []action.Level // per limit: the least level it counts (unset: any)
	glob   []bool         // per limit: Tool is a glob
}

// Compile validates limits and caps and builds a Set; an invalid
// definition is an error naming it.
func Compile(limits []RateLimit, caps []BudgetCap, prices Prices) (*Set, error) {
	s := &Set{Limits: slices.Clone(limits), Caps: slices.Clone(caps), Prices: prices}
	for i := range s.Limits {
		l := &s.Limits[i]
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("rate limit %s: %w", l.ID, err)
		}
		var lv action.Level
		if l.Risk != "" {
			lv, _ = action.ParseLevel(l.Risk)
		}
		s.risk = append(s.risk, lv)
		s.glob = append(s.glob, strings.ContainsAny(l.Tool, "*?["))
	}
	for i := range s.Caps {
		if err := s.Caps[i].Validate(); err != nil {
			return nil, fmt.Errorf("budget cap %s: %w", s.Caps[i].ID, err)
		}
	}
	if err := prices.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// matches reports whether limit i counts call c (ignoring new_host, which
// needs the counter's memory of hosts).
func (s *Set) matches(i int, c *Call) bool {
	l := &s.Limits[i]
	if !l.Enabled || l.Agent != "" && l.Agent != c.Agent {
		return false
	}
	if l.Tool != "" {
		if s.glob[i] {
			if ok, _ := path.Match(l.Tool, c.Tool); !ok {
				return false
			}
		} else if l.Tool != c.Tool {
			return false
		}
	}
	if s.risk[i] != action.Unset && c.Level < s.risk[i] {
		return false
	}
	switch l.Effect {
	case EffectWrite:
		return c.Write || c.Delete
	case EffectDelete:
		return c.Delete
	case EffectExec:
		return c.Exec
	case EffectSend, EffectNewHost:
		return len(c.Hosts) > 0
	}
	return true
}
