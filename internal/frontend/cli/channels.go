package cli

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/frontend/notify"
	"github.com/overseer-dev/overseer/internal/frontend/web"
	"github.com/overseer-dev/overseer/internal/kernel"
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

// MaxNotifyTestWait bounds how long `overseer notify test` waits.
const MaxNotifyTestWait = 30 * time.Minute

// mountNotifyTest serves POST /api/v1/notify/test?channel=NAME&wait=5m
// (the daemon's token): a harmless request goes to that channel only, and
// the answer, if one comes in time, is returned. Nothing runs whatever
// the answer; the request is withdrawn when nobody answered.
func mountNotifyTest(k *kernel.Kernel, api *httpapi.Server, n *notify.Notifier) {
	// GET /api/v1/notify/channels: the channels and their connections.
	api.Router().HandleFunc("GET /api/v1/notify/channels", httpapi.AccessToken, api.RequireToken(func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteJSON(w, http.StatusOK, n.Health())
	}))
	api.Router().HandleFunc("POST /api/v1/notify/test", httpapi.AccessToken, api.RequireToken(func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("channel")
		wait, err := time.ParseDuration(r.URL.Query().Get("wait"))
		if err != nil || wait <= 0 || wait > MaxNotifyTestWait {
			httpapi.WriteError(w, http.StatusBadRequest, "bad_request", "wait must be a duration up to 30m")
			return
		}
		found := false
		for _, c := range n.Channels() {
			found = found || c.Name == name
		}
		if !found {
			httpapi.WriteError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no notification channel %q", name))
			return
		}
		ctx := r.Context()
		q := fmt.Sprintf("This is a test of the notification channel %s: answer it to check that answers come back. Nothing will run.", name)
		sub, err := k.Ask(ctx, &action.Action{Tool: notify.TestTool, Agent: "overseer", Session: "notify-test"}, q)
		if err != nil {
			httpapi.WriteError(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
		id := sub.Approval.ID
		withdraw := func(why string) {
			wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _, _ = k.Withdraw(wctx, id, why)
		}
		if err := n.NotifyChannel(ctx, sub.Approval, name); err != nil {
			withdraw("the test message could not be sent")
			httpapi.WriteError(w, http.StatusBadGateway, "not_delivered", err.Error())
			return
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		apr, err := k.Gate.Wait(wctx, id)
		if err != nil || apr == nil || !apr.Status.Terminal() {
			withdraw("nobody answered the test in time")
			apr, _ = k.Gate.Get(context.Background(), id)
		}
		res := client.NotifyTestResult{Channel: name, Approval: id}
		if apr != nil {
			res.Status = string(apr.Status)
			if apr.Answer != nil {
				res.Who, res.Via, res.Reason = apr.Answer.Who, apr.Answer.Channel, apr.Answer.Reason
			}
		}
		httpapi.WriteJSON(w, http.StatusOK, res)
	}))
}

func init() {
	extraCommands = append(extraCommands, func(a *app) *cobra.Command { return a.notifyCmd() })
}

func (a *app) notifyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "notify", Short: "Check the notification channels of notify.yaml"}
	var wait time.Duration
	test := &cobra.Command{
		Use:   "test CHANNEL",
		Short: "Send a harmless test request to one channel and wait for its answer",
		Long: `Send a harmless test request to the channel named CHANNEL (its name in
notify.yaml, or its type when it has no name) through the running daemon,
and wait for the answer: for a two-way channel (telegram, slack_app, ntfy
with reply_topic) press Approve or Deny where it arrived. Nothing runs
whatever the answer. It checks a setup end to end: the bot or app can
post, the daemon reads the answer back, and your identity is allowed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := a.homeDir()
			if err != nil {
				return err
			}
			c, err := client.Discover(cmd.Context(), home)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Sent a test request to %s; waiting up to %s for the answer…\n", args[0], wait)
			res, err := c.NotifyTest(cmd.Context(), args[0], wait)
			if err != nil {
				return err
			}
			switch res.Status {
			case "approved", "denied":
				fmt.Fprintf(a.stdout, "Answered: %s by %s via %s", res.Status, res.Who, res.Via)
				if res.Reason != "" {
					fmt.Fprintf(a.stdout, " (%s)", res.Reason)
				}
				fmt.Fprintln(a.stdout, ". The channel works both ways.")
				return nil
			}
			return fmt.Errorf("no answer came back in %s (the request is %s): check the daemon's log and the channel's allow-list", wait, res.Status)
		},
	}
	test.Flags().DurationVar(&wait, "wait", 5*time.Minute, "how long to wait for the answer (at most 30m)")
	cmd.AddCommand(test)
	return cmd
}
