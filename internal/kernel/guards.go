package kernel

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/perception"

	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/conflict"
	"github.com/overseer-dev/overseer/internal/guard/egress"
	"github.com/overseer-dev/overseer/internal/guard/mcpguard"
	"github.com/overseer-dev/overseer/internal/guard/netguard"
	"github.com/overseer-dev/overseer/internal/guard/paths"
	"github.com/overseer-dev/overseer/internal/guard/shell"
	"github.com/overseer-dev/overseer/internal/guard/sqlguard"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// GuardEnv is what the guards need besides the policy.
type GuardEnv struct {
	Home       string           // Overseer's home: off limits to agents
	PolicyFile string           // the admin policy file, if any: off limits too
	Store      store.StateStore // for the read tracker (read-before-edit)
	Clock      clock.Clock      // nil: the real clock
}

// createdTracker reads the paths a session created, as the kernel records
// them (perception.Bus.RecordCreated), for the paths guard.
type createdTracker struct{ bus *perception.Bus }

func (c createdTracker) CreatedBy(ctx context.Context, a *action.Action, ps []string) ([]bool, error) {
	return c.bus.Created(ctx, firewall.SessionKey(a), ps)
}

// knownGuards are the sections a policy's `guards:` may configure.
var knownGuards = map[string]bool{"shell": true, "paths": true, "net": true, "sql": true, "mcp": true, "results": true, egress.Name: true,
	conflict.Name: true}

// DefaultGuards builds the standard hard guards — shell, paths, network,
// SQL, MCP tool annotations, egress, and with a shared database the store
// guard (storeguard.go) — configured from the policy's guards
// section, in the order the engine runs them (the shell guard first: it
// derives the path facts the paths guard then resolves; egress last: it
// reads the commands and resolved paths the others derived).
func DefaultGuards(p *policy.Policy, env GuardEnv) ([]guard.Guard, error) {
	for _, name := range p.GuardNames() {
		if !knownGuards[name] {
			known := make([]string, 0, len(knownGuards))
			for k := range knownGuards {
				known = append(known, k)
			}
			sort.Strings(known)
			return nil, fmt.Errorf("%s: unknown guard %q in guards (known: %v)", p.Name, name, known)
		}
	}
	var shellCfg shell.Config
	if _, err := p.DecodeGuard("shell", &shellCfg); err != nil {
		return nil, err
	}
	sh, err := shell.New(shellCfg)
	if err != nil {
		return nil, fmt.Errorf("%s: guards.shell: %w", p.Name, err)
	}
	var reads paths.ReadTracker
	var created []paths.CreatedTracker
	if env.Store != nil {
		reads = paths.NewStoreTracker(env.Store, nil)
		created = append(created, createdTracker{perception.New(env.Store, clock.Real{})})
	}
	pg, err := PathsGuard(env.Home, env.PolicyFile, p, reads, created...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	var netPol netguard.Policy
	if _, err := p.DecodeGuard("net", &netPol); err != nil {
		return nil, err
	}
	if err := netPol.Validate(); err != nil {
		return nil, fmt.Errorf("%s: guards.net: %w", p.Name, err)
	}
	var sqlPol sqlguard.Policy
	if _, err := p.DecodeGuard("sql", &sqlPol); err != nil {
		return nil, err
	}
	if err := sqlPol.Validate(); err != nil {
		return nil, fmt.Errorf("%s: guards.sql: %w", p.Name, err)
	}
	mg, err := mcpguard.FromPolicy(p)
	if err != nil {
		return nil, err
	}
	// Both the shell and the net guard refuse requests to Overseer's own
	// daemon (no self-approval); they read its address file in Home.
	self := netguard.NewSelfAPI(env.Home)
	// $OVERSEER_HOME in a command is taken to be this kernel's home: the
	// strictest reading (an agent's shell may not have it set at all).
	vars := map[string]string{}
	if env.Home != "" {
		vars["OVERSEER_HOME"] = env.Home
	}
	eg, err := EgressGuard(p, env, pg)
	if err != nil {
		return nil, err
	}
	var conflicts conflict.Policy
	if _, err := p.DecodeGuard(conflict.Name, &conflicts); err != nil {
		return nil, err
	}
	if err := conflicts.Validate(); err != nil {
		return nil, fmt.Errorf("%s: guards.%s: %w", p.Name, conflict.Name, err)
	}
	var cg *conflict.Guard
	if env.Store != nil {
		cg = conflict.New(conflicts, env.Store, env.Clock)
	} else {
		cg = conflict.New(conflicts, nil, env.Clock)
	}
	gs := []guard.Guard{sh.WithSelfAPI(self).WithVars(vars), pg, netguard.New(netPol).WithSelfAPI(self), sqlguard.New(sqlPol), mg, eg, cg}
	if sg := StoreGuard(p); sg != nil {
		// After the shell guard, whose commands it reads.
		gs = append(gs[:1], append([]guard.Guard{sg}, gs[1:]...)...)
	}
	return gs, nil
}

// EgressMemoryAge is how long the egress guard remembers an idle
// session's secret reads and destinations.
const EgressMemoryAge = 7 * 24 * time.Hour

// PruneEgressMemory forgets the egress memory of sessions idle for longer
// than EgressMemoryAge and returns how many it forgot.
func (k *Kernel) PruneEgressMemory(ctx context.Context) (int, error) {
	return egress.Prune(ctx, k.raw, k.Clock.Now().Add(-EgressMemoryAge))
}

// EgressGuard builds the egress guard from the policy's guards.egress
// section; pg says which paths are secrets (for the session memory).
func EgressGuard(p *policy.Policy, env GuardEnv, pg *paths.Guard) (*egress.Guard, error) {
	var pol egress.Policy
	if _, err := p.DecodeGuard(egress.Name, &pol); err != nil {
		return nil, err
	}
	if err := pol.Validate(); err != nil {
		return nil, fmt.Errorf("%s: guards.egress: %w", p.Name, err)
	}
	e := egress.Env{Home: env.Home, SecretPath: pg.Secret}
	if env.Store != nil {
		e.Store = env.Store
	}
	return egress.New(pol, e), nil
}
