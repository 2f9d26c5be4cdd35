// Package conflict is the conflict guard (Milestone 3): two tasks or agent
// sessions that touch the same resource within a window raise a conflict.
// The resources are files written or deleted (a deletion covers the
// subtree below it), and remotes sent to (a web request that is not a GET
// or HEAD, `git push`). The second session's action is at least confirm (a
// hard floor: no rule lowers it), and its preview names the other session
// and what it did.
//
// What each session touched lives in the store (Namespace), written by
// Observe when the kernel records an action that runs or a person's
// approval of one, so it holds across hook processes.
package conflict

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/store"
)

// Name is the guard's name and its section in a policy's guards.
const Name = "conflicts"

// Namespace is the state namespace of what sessions touched.
const Namespace = "touches"

// Policy is the guards.conflicts section of a policy.
type Policy struct {
	// Window is how long a touch counts ("10m", the default).
	Window string `yaml:"window,omitempty" json:"window,omitempty"`
	// Level is the level of a conflicting action: confirm (the default),
	// approve or block.
	Level action.Level `yaml:"level,omitempty" json:"level,omitempty"`
	// Off turns conflict detection off.
	Off bool `yaml:"off,omitempty" json:"off,omitempty"`
}

// DefaultWindow is the window when the policy sets none.
const DefaultWindow = 10 * time.Minute

// ownAgent is the agent name of Overseer's own loop.
const ownAgent = "overseer"

// maxTouches bounds what is kept per resource (the latest per session).
const maxTouches = 16

// Validate reports what cannot be used.
func (p Policy) Validate() error {
	_, _, err := p.compile()
	return err
}

func (p Policy) compile() (time.Duration, action.Level, error) {
	w := DefaultWindow
	if p.Window != "" {
		d, err := time.ParseDuration(p.Window)
		if err != nil || d <= 0 {
			return 0, 0, fmt.Errorf("window %q is not a positive duration", p.Window)
		}
		w = d
	}
	l := p.Level
	if l == action.Unset {
		l = action.Confirm
	}
	if l < action.Confirm {
		return 0, 0, fmt.Errorf("level %s would let a conflict run without a person (confirm, approve or block)", l)
	}
	return w, l, nil
}

// Touch is one session's touch of a resource.
type Touch struct {
	Resource string `json:"resource"`
	// Session is the agent and its session, as the firewall keys sessions.
	Agent    string    `json:"agent"`
	Session  string    `json:"session"`
	Subagent string    `json:"subagent,omitempty"`
	Tool     string    `json:"tool"`
	What     string    `json:"what"` // write, delete, send
	ActionID string    `json:"action_id,omitempty"`
	At       time.Time `json:"at"`
}

func (t Touch) key() string { return t.Agent + "\x00" + t.Session }

// Guard is the conflict guard.
type Guard struct {
	st     store.StateStore
	clock  clock.Clock
	window time.Duration
	level  action.Level
	off    bool
}

var (
	_ guard.Guard    = (*Guard)(nil)
	_ guard.Observer = (*Guard)(nil)
)

// New builds the guard over st (nil: the guard sees nothing). A nil clock
// means the real one. p must be valid.
func New(p Policy, st store.StateStore, clk clock.Clock) *Guard {
	w, l, err := p.compile()
	if err != nil {
		w, l = DefaultWindow, action.Confirm
	}
	if clk == nil {
		clk = clock.Real{}
	}
	return &Guard{st: st, clock: clk, window: w, level: l, off: p.Off}
}

// Name implements guard.Guard.
func (g *Guard) Name() string { return Name }

// touched is a resource an action touches and how.
type touched struct {
	resource, what string
	subtree        bool // a deletion: everything below it too
}

