package notify_test

import (
	"context"
	"encoding/json"
	"net/mail"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/frontend/notify"
	"github.com/overseer-dev/overseer/internal/frontend/notify/notifytest"
	"github.com/overseer-dev/overseer/internal/frontend/web"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

const testPolicy = `version: 1
extends: builtin
rules:
  - name: test-deploy
    tool: [deploy]
    level: approve
    message: Deploys need a person.
`

// twoWay is a real kernel and web console (the answer tokens) with a
// notifier whose channels are given as notify.yaml text.
type twoWay struct {
	t      *testing.T
	k      *kernel.Kernel
	con    *web.Console
	n      *notify.Notifier
	mu     sync.Mutex
	status []string // "name:up" / "name:down"
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// consoleAnswerer adapts the console's answer tokens (as the daemon does).
type consoleAnswerer struct{ con *web.Console }

func (a consoleAnswerer) AnswerToken(ctx context.Context, apr *store.Approval, ch string) (string, time.Time, error) {
	return a.con.AnswerToken(ctx, apr, ch)
}

func (a consoleAnswerer) Answer(ctx context.Context, r notify.Reply) (*store.Approval, bool, error) {
	return a.con.AnswerFromChannel(ctx, web.ChannelAnswer{Token: r.Token, Decision: r.Decision, Channel: r.Channel, Who: r.Identity, Reason: r.Reason})
}

func (a consoleAnswerer) Refuse(ctx context.Context, r notify.Reply, why error) {
	a.con.RefuseAnswer(ctx, web.ChannelAnswer{Token: r.Token, Decision: r.Decision, Channel: r.Channel, Who: r.Identity, Reason: r.Reason}, why)
}

func newTwoWay(t *testing.T, yaml string) *twoWay {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, kernel.PolicyName), []byte(testPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k, err := kernel.Open(ctx, kernel.Config{Home: home, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	con, err := web.New(k, web.Options{Token: strings.Repeat("ab", 32), Who: "tester", Poll: time.Second, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := notify.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	tw := &twoWay{t: t, k: k, con: con, cancel: cancel}
	tw.n, err = notify.New(cfg, notify.Options{Answerer: consoleAnswerer{con}, LongPoll: time.Second,
		ReconnectMin: 20 * time.Millisecond, ReconnectMax: 100 * time.Millisecond, Backoff: 10 * time.Millisecond,
		Logf: func(f string, a ...any) { t.Logf(f, a...) },
		Status: func(name string, err error) {
			tw.mu.Lock()
			defer tw.mu.Unlock()
			s := name + ":up"
			if err != nil {
				s = name + ":down"
			}
			if len(tw.status) == 0 || tw.status[len(tw.status)-1] != s {
				tw.status = append(tw.status, s)
			}
		},
		Lookup: func(ctx context.Context, id string) (*store.Approval, error) { return k.Gate.Get(ctx, id) }})
	if err != nil {
		t.Fatal(err)
	}
	events := k.Gate.Subscribe(ctx)
	tw.done.Add(2)
	go func() { defer tw.done.Done(); _ = tw.n.Run(ctx, events, k.Gate.Pending) }()
	go func() { defer tw.done.Done(); tw.n.Listen(ctx) }()
	t.Cleanup(func() { cancel(); tw.done.Wait(); k.Close() })
	return tw
}

func (tw *twoWay) submit(target string) *store.Approval {
	tw.t.Helper()
	sub, err := tw.k.Submit(context.Background(), &action.Action{Tool: "deploy", Agent: "agent-x", Session: "s-1",
		Args: map[string]any{"target": target}})
	if err != nil || sub.Approval == nil {
		tw.t.Fatalf("submit: %v %+v", err, sub)
	}
	return sub.Approval
}

func (tw *twoWay) waitStatus(want store.ApprovalStatus, id string) *store.Approval {
	tw.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		apr, err := tw.k.Gate.Get(context.Background(), id)
		if err != nil {
			tw.t.Fatal(err)
		}
		if apr.Status == want {
			return apr
		}
		if time.Now().After(deadline) {
			tw.t.Fatalf("%s is %s, want %s", id, apr.Status, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (tw *twoWay) refusals() []map[string]string {
	tw.t.Helper()
	recs, err := tw.k.Store.QueryAudit(context.Background(), store.AuditQuery{Types: []string{web.TypeAnswerRefused}})
	if err != nil {
		tw.t.Fatal(err)
	}
	var out []map[string]string
	for _, r := range recs {
		var d map[string]string
		_ = json.Unmarshal(r.Data, &d)
		out = append(out, d)
	}
	return out
}

func (tw *twoWay) statuses() string {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return strings.Join(tw.status, " ")
}

func buttons(t *testing.T, m *notifytest.TGMessage) (approve, deny, details string) {
	t.Helper()
	for _, row := range m.Buttons {
		for _, b := range row {
			if len(b.Data) > 64 {
				t.Fatalf("callback data over 64 bytes: %q", b.Data)
			}
			switch b.Text {
			case "Approve":
				approve = b.Data
			case "Deny":
				deny = b.Data
			case "Details":
				details = b.Data
			}
		}
	}
	if approve == "" || deny == "" || details == "" {
		t.Fatalf("buttons %+v", m.Buttons)
	}
	return approve, deny, details
}

const (
	ann      = 42
	stranger = 666
	chatID   = 4242
)

func telegramYAML(api string) string {
	return "channels:\n  - type: telegram\n    bot_token: \"123456:TEST-token\"\n    chat_id: \"4242\"\n    api_url: " + api +
		"\n    allow: [\"42\"]\n"
}

// TestTelegramAnswers: a request goes to the chat with buttons; a stranger's
// press is refused and audited; a reason written as a reply and the Deny
// button deny the request, recorded with channel and identity, and the
// message is edited; a replayed press and a forged token are refused; a
// request answered elsewhere is edited to say so; after the Bot API was
// down and came back, a press still answers.
func TestTelegramAnswers(t *testing.T) {
	tg := notifytest.NewTelegram(t, "123456:TEST-token")
	tw := newTwoWay(t, telegramYAML(tg.URL()))

	apr := tw.submit("prod")
	m := tg.WaitMessage("target=prod", 10*time.Second)
	if m.Chat != chatID {
		t.Fatalf("sent to chat %d", m.Chat)
	}
	approve, deny, details := buttons(t, m)
	if strings.Contains(m.Text, "/ui/a/") {
		t.Fatalf("the message carries the daemon's links:\n%s", m.Text)
	}

	// A stranger in the chat cannot answer, nor see the details.
	cb := tg.Press(stranger, "mallory", m.ID, approve)
	if a := tg.WaitCallbackAnswer(cb, 5*time.Second); !strings.Contains(a.Text, "may not answer") {
		t.Fatalf("stranger's press answered %+v", a)
	}
	cb = tg.Press(stranger, "mallory", m.ID, details)
	if a := tg.WaitCallbackAnswer(cb, 5*time.Second); !strings.Contains(a.Text, "may not answer") {
		t.Fatalf("stranger's details %+v", a)
	}
	// Ann sees the details.
	cb = tg.Press(ann, "ann", m.ID, details)
	if a := tg.WaitCallbackAnswer(cb, 5*time.Second); !strings.Contains(a.Text, "deploy") {
		t.Fatalf("details %+v", a)
	}
	// A reason as a reply, then the Deny button.
	tg.Reply(ann, "ann", m.ID, "not on a Friday")
	deadline := time.Now().Add(5 * time.Second)
	for !noted(tg, m.ID) {
		if time.Now().After(deadline) {
			t.Fatal("the reason was not acknowledged")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cb = tg.Press(ann, "ann", m.ID, deny)
	if a := tg.WaitCallbackAnswer(cb, 5*time.Second); a.Text != "Denied." {
		t.Fatalf("ann's press answered %+v", a)
	}
	got := tw.waitStatus(store.StatusDenied, apr.ID)
	if got.Answer.Channel != "telegram" || got.Answer.Who != "telegram:42 @ann" || got.Answer.Reason != "not on a Friday" {
		t.Fatalf("answer %+v", got.Answer)
	}
	tg.WaitEdit(m.ID, "denied by telegram:42 @ann via telegram: not on a Friday", 5*time.Second)

	// A replay of the other button is refused.
	cb = tg.Press(ann, "ann", m.ID, approve)
	if a := tg.WaitCallbackAnswer(cb, 5*time.Second); !strings.Contains(a.Text, "answered already") {
		t.Fatalf("replay answered %+v", a)
	}
	if got := tw.waitStatus(store.StatusDenied, apr.ID); len(got.Answers) != 1 {
		t.Fatalf("answers %+v", got.Answers)
	}

	// A forged token on a real message is refused.
	apr2 := tw.submit("staging")
	m2 := tg.WaitMessage("target=staging", 10*time.Second)
	cb = tg.Press(ann, "ann", m2.ID, "a:"+strings.Repeat("A", 32))
	if a := tg.WaitCallbackAnswer(cb, 5*time.Second); !strings.Contains(a.Text, "could not be verified") {
		t.Fatalf("forged token answered %+v", a)
	}
	// The token of one request does not answer another.
	approve2, _, _ := buttons(t, m2)
	cb = tg.Press(ann, "ann", m.ID, approve2)
	if a := tg.WaitCallbackAnswer(cb, 5*time.Second); a.Text != "Approved." {
		t.Fatalf("press %+v", a) // the token decides, not the message it sits under
	}
	tw.waitStatus(store.StatusApproved, apr2.ID)
	tg.WaitEdit(m2.ID, "approved by telegram:42 @ann via telegram", 5*time.Second)

	// Answered elsewhere: the message says so.
	apr3 := tw.submit("dev")
	m3 := tg.WaitMessage("target=dev", 10*time.Second)
	if _, _, err := tw.k.Answer(context.Background(), apr3.ID, store.Answer{Decision: "approve", Who: "ann", Channel: "web"}); err != nil {
		t.Fatal(err)
	}
	tg.WaitEdit(m3.ID, "approved by ann via web", 5*time.Second)

	// The Bot API goes away and comes back: the channel says so and still answers.
	polls := tg.Polls()
	tg.WaitPolls(polls+1, 5*time.Second)
	tg.Stop()
	apr4 := tw.submit("qa") // sent after the API is back (retried)
	waitUntil(t, func() bool { return strings.Contains(tw.statuses(), "telegram:down") })
	if h := tw.n.Health(); len(h) != 1 || h[0].State != "reconnecting" || h[0].Error == "" || !h[0].TwoWay {
		t.Fatalf("health while down %+v", h)
	}
	tg.Restart()
	m4 := tg.WaitMessage("target=qa", 15*time.Second)
	a4, _, _ := buttons(t, m4)
	tg.Press(ann, "ann", m4.ID, a4)
	tw.waitStatus(store.StatusApproved, apr4.ID)
	if s := tw.statuses(); !strings.HasSuffix(s, "telegram:up") {
		t.Fatalf("statuses %s", s)
	}
	if h := tw.n.Health(); h[0].State != "connected" || h[0].Error != "" {
		t.Fatalf("health after reconnecting %+v", h)
	}

	// Every refusal is audited with channel and identity.
	var whys []string
	for _, r := range tw.refusals() {
		if r["channel"] != "telegram" {
			t.Fatalf("refusal %v", r)
		}
		whys = append(whys, r["who"]+" "+r["why"])
	}
	want := []string{"telegram:666 @mallory " + notify.ErrNotAllowed.Error(), "telegram:42 @ann used", "telegram:42 @ann invalid"}
	if strings.Join(whys, "|") != strings.Join(want, "|") {
		t.Fatalf("refusals:\n%s\nwant\n%s", strings.Join(whys, "\n"), strings.Join(want, "\n"))
	}
}

func noted(tg *notifytest.Telegram, replyTo int64) bool {
	for _, m := range tg.Messages() {
		if m.ReplyTo == replyTo && strings.Contains(m.Text, "Reason noted") {
			return true
		}
	}
	return false
}

func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTelegramReplyAnswers: a written reply "deny <reason>" answers, and
// from a stranger it does nothing.
func TestTelegramReplyAnswers(t *testing.T) {
	tg := notifytest.NewTelegram(t, "123456:TEST-token")
	tw := newTwoWay(t, telegramYAML(tg.URL()))
	apr := tw.submit("prod")
	m := tg.WaitMessage("target=prod", 10*time.Second)
	tg.Reply(stranger, "mallory", m.ID, "approve")
	tg.Reply(ann, "ann", m.ID, "deny: use the staging cluster")
	got := tw.waitStatus(store.StatusDenied, apr.ID)
	if got.Answer.Reason != "use the staging cluster" || got.Answer.Who != "telegram:42 @ann" {
		t.Fatalf("answer %+v", got.Answer)
	}
	if r := tw.refusals(); len(r) != 1 || r[0]["who"] != "telegram:666 @mallory" {
		t.Fatalf("refusals %v", r)
	}
}

// TestNtfyAnswers: the notification's http actions publish the answer to
// the reply topic, which the channel reads as a JSON stream; a publish
// without the reply topic's token is refused by the server, a forged or
// replayed answer by Overseer (audited); after the server was down, a tap
// still answers.
func TestNtfyAnswers(t *testing.T) {
	srv := notifytest.NewNtfy(t)
	srv.Tokens = map[string][]string{"tk_daemon": {"alerts", "replies"}, "tk_phone": {"alerts", "replies"}}
	tw := newTwoWay(t, "channels:\n  - type: ntfy\n    url: "+srv.URL()+"\n    topic: alerts\n    token: tk_daemon\n"+
		"    reply_topic: replies\n    reply_token: tk_phone\n")
	srv.WaitSubscribers(1, 10*time.Second)

	apr := tw.submit("prod")
	m := srv.WaitMessage("alerts", "target=prod", 10*time.Second)
	if len(m.Actions) != 2 || m.Actions[0].Action != "http" || m.Actions[0].Headers["Authorization"] != "Bearer tk_phone" {
		t.Fatalf("actions %+v", m.Actions)
	}
	if strings.Contains(m.Message, "/ui/a/") {
		t.Fatalf("the message carries the daemon's links:\n%s", m.Message)
	}
	body := m.Actions[0].Body
	if !strings.HasPrefix(body, "approve ") {
		t.Fatalf("approve body %q", body)
	}
	// Without the token the server refuses; with it, a forged answer is refused by Overseer.
	if st := srv.Publish("replies", "", body); st != 403 {
		t.Fatalf("publish without a token: %d", st)
	}
	srv.Publish("replies", "tk_phone", "approve "+strings.Repeat("Z", 32))
	waitUntil(t, func() bool { return len(tw.refusals()) == 1 })

	srv.Tap(m, "Approve")
	got := tw.waitStatus(store.StatusApproved, apr.ID)
	if got.Answer.Channel != "ntfy" || got.Answer.Who != "ntfy:replies" {
		t.Fatalf("answer %+v", got.Answer)
	}
	// A replay of the other action is refused.
	srv.Tap(m, "Deny")
	waitUntil(t, func() bool { return len(tw.refusals()) == 2 })
	if got := tw.waitStatus(store.StatusApproved, apr.ID); len(got.Answers) != 1 {
		t.Fatalf("answers %+v", got.Answers)
	}

	// The server goes away and comes back: the stream resumes.
	apr2 := tw.submit("staging")
	m2 := srv.WaitMessage("alerts", "target=staging", 10*time.Second)
	subs := srv.Subscriptions()
	srv.Stop()
	waitUntil(t, func() bool { return strings.Contains(tw.statuses(), "ntfy:down") })
	srv.Restart()
	srv.Tap(m2, "Deny")
	tw.waitStatus(store.StatusDenied, apr2.ID)
	if srv.Subscriptions() <= subs || !strings.HasSuffix(tw.statuses(), "ntfy:up") {
		t.Fatalf("subscriptions %d, statuses %s", srv.Subscriptions(), tw.statuses())
	}
	var whys []string
	for _, r := range tw.refusals() {
		whys = append(whys, r["channel"]+" "+r["who"]+" "+r["why"])
	}
	if strings.Join(whys, "|") != "ntfy ntfy:replies invalid|ntfy ntfy:replies used" {
		t.Fatalf("refusals %v", whys)
	}
}

// TestSlackAppAnswers: requests are posted with Block Kit buttons; the
// presses arrive as Socket Mode envelopes, each acknowledged; a stranger's
// press is refused; a reason written in the thread and the Deny button
// deny the request and the message is updated; a replay is refused; a
// press made while the connection was down is delivered again once it is
// back, and answers.
func TestSlackAppAnswers(t *testing.T) {
	sl := notifytest.NewSlack(t, "xoxb-test", "xapp-test")
	tw := newTwoWay(t, "channels:\n  - type: slack_app\n    bot_token: xoxb-test\n    app_token: xapp-test\n    channel: C0OVERSEER\n"+
		"    api_url: "+sl.URL()+"\n    allow: [U0ANN]\n")
	sl.WaitConnections(1, 10*time.Second)

	apr := tw.submit("prod")
	m := sl.WaitMessage("target=prod", 10*time.Second)
	if strings.Contains(string(m.Blocks), "/ui/a/") {
		t.Fatalf("the message carries the daemon's links: %s", m.Blocks)
	}
	env := sl.Click("U0EVE", "eve", m, "overseer_approve")
	sl.WaitAck(env, 5*time.Second)
	waitUntil(t, func() bool { return len(tw.refusals()) == 1 })

	sl.WaitAck(sl.ThreadReply("U0ANN", m, "the tests are red"), 5*time.Second)
	sl.WaitThread(m.TS, "Reason noted", 5*time.Second)
	sl.WaitAck(sl.Click("U0ANN", "ann", m, "overseer_deny"), 5*time.Second)
	got := tw.waitStatus(store.StatusDenied, apr.ID)
	if got.Answer.Channel != "slack_app" || got.Answer.Who != "slack:U0ANN @ann" || got.Answer.Reason != "the tests are red" {
		t.Fatalf("answer %+v", got.Answer)
	}
	sl.WaitUpdate(m.TS, "denied by slack:U0ANN @ann via slack_app: the tests are red", 5*time.Second)

	// A replay (the old message's button) is refused.
	sl.Click("U0ANN", "ann", m, "overseer_approve")
	waitUntil(t, func() bool { return len(tw.refusals()) == 2 })

	// The connection drops; a press made meanwhile is delivered again.
	apr2 := tw.submit("staging")
	m2 := sl.WaitMessage("target=staging", 10*time.Second)
	conns := sl.Connections()
	sl.Stop()
	waitUntil(t, func() bool { return strings.Contains(tw.statuses(), "slack_app:down") })
	env = sl.Click("U0ANN", "ann", m2, "overseer_approve")
	sl.Restart()
	sl.WaitAck(env, 10*time.Second)
	tw.waitStatus(store.StatusApproved, apr2.ID)
	if sl.Connections() <= conns || !strings.HasSuffix(tw.statuses(), "slack_app:up") {
		t.Fatalf("connections %d, statuses %s", sl.Connections(), tw.statuses())
	}
	var whys []string
	for _, r := range tw.refusals() {
		whys = append(whys, r["who"]+" "+r["why"])
	}
	if strings.Join(whys, "|") != "slack:U0EVE @eve "+notify.ErrNotAllowed.Error()+"|slack:U0ANN @ann used" {
		t.Fatalf("refusals %v", whys)
	}
}

// A reply in a message's thread that arrives before chat.postMessage's
// answer (Slack delivers events as soon as the message exists) waits for
// the send instead of being dropped.
func TestSlackAppReplyBeforeSendReturns(t *testing.T) {
	sl := notifytest.NewSlack(t, "xoxb-test", "xapp-test")
	sl.PostDelay = 700 * time.Millisecond
	tw := newTwoWay(t, "channels:\n  - type: slack_app\n    bot_token: xoxb-test\n    app_token: xapp-test\n    channel: C0OVERSEER\n"+
		"    api_url: "+sl.URL()+"\n    allow: [U0ANN]\n")
	sl.WaitConnections(1, 10*time.Second)
	apr := tw.submit("early")
	m := sl.WaitMessage("target=early", 10*time.Second) // the send has not returned yet
	sl.WaitAck(sl.ThreadReply("U0ANN", m, "deny: not before the release"), 5*time.Second)
	got := tw.waitStatus(store.StatusDenied, apr.ID)
	if got.Answer.Reason != "not before the release" {
		t.Fatalf("answer %+v", got.Answer)
	}
}

// reply is an email replying to m from from with body.
func reply(m *mail.Message, from, body string) []byte {
	return []byte(strings.ReplaceAll("From: "+from+"\nTo: overseer@localhost\nSubject: Re: "+m.Header.Get("Subject")+
		"\nIn-Reply-To: "+m.Header.Get("Message-ID")+"\nDate: "+time.Now().Format(time.RFC1123Z)+
		"\nMessage-ID: <"+strconv.FormatInt(time.Now().UnixNano(), 36)+"@example.com>\nMIME-Version: 1.0\n"+
		"Content-Type: text/plain; charset=utf-8\n\n"+body, "\n", "\r\n"))
}

// TestEmailAnswers: the notification goes out over SMTP with the token in
// its subject; replies are read from a real Dovecot over IMAP (IDLE): a
// stranger's "approve" is refused, the allowed sender's "deny <reason>"
// (above a signature and the quoted original) denies with the reason, a
// replayed reply is refused, and after Dovecot was restarted a reply
// still answers.
func TestEmailAnswers(t *testing.T) {
	start := time.Now()
	step := func(what string) { t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), what) }
	defer step("end")
	dv := notifytest.StartDovecot(t)
	step("dovecot up")
	smtp := notifytest.NewSMTP(t)
	tw := newTwoWay(t, "channels:\n  - type: email\n    smtp: "+smtp.Addr()+"\n    tls: none\n    from: Overseer <overseer@localhost>\n"+
		"    to: [ann@example.com]\n    imap: "+dv.Addr+"\n    imap_tls: none\n    imap_username: "+dv.User+
		"\n    imap_password: "+dv.Password+"\n    allow: [\"Ann <Ann@Example.com>\"]\n")
	waitUntil(t, func() bool { return strings.Contains(tw.statuses(), "email:up") })
	step("connected")
	apr := tw.submit("prod")
	m := smtp.WaitMessage("target=prod", 10*time.Second)
	if !strings.Contains(m.Header.Get("Subject"), "[ov:") {
		t.Fatalf("subject %q", m.Header.Get("Subject"))
	}
	dv.Deliver(reply(m, "Mallory <mallory@example.com>", "approve\n"))
	waitUntil(t, func() bool { return len(tw.refusals()) == 1 })
	step("stranger refused")
	denial := reply(m, "Ann <ann@example.com>", "Deny: the release is frozen\n\n-- \nAnn\n\nOn Mon, Overseer wrote:\n> approve\n")
	dv.Deliver(denial)
	got := tw.waitStatus(store.StatusDenied, apr.ID)
	if got.Answer.Channel != "email" || got.Answer.Who != "email:ann@example.com" || got.Answer.Reason != "the release is frozen" {
		t.Fatalf("answer %+v", got.Answer)
	}
	step("denied")
	dv.Deliver(denial) // a replay
	waitUntil(t, func() bool { return len(tw.refusals()) == 2 })
	step("replay refused")

	// Dovecot goes away and comes back.
	apr2 := tw.submit("staging")
	m2 := smtp.WaitMessage("target=staging", 10*time.Second)
	dv.Stop()
	waitUntil(t, func() bool { return strings.Contains(tw.statuses(), "email:down") })
	step("down")
	dv.Deliver(reply(m2, "ann@example.com", "approve"))
	dv.Restart()
	tw.waitStatus(store.StatusApproved, apr2.ID)
	var whys []string
	for _, r := range tw.refusals() {
		whys = append(whys, r["who"]+" "+r["why"])
	}
	if strings.Join(whys, "|") != "email:mallory@example.com "+notify.ErrNotAllowed.Error()+"|email:ann@example.com used" {
		t.Fatalf("refusals %v", whys)
	}
}
