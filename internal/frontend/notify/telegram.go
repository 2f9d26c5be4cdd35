package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store"
)

// The Telegram channel is a bot. A request is a message with inline
// buttons (Approve, Deny, Details); the daemon reads the presses by long
// polling (getUpdates), so no webhook and no open port. A written reply to
// the message ("deny use git clean", or a reason alone, then a button)
// carries a reason. Once the request is decided the message is edited to
// say how, and its buttons go.
//
// Wire format: the Bot API (https://core.telegram.org/bots/api): POST
// {api}/bot{token}/{method} with a JSON body, answered with
// {"ok":true,"result":…} or {"ok":false,"error_code":…,"description":…}.

// DefaultTelegramAPI is the Bot API's address.
const DefaultTelegramAPI = "https://api.telegram.org"

// Callback data of the buttons: a one-letter verb, a colon and the answer
// token (Telegram allows 64 bytes).
const (
	cbApprove = "a"
	cbDeny    = "d"
	cbDetails = "i"
	// maxCallbackData is Telegram's limit.
	maxCallbackData = 64
)

// ParseCallback reads a button's callback data: its verb (approve, deny
// or details) and token. ok is false for anything else.
func ParseCallback(data string) (verb, token string, ok bool) {
	if len(data) > maxCallbackData {
		return "", "", false
	}
	v, tok, found := strings.Cut(data, ":")
	if !found || tok == "" || strings.ContainsAny(tok, ": \n") {
		return "", "", false
	}
	switch v {
	case cbApprove:
		return "approve", tok, true
	case cbDeny:
		return "deny", tok, true
	case cbDetails:
		return "details", tok, true
	}
	return "", "", false
}

func validateTelegram(ch *ChannelConfig) error {
	if (ch.BotToken == "") == (ch.BotTokenFile == "") {
		return errors.New("set bot_token or bot_token_file (one of them)")
	}
	if _, err := strconv.ParseInt(ch.ChatID, 10, 64); err != nil {
		return fmt.Errorf("chat_id %q must be a number (a user's or a group's id)", ch.ChatID)
	}
	if len(ch.Allow) == 0 {
		return errors.New("allow must list the Telegram user ids that may answer")
	}
	for _, a := range ch.Allow {
		if _, err := strconv.ParseInt(a, 10, 64); err != nil {
			return fmt.Errorf("allow: %q is not a Telegram user id (a number)", a)
		}
	}
	return checkAPIURL(ch.APIURL, " (the bot token is in its path)")
}

// tgSent is a message the bot sent for a request.
type tgSent struct {
	approval string
	chat     int64
	id       int64
	token    string
	text     string
	reason   string // a reason written as a reply, for the next button press
}

type telegram struct {
	api     string // {api}/bot{token}/
	chat    int64
	http    *http.Client
	clk     clock.Clock
	logf    func(string, ...any)
	poll    time.Duration
	backoff func() *backoff

	mu   sync.Mutex
	sent *sentIndex[int64, *tgSent] // by message id
}

var (
	_ Channel  = (*telegram)(nil)
	_ Listener = (*telegram)(nil)
	_ Settler  = (*telegram)(nil)
)

func newTelegram(cc ChannelConfig, opts Options) (*telegram, error) {
	tok := cc.BotToken
	if cc.BotTokenFile != "" {
		b, err := os.ReadFile(cc.BotTokenFile)
		if err != nil {
			return nil, fmt.Errorf("bot_token_file: %w", err)
		}
		tok = strings.TrimSpace(string(b))
	}
	if tok == "" || strings.ContainsAny(tok, "/?# \n") {
		return nil, errors.New("the bot token is empty or malformed")
	}
	api := cc.APIURL
	if api == "" {
		api = DefaultTelegramAPI
	}
	chat, _ := strconv.ParseInt(cc.ChatID, 10, 64)
	return &telegram{api: strings.TrimRight(api, "/") + "/bot" + tok + "/", chat: chat, http: opts.HTTP, clk: opts.Clock,
		logf: opts.Logf, poll: opts.LongPoll, backoff: func() *backoff { return newBackoff(opts) },
		sent: newSentIndex[int64, *tgSent]()}, nil
}

