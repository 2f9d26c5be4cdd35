package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/overseer-dev/overseer/internal/store"
)

// The slack_app channel is a Slack app in Socket Mode: requests are
// messages with Block Kit buttons (chat.postMessage with the bot token),
// and the presses arrive over a WebSocket the daemon opens itself
// (apps.connections.open with the app-level token), so Slack needs no
// public URL. Each envelope is acknowledged ({"envelope_id": …}); a reply
// in the message's thread ("deny <reason>", or a reason alone, then a
// button) carries a reason. Once decided, the message is updated
// (chat.update) to say how, without its buttons. The incoming-webhook
// "slack" channel stays for one-way use.
//
// Wire format: https://api.slack.com/apis/socket-mode and the Web API
// (POST {api}/{method}, JSON, {"ok":true,…} or {"ok":false,"error":…}).

// TypeSlackApp is the two-way Slack channel.
const TypeSlackApp = "slack_app"

// DefaultSlackAPI is the Slack Web API's address.
const DefaultSlackAPI = "https://slack.com/api"

// Action ids of the buttons.
const (
	slackApprove = "overseer_approve"
	slackDeny    = "overseer_deny"
)

func validateSlackApp(ch *ChannelConfig) error {
	if (ch.BotToken == "") == (ch.BotTokenFile == "") {
		return errors.New("set bot_token or bot_token_file (one of them: the xoxb- token)")
	}
	if (ch.AppToken == "") == (ch.AppTokenFile == "") {
		return errors.New("set app_token or app_token_file (one of them: the xapp- token with connections:write)")
	}
	if ch.Channel == "" || strings.ContainsAny(ch.Channel, " #/") {
		return errors.New("channel must be a Slack channel id (C…)")
	}
	if len(ch.Allow) == 0 {
		return errors.New("allow must list the Slack user ids (U…) that may answer")
	}
	for _, a := range ch.Allow {
		if a == "" || strings.ContainsAny(a, " @:") {
			return fmt.Errorf("allow: %q is not a Slack user id (U…)", a)
		}
	}
	return checkAPIURL(ch.APIURL, "")
}

func secretOf(value, file, what string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s_file: %w", what, err)
		}
		value = strings.TrimSpace(string(b))
	}
	if value == "" || strings.ContainsAny(value, " \n\r") {
		return "", fmt.Errorf("the %s is empty or malformed", what)
	}
	return value, nil
}

// slackSent is a message posted for a request.
type slackSent struct {
	approval string
	channel  string
	ts       string
	token    string
	text     string
	reason   string
}

type slackApp struct {
	api      string
	bot, app string
	channel  string
	http     *http.Client
	logf     func(string, ...any)
	backoff  func() *backoff

	mu      sync.Mutex
	sent    *sentIndex[string, *slackSent] // by message ts
	sending int                            // chat.postMessage calls of requests under way (see sentFor)
}

var (
	_ Channel  = (*slackApp)(nil)
	_ Listener = (*slackApp)(nil)
	_ Settler  = (*slackApp)(nil)
)

func newSlackApp(cc ChannelConfig, opts Options) (*slackApp, error) {
	bot, err := secretOf(cc.BotToken, cc.BotTokenFile, "bot_token")
	if err != nil {
		return nil, err
	}
	app, err := secretOf(cc.AppToken, cc.AppTokenFile, "app_token")
	if err != nil {
		return nil, err
	}
	api := cc.APIURL
	if api == "" {
		api = DefaultSlackAPI
	}
	return &slackApp{api: strings.TrimRight(api, "/") + "/", bot: bot, app: app, channel: cc.Channel, http: opts.HTTP,
		logf: opts.Logf, backoff: func() *backoff { return newBackoff(opts) },
		sent: newSentIndex[string, *slackSent]()}, nil
}

