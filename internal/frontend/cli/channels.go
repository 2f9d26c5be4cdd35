package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/overseer-dev/overseer/internal/frontend/notify"
	"github.com/overseer-dev/overseer/internal/frontend/web"
	"github.com/overseer-dev/overseer/internal/limits"
	"github.com/overseer-dev/overseer/internal/store"
)

// consoleAnswerer gives the answers two-way notification channels read
// (Telegram buttons, ntfy actions) to the console's answer tokens, which
// verify them and answer through the gate.
type consoleAnswerer struct{ con *web.Console }

var _ notify.Answerer = consoleAnswerer{}

func channelAnswer(r notify.Reply) web.ChannelAnswer {
	return web.ChannelAnswer{Token: r.Token, Decision: r.Decision, Channel: r.Channel, Who: r.Identity, Reason: r.Reason}
}

// AnswerToken implements notify.Answerer.
func (a consoleAnswerer) AnswerToken(ctx context.Context, apr *store.Approval, channel string) (string, time.Time, error) {
	return a.con.AnswerToken(ctx, apr, channel)
}

// Answer implements notify.Answerer.
func (a consoleAnswerer) Answer(ctx context.Context, r notify.Reply) (*store.Approval, bool, error) {
	return a.con.AnswerFromChannel(ctx, channelAnswer(r))
}

// Refuse implements notify.Answerer.
func (a consoleAnswerer) Refuse(ctx context.Context, r notify.Reply, why error) {
	a.con.RefuseAnswer(ctx, channelAnswer(r), why)
}

// channelAlarm names the alarm of a two-way channel whose connection is lost.
func channelAlarm(name string) string { return "channel_" + name + "_down" }

// twoWayOptions sets the notifier options of two-way channels: answers go
// to the console, and a lost connection is an alarm (shown by /healthz and
// the console's banner, logged by `overseer serve`) until it is back.
func twoWayOptions(opts *notify.Options, con *web.Console, alarms *limits.Alarms, gate func(context.Context, string) (*store.Approval, error)) {
	opts.Answerer = consoleAnswerer{con}
	opts.Lookup = gate
	opts.Status = func(name string, err error) {
		if err == nil {
			alarms.Clear(channelAlarm(name))
			return
		}
		alarms.Raise(limits.Alarm{Name: channelAlarm(name), Since: time.Now(),
			Message: fmt.Sprintf("notification channel %s lost its connection (reconnecting): %v", name, err)})
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, "overseer: "+f+"\n", a...) }
		opts.Logf = logf
	}
}
