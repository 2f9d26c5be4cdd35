package kernel

import (
	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/policy"
)

// DefaultGuards builds the standard hard guards, configured from the
// policy's guards section.
func DefaultGuards(p *policy.Policy) ([]guard.Guard, error) {
	return nil, nil
}

// PrepareExample derives an example action's facts the way the engine
// does, so policy examples are judged on the same facts as live actions.
func PrepareExample(a *action.Action) error {
	firewall.Prepare(a, a.Time)
	return nil
}