// call calls a Web API method with token and decodes the answer into out.
func (s *slackApp) call(ctx context.Context, method, token string, params any, out any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return &permanent{err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.api+method, bytes.NewReader(body))
	if err != nil {
		return &permanent{err}
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("User-Agent", userAgent)
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("slack: %s: %w", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("slack: %s: %w", method, err)
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		var wait time.Duration
		if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n > 0 {
			wait = time.Duration(n) * time.Second
		}
		return &retryAfter{err: fmt.Errorf("slack: %s: HTTP %d", method, resp.StatusCode), wait: wait}
	}
	var r struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("slack: %s: HTTP %d, unreadable answer", method, resp.StatusCode)
	}
	if !r.OK {
		return &permanent{fmt.Errorf("slack: %s: %s", method, r.Error)}
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// Block Kit, as far as it is written.
type (
	slackText struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	slackElement struct {
		Type     string     `json:"type"`
		Text     *slackText `json:"text,omitempty"`
		ActionID string     `json:"action_id,omitempty"`
		Value    string     `json:"value,omitempty"`
		Style    string     `json:"style,omitempty"`
	}
	slackBlock struct {
		Type     string         `json:"type"`
		BlockID  string         `json:"block_id,omitempty"`
		Text     *slackText     `json:"text,omitempty"`
		Elements []slackElement `json:"elements,omitempty"`
	}
)

// maxSlackSection is Block Kit's limit on a section's text.
const maxSlackSection = 3000

func (s *slackApp) blocks(text, token, footer string) []slackBlock {
	b := []slackBlock{{Type: "section", Text: &slackText{Type: "mrkdwn", Text: slackEscape(clip(text, maxSlackSection-100))}}}
	if token != "" {
		b = append(b, slackBlock{Type: "actions", BlockID: "overseer_answer", Elements: []slackElement{
			{Type: "button", Text: &slackText{Type: "plain_text", Text: "Approve"}, ActionID: slackApprove, Value: token, Style: "primary"},
			{Type: "button", Text: &slackText{Type: "plain_text", Text: "Deny"}, ActionID: slackDeny, Value: token, Style: "danger"},
		}})
	}
	if footer != "" {
		b = append(b, slackBlock{Type: "context", Elements: []slackElement{{Type: "mrkdwn", Text: &slackText{Type: "mrkdwn", Text: slackEscape(footer)}}}})
	}
	return b
}

func (s *slackApp) Send(ctx context.Context, m *Message) error {
	mm := *m
	mm.Links = Links{}
	text := mm.Text()
	params := map[string]any{"channel": s.channel, "text": slackEscape(clip(m.Title, 200))}
	tok := ""
	if m.Head == nil && m.Alert == "" {
		tok = m.AnswerToken
	}
	footer := ""
	if tok != "" {
		footer = "Reply in this message's thread to give a reason."
	}
	params["blocks"] = s.blocks(text, tok, footer)
	var r struct {
		Channel string `json:"channel"`
		TS      string `json:"ts"`
	}
	answerable := tok != "" && m.ApprovalID != ""
	if answerable {
		s.mu.Lock()
		s.sending++
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.sending--
			s.mu.Unlock()
		}()
	}
	if err := s.call(ctx, "chat.postMessage", s.bot, params, &r); err != nil {
		return err
	}
	if answerable {
		sent := &slackSent{approval: m.ApprovalID, channel: r.Channel, ts: r.TS, token: tok, text: text}
		s.sent.add(m.ApprovalID, r.TS, sent)
	}
	return nil
}

// sentWait is how long a reply to a message not known yet waits while a
// request's message is being sent.
const sentWait = 3 * time.Second

// sentFor returns the request's message with timestamp ts, or nil. Slack
// delivers events about a message as soon as it exists, which can be before
// chat.postMessage's answer (its ts) reached us: while such a send is under
// way, a reply to an unknown message waits for it a little rather than
// being dropped.
func (s *slackApp) sentFor(ctx context.Context, ts string) *slackSent {
	deadline := time.Now().Add(sentWait)
	for {
		// The count first: a send that ended before it was read has
		// added its message (it adds before it stops counting).
		s.mu.Lock()
		sending := s.sending
		s.mu.Unlock()
		sent := s.sent.get(ts)
		if sent != nil || sending == 0 || !time.Now().Before(deadline) {
			return sent
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// SlackEnvelope is a Socket Mode message from Slack.
type SlackEnvelope struct {
	Type       string          `json:"type"` // hello, disconnect, interactive, events_api, slash_commands
	EnvelopeID string          `json:"envelope_id"`
	Payload    json.RawMessage `json:"payload"`
	Reason     string          `json:"reason"` // of a disconnect
}

// slackInteraction is a block_actions payload, as far as it is read.
type slackInteraction struct {
	Type string `json:"type"`
	User struct {
		ID       string `json:"id"`
		Username string `json:"username"`
	} `json:"user"`
	Container struct {
		MessageTS string `json:"message_ts"`
		ChannelID string `json:"channel_id"`
	} `json:"container"`
	Actions []struct {
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
	} `json:"actions"`
}

// slackEventCallback is an events_api payload, as far as it is read.
type slackEventCallback struct {
	Event struct {
		Type     string `json:"type"`
		Subtype  string `json:"subtype"`
		BotID    string `json:"bot_id"`
		User     string `json:"user"`
		Channel  string `json:"channel"`
		Text     string `json:"text"`
		ThreadTS string `json:"thread_ts"`
		TS       string `json:"ts"`
	} `json:"event"`
}

// ParseSlackEnvelope reads one Socket Mode frame. Frames that are not JSON
// objects with a type are errors.
func ParseSlackEnvelope(b []byte) (SlackEnvelope, error) {
	var e SlackEnvelope
	if len(b) > 1<<20 {
		return e, errors.New("slack: frame too large")
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return SlackEnvelope{}, fmt.Errorf("slack: unreadable frame: %w", err)
	}
	if e.Type == "" {
		return SlackEnvelope{}, errors.New("slack: frame without a type")
	}
	return e, nil
}

// Listen keeps a Socket Mode connection open until ctx ends.
func (s *slackApp) Listen(ctx context.Context, h Handler) error {
	bo := s.backoff()
	for ctx.Err() == nil {
		err := s.session(ctx, h, bo)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			h.Status(err)
			if !bo.wait(ctx) {
				return nil
			}
		}
	}
	return nil
}

// session opens one Socket Mode connection and reads it until it ends;
// nil means Slack asked for a reconnection.
func (s *slackApp) session(ctx context.Context, h Handler, bo *backoff) error {
	var open struct {
		URL string `json:"url"`
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := s.call(octx, "apps.connections.open", s.app, map[string]any{}, &open)
	cancel()
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	conn, _, err := websocket.Dial(dctx, open.URL, &websocket.DialOptions{HTTPClient: s.http})
	cancel()
	if err != nil {
		return fmt.Errorf("slack: socket mode: %w", err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return fmt.Errorf("slack: socket mode: %w", err)
		}
		e, err := ParseSlackEnvelope(b)
		if err != nil {
			s.logf("notify: %v", err)
			continue
		}
		if e.EnvelopeID != "" {
			ack, _ := json.Marshal(map[string]string{"envelope_id": e.EnvelopeID})
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := conn.Write(wctx, websocket.MessageText, ack)
			cancel()
			if err != nil {
				return fmt.Errorf("slack: socket mode: acknowledging: %w", err)
			}
		}
		switch e.Type {
		case "hello":
			bo.reset()
			h.Status(nil)
		case "disconnect":
			_ = conn.Close(websocket.StatusNormalClosure, "")
			return nil // Slack asks for a new connection (refresh, maintenance)
		case "interactive":
			var p slackInteraction
			if json.Unmarshal(e.Payload, &p) == nil && p.Type == "block_actions" {
				s.handleAction(ctx, h, &p)
			}
		case "events_api":
			var p slackEventCallback
			if json.Unmarshal(e.Payload, &p) == nil && p.Event.Type == "message" {
				s.handleThreadReply(ctx, h, &p)
			}
		}
	}
}

func slackWho(id, name string) string {
	s := "slack:" + id
	if name != "" {
		s += " @" + name
	}
	return s
}

func (s *slackApp) handleAction(ctx context.Context, h Handler, p *slackInteraction) {
	if len(p.Actions) != 1 || p.Container.ChannelID != s.channel {
		return
	}
	a := p.Actions[0]
	decision := ""
	switch a.ActionID {
	case slackApprove:
		decision = "approve"
	case slackDeny:
		decision = "deny"
	default:
		return
	}
	sent := s.sentFor(ctx, p.Container.MessageTS)
	s.mu.Lock()
	reason := ""
	if sent != nil && sent.token == a.Value {
		reason = sent.reason
	}
	s.mu.Unlock()
	out := h.Answer(ctx, Reply{Token: a.Value, Decision: decision, Identity: slackWho(p.User.ID, p.User.Username), Reason: reason})
	switch {
	case out.Err != nil:
		if sent != nil && !errors.Is(out.Err, ErrNotAllowed) {
			s.threadReply(ctx, sent, "Refused: "+refusalText(out.Err))
		}
	default:
		s.Settle(ctx, out.Approval)
	}
}

func (s *slackApp) handleThreadReply(ctx context.Context, h Handler, p *slackEventCallback) {
	ev := p.Event
	if ev.Channel != s.channel || ev.ThreadTS == "" || ev.ThreadTS == ev.TS || ev.BotID != "" || ev.Subtype != "" {
		return
	}
	sent := s.sentFor(ctx, ev.ThreadTS)
	if sent == nil {
		return
	}
	who := slackWho(ev.User, "")
	decision, reason, ok := ParseReply(ev.Text)
	if !ok {
		if !h.Allowed(who) {
			return
		}
		s.mu.Lock()
		sent.reason = clip(strings.TrimSpace(ev.Text), 2000)
		s.mu.Unlock()
		s.threadReply(ctx, sent, "Reason noted. Press Approve or Deny.")
		return
	}
	out := h.Answer(ctx, Reply{Token: sent.token, Decision: decision, Identity: who, Reason: reason})
	switch {
	case errors.Is(out.Err, ErrNotAllowed):
	case out.Err != nil:
		s.threadReply(ctx, sent, "Refused: "+refusalText(out.Err))
	default:
		s.Settle(ctx, out.Approval)
	}
}

func (s *slackApp) threadReply(ctx context.Context, sent *slackSent, text string) {
	if err := s.call(ctx, "chat.postMessage", s.bot, map[string]any{"channel": sent.channel, "thread_ts": sent.ts,
		"text": slackEscape(text)}, nil); err != nil {
		s.logf("notify: slack: replying in a thread: %v", err)
	}
}

// Settle updates the request's messages to say how it was decided.
func (s *slackApp) Settle(ctx context.Context, apr *store.Approval) {
	if apr == nil || apr.Status == store.StatusPending {
		return
	}
	for _, m := range s.sent.take(apr.ID) {
		outcome := "→ " + outcomeText(apr)
		if err := s.call(ctx, "chat.update", s.bot, map[string]any{"channel": m.channel, "ts": m.ts,
			"text": slackEscape(clip(outcome, 200)), "blocks": s.blocks(m.text, "", outcome)}, nil); err != nil {
			s.logf("notify: slack: updating the message of %s: %v", apr.ID, err)
		}
	}
}
