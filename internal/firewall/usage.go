package firewall

import (
	"context"
	"net/url"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/usage"
)

// UsageSignals is an optional ability of Signals: the rate limits and
// budget caps a call reaches (package usage), given the level the rest of
// the pipeline judged it at and its effects. The kernel counts the call
// with the check when it submits it (not when it only evaluates it).
type UsageSignals interface {
	Usage(ctx context.Context, a *action.Action, level action.Level, eff usage.Call) ([]usage.Finding, error)
}

// usage is L2's rate limits and budget caps, judged last: a limit may ask
// about the call by its risk class (the level judged so far) and its
// effects. A limit reached refuses the call (block, pause), puts it to a
// person (ask, with the count and window in the preview) or only raises it
// to notify; a cap reached refuses it. A failure to count puts the call to
// a person. A paused agent's calls are not counted.
func (ev *evaluation) usage(ctx context.Context) {
	us, ok := ev.e.signals.(UsageSignals)
	if !ok {
		return
	}
	for _, r := range ev.reasons {
		if r.Source == action.SourcePaused {
			return
		}
	}
	findings, err := us.Usage(ctx, ev.a, ev.level(), CallEffects(ev.a))
	if err != nil {
		ev.fail("L2", "counting the rate limits and budgets", err)
		return
	}
	for _, f := range findings {
		src := action.SourceLimit
		if f.Source == usage.SourceBudget {
			src = action.SourceBudget
		}
		ev.add(action.Reason{Layer: "L2", Source: src, Name: f.ID, Level: f.Level, Message: f.Message})
		if f.Stop {
			ev.stop = true
		}
		if f.Level == action.Approve {
			if ev.preview == nil {
				ev.preview = &action.Preview{Summary: f.Message}
			} else {
				p := *ev.preview
				p.Items = append([]string{f.Message}, p.Items...)
				ev.preview = &p
			}
		}
	}
}

// CallEffects reads what a rate limit may count from an action's facts:
// files written or deleted (a path handed to a program of unknown effect
// counts as written), commands run, hosts sent to.
func CallEffects(a *action.Action) usage.Call {
	var c usage.Call
	for _, p := range a.Facts.Paths {
		switch p.Intent {
		case action.PathWrite, action.PathUnknown:
			c.Write = true
		case action.PathDelete:
			c.Delete = true
		}
	}
	switch a.Kind {
	case action.KindFileWrite, action.KindFileEdit:
		c.Write = true
	case action.KindFileDelete:
		c.Delete = true
	case action.KindShell:
		c.Exec = true
	}
	if len(a.Facts.Commands) > 0 {
		c.Exec = true
	}
	for _, raw := range a.Facts.URLs {
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			// An unreadable URL is a send to a host nobody saw.
			c.Hosts = append(c.Hosts, "?"+raw)
			continue
		}
		c.Hosts = append(c.Hosts, strings.ToLower(u.Hostname()))
	}
	return c
}
