package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/overseer-dev/overseer/internal/frontend/notify"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// notifyControls tells people, over the channels a rule names, of the
// anomalies detected and the auto-rules that fired with notify, as the
// audit trail records them (so also those of other processes sharing the
// database: the own loop's). It polls the trail every poll until ctx ends.
func notifyControls(ctx context.Context, k *kernel.Kernel, n *notify.Notifier, poll time.Duration, logw io.Writer) {
	var after int64
	if tail, err := k.Store.QueryAudit(ctx, store.AuditQuery{Desc: true, Limit: 1}); err == nil && len(tail) == 1 {
		after = tail[0].Seq
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		recs, err := k.Store.QueryAudit(ctx, store.AuditQuery{AfterSeq: after, Types: []string{kernel.TypeAnomalyDetected, kernel.TypeAutoRule}})
		if err != nil {
			continue
		}
		for _, r := range recs {
			after = r.Seq
			m, chans := controlMessage(r)
			if m == nil {
				continue
			}
			actx, cancel := context.WithTimeout(ctx, time.Minute)
			if err := n.AlertTo(actx, m, chans); err != nil {
				fmt.Fprintln(logw, "overseer: notifying:", err)
			}
			cancel()
		}
	}
}

// controlMessage is the alert of an anomaly or of an auto-rule that fired
// with notify (nil for the others), and the channels it goes to.
func controlMessage(r store.AuditRecord) (*notify.Message, []string) {
	switch r.Type {
	case kernel.TypeAnomalyDetected:
		var ev kernel.AnomalyEvent
		if json.Unmarshal(r.Data, &ev) != nil {
			return nil, nil
		}
		what := "people are told"
		if ev.Stopped {
			what = "the agent was stopped"
			if ev.Action == "stop_and_rollback" {
				what += " and its last reversible actions are rolled back"
			}
		}
		return notify.AlertMessage("anomaly", fmt.Sprintf("Overseer: anomaly of %s (%s)", ev.Agent, ev.RuleName),
			ev.Message+"; "+what+". Rollback history: overseer anomaly events", ev.At), ev.Channels
	case kernel.TypeAutoRule:
		var f kernel.RuleFired
		if json.Unmarshal(r.Data, &f) != nil || !f.Notify {
			return nil, nil
		}
		return notify.AlertMessage("auto_rule", fmt.Sprintf("Overseer: auto-rule %q fired for %s", f.RuleName, r.Agent),
			fmt.Sprintf("%s (%s %s: %s)", f.Message, r.Tool, r.ActionID, f.Verdict), r.Time), f.Channels
	}
	return nil, nil
}