// tgError is an error the Bot API returned.
type tgError struct {
	Code        int    `json:"error_code"`
	Description string `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

func (e *tgError) Error() string { return fmt.Sprintf("telegram: %d %s", e.Code, e.Description) }

// call calls a Bot API method and decodes its result into out (if not nil).
// The token is never in the errors it returns.
func (t *telegram) call(ctx context.Context, method string, params any, out any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return &permanent{err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.api+method, bytes.NewReader(body))
	if err != nil {
		return &permanent{errors.New("telegram: bad API address")}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	resp, err := t.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL holds the token
		}
		return fmt.Errorf("telegram: %s: %w", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("telegram: %s: %w", method, err)
	}
	var r struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		tgError
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("telegram: %s: HTTP %d, unreadable answer", method, resp.StatusCode)
	}
	if !r.OK {
		e := r.tgError
		if e.Code == 0 {
			e.Code = resp.StatusCode
		}
		if e.Code == http.StatusTooManyRequests || e.Code >= 500 {
			return &retryAfter{err: &e, wait: time.Duration(e.Parameters.RetryAfter) * time.Second}
		}
		return &permanent{&e}
	}
	if out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			return fmt.Errorf("telegram: %s: unreadable result: %w", method, err)
		}
	}
	return nil
}

// Telegram's types, as far as they are read.
type (
	tgUser struct {
		ID       int64  `json:"id"`
		IsBot    bool   `json:"is_bot"`
		Username string `json:"username"`
	}
	tgChat struct {
		ID int64 `json:"id"`
	}
	tgMessage struct {
		MessageID int64      `json:"message_id"`
		From      *tgUser    `json:"from"`
		Chat      tgChat     `json:"chat"`
		Text      string     `json:"text"`
		ReplyTo   *tgMessage `json:"reply_to_message"`
		Markup    *tgMarkup  `json:"reply_markup"`
	}
	tgCallback struct {
		ID      string     `json:"id"`
		From    tgUser     `json:"from"`
		Message *tgMessage `json:"message"`
		Data    string     `json:"data"`
	}
	tgUpdate struct {
		UpdateID int64       `json:"update_id"`
		Message  *tgMessage  `json:"message"`
		Callback *tgCallback `json:"callback_query"`
	}
	tgButton struct {
		Text string `json:"text"`
		Data string `json:"callback_data,omitempty"`
		URL  string `json:"url,omitempty"`
	}
	tgMarkup struct {
		Keyboard [][]tgButton `json:"inline_keyboard"`
	}
)

// maxTelegramText is the Bot API's limit on a message's text.
const maxTelegramText = 4096

func (t *telegram) Send(ctx context.Context, m *Message) error {
	mm := *m
	mm.Links = Links{} // the daemon's links do not reach a phone; the buttons answer
	text := clip(mm.Text(), maxTelegramText-200)
	params := map[string]any{"chat_id": t.chat, "text": text}
	if m.Head == nil && m.Alert == "" && m.AnswerToken != "" {
		params["reply_markup"] = tgMarkup{Keyboard: [][]tgButton{
			{{Text: "Approve", Data: cbApprove + ":" + m.AnswerToken}, {Text: "Deny", Data: cbDeny + ":" + m.AnswerToken}},
			{{Text: "Details", Data: cbDetails + ":" + m.AnswerToken}},
		}}
		if u, err := url.Parse(m.Links.Open); err == nil && u.Scheme == "https" && !isLoopback(u.Hostname()) {
			// The console, where the phone reaches it (base_url): Telegram refuses loopback URLs.
			mk := params["reply_markup"].(tgMarkup)
			mk.Keyboard[1] = append(mk.Keyboard[1], tgButton{Text: "Open details", URL: m.Links.Open})
			params["reply_markup"] = mk
		}
		params["text"] = text + "\nReply to this message to give a reason."
	}
	var sent tgMessage
	if err := t.call(ctx, "sendMessage", params, &sent); err != nil {
		return err
	}
	if m.AnswerToken != "" && m.ApprovalID != "" {
		s := &tgSent{approval: m.ApprovalID, chat: sent.Chat.ID, id: sent.MessageID, token: m.AnswerToken, text: text}
		t.sent.add(s.approval, s.id, s)
	}
	return nil
}

// Listen long-polls getUpdates until ctx ends.
func (t *telegram) Listen(ctx context.Context, h Handler) error {
	var offset int64
	bo := t.backoff()
	connected := false
	for ctx.Err() == nil {
		if !connected {
			// getMe answers at once: the connection is known good before
			// the first long poll returns.
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := t.call(cctx, "getMe", map[string]any{}, nil)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				h.Status(err)
				if !bo.wait(ctx) {
					return nil
				}
				continue
			}
			connected = true
			h.Status(nil)
		}
		var ups []tgUpdate
		secs := int(t.poll / time.Second)
		pctx, cancel := context.WithTimeout(ctx, t.poll+15*time.Second)
		err := t.call(pctx, "getUpdates", map[string]any{"offset": offset, "timeout": secs,
			"allowed_updates": []string{"message", "callback_query"}}, &ups)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			connected = false
			h.Status(err)
			if !bo.wait(ctx) {
				return nil
			}
			continue
		}
		bo.reset()
		h.Status(nil)
		for _, u := range ups {
			if u.UpdateID >= offset {
				offset = u.UpdateID + 1
			}
			t.handle(ctx, h, u)
		}
	}
	return nil
}

// who names a Telegram user as an identity.
func tgWho(u tgUser) string {
	s := "telegram:" + strconv.FormatInt(u.ID, 10)
	if u.Username != "" {
		s += " @" + u.Username
	}
	return s
}

func (t *telegram) handle(ctx context.Context, h Handler, u tgUpdate) {
	switch {
	case u.Callback != nil:
		t.handleCallback(ctx, h, u.Callback)
	case u.Message != nil && u.Message.ReplyTo != nil && u.Message.From != nil:
		t.handleReply(ctx, h, u.Message)
	}
}

func (t *telegram) ack(ctx context.Context, id, text string, alert bool) {
	if err := t.call(ctx, "answerCallbackQuery", map[string]any{"callback_query_id": id, "text": text, "show_alert": alert}, nil); err != nil {
		t.logf("notify: telegram: answering a button press: %v", err)
	}
}

func (t *telegram) handleCallback(ctx context.Context, h Handler, cb *tgCallback) {
	verb, tok, ok := ParseCallback(cb.Data)
	if !ok || cb.Message == nil || cb.Message.Chat.ID != t.chat || cb.From.IsBot {
		t.ack(ctx, cb.ID, "This button is not one of Overseer's.", true)
		return
	}
	s := t.sent.get(cb.Message.MessageID)
	t.mu.Lock()
	reason := ""
	if s != nil && s.token == tok {
		reason = s.reason
	}
	t.mu.Unlock()
	if verb == "details" {
		// Details are shown to people on the allow-list only.
		if !h.Allowed(tgWho(cb.From)) {
			t.ack(ctx, cb.ID, "You may not answer Overseer's requests.", true)
			return
		}
		text := "The request is no longer waiting."
		if s != nil {
			text = s.text
		}
		t.ack(ctx, cb.ID, clip(text, 190), true)
		return
	}
	out := h.Answer(ctx, Reply{Token: tok, Decision: verb, Identity: tgWho(cb.From), Reason: reason})
	switch {
	case errors.Is(out.Err, ErrNotAllowed):
		t.ack(ctx, cb.ID, "You may not answer Overseer's requests.", true)
	case out.Err != nil:
		t.ack(ctx, cb.ID, "Refused: "+refusalText(out.Err), true)
	case !out.Applied:
		t.ack(ctx, cb.ID, "Already answered: "+outcomeText(out.Approval), true)
		t.Settle(ctx, out.Approval)
	default:
		done := "Approved."
		if verb == "deny" {
			done = "Denied."
		}
		t.ack(ctx, cb.ID, done, false)
		t.Settle(ctx, out.Approval)
	}
}

// refusalText says why an answer was refused, without detail an attacker
// could use.
func refusalText(err error) string {
	s := err.Error()
	switch {
	case strings.Contains(s, "expired"):
		return "the request's answer time is over."
	case strings.Contains(s, "used already"):
		return "this request was answered already."
	case strings.Contains(s, "does not match"):
		return "the request changed since this message was sent."
	}
	return "this answer could not be verified."
}

func (t *telegram) handleReply(ctx context.Context, h Handler, msg *tgMessage) {
	if msg.Chat.ID != t.chat || msg.From.IsBot {
		return
	}
	s := t.sent.get(msg.ReplyTo.MessageID)
	if s == nil {
		// Not one this process knows (it was restarted, or the reply came
		// before sendMessage's answer): the buttons of the message replied
		// to carry its token.
		s = sentOf(msg.ReplyTo)
	}
	if s == nil {
		return // not a reply to a waiting request of ours
	}
	decision, reason, ok := ParseReply(msg.Text)
	if !ok {
		// A reason alone: kept for the next button press, if the person may answer.
		if !h.Allowed(tgWho(*msg.From)) {
			return
		}
		t.mu.Lock()
		s.reason = clip(strings.TrimSpace(msg.Text), 2000)
		t.mu.Unlock()
		t.reply(ctx, s, "Reason noted. Press Approve or Deny above.")
		return
	}
	out := h.Answer(ctx, Reply{Token: s.token, Decision: decision, Identity: tgWho(*msg.From), Reason: reason})
	switch {
	case errors.Is(out.Err, ErrNotAllowed):
	case out.Err != nil:
		t.reply(ctx, s, "Refused: "+refusalText(out.Err))
	default:
		t.Settle(ctx, out.Approval)
	}
}

// sentOf reads the token of a request message from its buttons.
func sentOf(m *tgMessage) *tgSent {
	if m == nil || m.Markup == nil {
		return nil
	}
	for _, row := range m.Markup.Keyboard {
		for _, b := range row {
			if v, tok, ok := ParseCallback(b.Data); ok && v == "approve" {
				return &tgSent{chat: m.Chat.ID, id: m.MessageID, token: tok, text: m.Text}
			}
		}
	}
	return nil
}

func (t *telegram) reply(ctx context.Context, s *tgSent, text string) {
	if err := t.call(ctx, "sendMessage", map[string]any{"chat_id": s.chat, "text": text,
		"reply_parameters": map[string]any{"message_id": s.id}}, nil); err != nil {
		t.logf("notify: telegram: replying: %v", err)
	}
}

// Settle edits the request's messages to say how it was decided and
// removes their buttons.
func (t *telegram) Settle(ctx context.Context, apr *store.Approval) {
	if apr == nil || apr.Status == store.StatusPending {
		return
	}
	for _, s := range t.sent.take(apr.ID) {
		text := clip(s.text, maxTelegramText-300) + "\n\n→ " + outcomeText(apr)
		if err := t.call(ctx, "editMessageText", map[string]any{"chat_id": s.chat, "message_id": s.id, "text": text,
			"reply_markup": tgMarkup{Keyboard: [][]tgButton{}}}, nil); err != nil {
			t.logf("notify: telegram: editing the message of %s: %v", apr.ID, err)
		}
	}
}