// resources are what a touches.
func resources(a *action.Action) []touched {
	var out []touched
	for _, p := range a.Facts.Paths {
		switch p.Intent {
		case action.PathWrite, action.PathUnknown:
			out = append(out, touched{resource: p.Path, what: "write"})
		case action.PathDelete:
			out = append(out, touched{resource: p.Path, what: "delete", subtree: true})
		}
	}
	if a.Kind == action.KindNetFetch {
		m, _ := a.StringArg("method")
		if m = strings.ToUpper(strings.TrimSpace(m)); m != "" && m != "GET" && m != "HEAD" {
			raw, _ := a.StringArg("url", "uri")
			if h := hostOf(raw); h != "" {
				out = append(out, touched{resource: "remote " + h, what: "send"})
			}
		}
	}
	for _, c := range a.Facts.Commands {
		if c.Name == "git" && len(c.Args) > 0 && c.Args[0] == "push" {
			remote := "origin"
			for _, arg := range c.Args[1:] {
				if !strings.HasPrefix(arg, "-") {
					remote = arg
					break
				}
			}
			out = append(out, touched{resource: "git push " + a.Cwd + " " + remote, what: "send"})
		}
	}
	return out
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// Check implements guard.Guard: a finding per resource another session
// touched within the window.
func (g *Guard) Check(ctx context.Context, a *action.Action) ([]guard.Finding, error) {
	if g.off || g.st == nil || a.Session == "" {
		return nil, nil
	}
	rs := resources(a)
	if len(rs) == 0 {
		return nil, nil
	}
	now := g.clock.Now()
	me := Touch{Agent: a.Agent, Session: a.Session}.key()
	var fs []guard.Finding
	var all map[string][]byte // read once, for deletions
	for _, r := range rs {
		var others []Touch
		ts, err := g.load(ctx, r.resource)
		if err != nil {
			return nil, err
		}
		others = append(others, ts...)
		if r.subtree {
			if all == nil {
				if all, err = g.st.ListState(ctx, Namespace); err != nil {
					return nil, fmt.Errorf("conflicts: %w", err)
				}
			}
			for k, v := range all {
				if strings.HasPrefix(k, r.resource+"/") {
					var more []Touch
					if err := json.Unmarshal(v, &more); err != nil {
						return nil, fmt.Errorf("conflicts: %s: %w", k, err)
					}
					others = append(others, more...)
				}
			}
		}
		for _, t := range recent(others, now, g.window) {
			if t.key() == me {
				continue
			}
			fs = append(fs, g.finding(a, r, t, now))
			break // one per resource: the latest other session's touch
		}
	}
	return fs, nil
}

func (g *Guard) finding(a *action.Action, r touched, t Touch, now time.Time) guard.Finding {
	who := fmt.Sprintf("%s session %s", t.Agent, t.Session)
	if t.Agent == ownAgent {
		who = "Overseer task " + t.Session // the own loop's session is its task's id
	}
	if t.Subagent != "" {
		who += " (sub-agent " + t.Subagent + ")"
	}
	ago := now.Sub(t.At).Round(time.Second)
	did := fmt.Sprintf("%s %s %s ago with %s", verb(t.What), t.Resource, ago, t.Tool)
	if t.ActionID != "" {
		did += " (" + t.ActionID + ")"
	}
	msg := fmt.Sprintf("conflict: another session touched this within %s — %s %s; this call would %s %s",
		g.window, who, did, r.what, r.resource)
	return guard.Finding{Check: "conflicts.other-session", Level: g.level, Hard: true, Message: msg,
		Preview: &action.Preview{Summary: fmt.Sprintf("Conflict with %s, which %s.\nThis call (%s) would %s %s.",
			who, did, a.Tool, r.what, r.resource), Items: []string{t.Resource}}}
}

func verb(what string) string {
	switch what {
	case "write":
		return "wrote"
	case "delete":
		return "deleted"
	case "send":
		return "sent to"
	}
	return what
}

// recent returns the touches within window before now, newest first.
func recent(ts []Touch, now time.Time, window time.Duration) []Touch {
	var out []Touch
	for _, t := range ts {
		if now.Sub(t.At) <= window {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.After(out[j].At) })
	return out
}

func (g *Guard) load(ctx context.Context, resource string) ([]Touch, error) {
	b, err := g.st.GetState(ctx, Namespace, resource)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("conflicts: %w", err)
	}
	var ts []Touch
	if err := json.Unmarshal(b, &ts); err != nil {
		return nil, fmt.Errorf("conflicts: %s: %w", resource, err)
	}
	return ts, nil
}

// Observe implements guard.Observer: an action that runs (or that a
// person approved) is remembered as its session's touch of its resources.
func (g *Guard) Observe(ctx context.Context, a *action.Action, level action.Level, answered bool) error {
	if g.off || g.st == nil || a.Session == "" || !(answered || level.RunsWithoutPerson()) {
		return nil
	}
	now := g.clock.Now()
	sub := a.SubagentType
	if a.SubagentID != "" {
		sub = strings.TrimSpace(sub + " " + a.SubagentID)
	}
	for _, r := range resources(a) {
		t := Touch{Resource: r.resource, Agent: a.Agent, Session: a.Session, Subagent: sub, Tool: a.Tool, What: r.what,
			ActionID: a.ID, At: now}
		err := g.st.UpdateState(ctx, Namespace, r.resource, func(old []byte) ([]byte, error) {
			var ts []Touch
			if old != nil {
				_ = json.Unmarshal(old, &ts) // a broken entry is replaced
			}
			kept := []Touch{t}
			for _, o := range recent(ts, now, g.window) {
				if o.key() != t.key() && len(kept) < maxTouches {
					kept = append(kept, o)
				}
			}
			return json.Marshal(kept)
		})
		if err != nil {
			return fmt.Errorf("conflicts: %w", err)
		}
	}
	return nil
}

// Conflict is a resource that more than one session touched within the
// window: the console's list of current conflicts.
type Conflict struct {
	Resource string  `json:"resource"`
	Touches  []Touch `json:"touches"` // newest first, one per session
}

// Current lists the resources touched by several sessions within the
// window, newest first.
func (g *Guard) Current(ctx context.Context) ([]Conflict, error) {
	if g.st == nil {
		return nil, nil
	}
	all, err := g.st.ListState(ctx, Namespace)
	if err != nil {
		return nil, err
	}
	now := g.clock.Now()
	out := []Conflict{}
	for k, v := range all {
		var ts []Touch
		if json.Unmarshal(v, &ts) != nil {
			continue
		}
		ts = recent(ts, now, g.window)
		sessions := map[string]bool{}
		for _, t := range ts {
			sessions[t.key()] = true
		}
		if len(sessions) > 1 {
			out = append(out, Conflict{Resource: k, Touches: ts})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Touches[0].At.After(out[j].Touches[0].At) })
	return out, nil
}

// Prune forgets touches older than the window and returns how many
// resources it dropped.
func (g *Guard) Prune(ctx context.Context) (int, error) {
	if g.st == nil {
		return 0, nil
	}
	all, err := g.st.ListState(ctx, Namespace)
	if err != nil {
		return 0, err
	}
	now := g.clock.Now()
	n := 0
	var errs []error
	for k := range all {
		dropped := false
		err := g.st.UpdateState(ctx, Namespace, k, func(old []byte) ([]byte, error) {
			var ts []Touch
			if old != nil && json.Unmarshal(old, &ts) == nil && len(recent(ts, now, g.window)) > 0 {
				return old, nil
			}
			dropped = true
			return nil, nil
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if dropped {
			n++
		}
	}
	return n, errors.Join(errs...)
}
