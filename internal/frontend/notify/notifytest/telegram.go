// Package notifytest has scripted servers that speak the wire formats of
// the services Overseer's two-way notification channels use (the Telegram
// Bot API, ntfy's publish endpoint and JSON stream), on loopback, for
// tests. They keep what they were sent, let a test play the person (press
// a button, reply, publish), and can be stopped and started again on the
// same port to test reconnection.
package notifytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TGMessage is a message the bot sent, as the scripted server keeps it.
type TGMessage struct {
	ID      int64
	Chat    int64
	Text    string
	Buttons [][]TGButton // the inline keyboard (empty after an edit that removed it)
	Edits   []string     // texts it was edited to
	ReplyTo int64
}

// TGButton is an inline keyboard button.
type TGButton struct {
	Text string `json:"text"`
	Data string `json:"callback_data,omitempty"`
	URL  string `json:"url,omitempty"`
}

// CallbackAnswer is an answerCallbackQuery call.
type CallbackAnswer struct {
	ID    string
	Text  string
	Alert bool
}

// Telegram is a scripted Bot API server (https://core.telegram.org/bots/api):
// POST /bot<token>/<method> with a JSON body, answered {"ok":true,"result":…}
// or {"ok":false,"error_code":…,"description":…}. It implements
// sendMessage, getUpdates (long polling, offsets confirm updates),
// editMessageText and answerCallbackQuery, checking their parameters as
// the Bot API does.
type Telegram struct {
	scripted
	Token string

	nextMsg  int64
	nextUpd  int64
	nextCB   int
	updates  []json.RawMessage // not yet confirmed, with their ids
	updIDs   []int64
	msgs     map[int64]*TGMessage
	order    []int64
	answers  []CallbackAnswer
	polls    int
	requests []string // methods called, in order
}

// BotID is the scripted bot's user id.
const BotID = 7000000001

// NewTelegram starts a scripted Bot API on a random loopback port.
func NewTelegram(t testing.TB, token string) *Telegram {
	tg := &Telegram{Token: token, nextMsg: 100, nextUpd: 500000, msgs: map[int64]*TGMessage{}}
	tg.init(t, "telegram", http.HandlerFunc(tg.serve))
	tg.start("127.0.0.1:0")
	t.Cleanup(tg.Stop)
	return tg
}

// URL is the api_url to configure.
func (tg *Telegram) URL() string {
	return "http://" + tg.hostPort()
}

// Stop kills the server (open long polls are cut).
func (tg *Telegram) Stop() { tg.stop(nil) }

// Restart brings a stopped server back on the same port.
func (tg *Telegram) Restart() { tg.restart() }

func write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func tgFail(w http.ResponseWriter, code int, desc string) {
	write(w, code, map[string]any{"ok": false, "error_code": code, "description": desc})
}

func tgOK(w http.ResponseWriter, result any) {
	write(w, http.StatusOK, map[string]any{"ok": true, "result": result})
}

func (tg *Telegram) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		tgFail(w, http.StatusNotFound, "Not Found")
		return
	}
	if token != tg.Token {
		tgFail(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	var p map[string]json.RawMessage
	if r.Method == http.MethodPost {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			tgFail(w, http.StatusBadRequest, "Bad Request: unsupported content type "+ct)
			return
		}
		b, _ := io.ReadAll(r.Body)
		if len(b) > 0 {
			if err := json.Unmarshal(b, &p); err != nil {
				tgFail(w, http.StatusBadRequest, "Bad Request: can't parse JSON object")
				return
			}
		}
	}
	tg.mu.Lock()
	tg.requests = append(tg.requests, method)
	tg.mu.Unlock()
	switch method {
	case "getMe":
		tgOK(w, map[string]any{"id": BotID, "is_bot": true, "first_name": "Overseer", "username": "overseer_test_bot"})
	case "sendMessage":
		tg.sendMessage(w, p)
	case "editMessageText":
		tg.editMessageText(w, p)
	case "answerCallbackQuery":
		var a CallbackAnswer
		_ = json.Unmarshal(p["callback_query_id"], &a.ID)
		_ = json.Unmarshal(p["text"], &a.Text)
		_ = json.Unmarshal(p["show_alert"], &a.Alert)
		if a.ID == "" {
			tgFail(w, http.StatusBadRequest, "Bad Request: query is too old and response timeout expired or query ID is invalid")
			return
		}
		if len([]rune(a.Text)) > 200 {
			tgFail(w, http.StatusBadRequest, "Bad Request: MESSAGE_TOO_LONG")
			return
		}
		tg.mu.Lock()
		tg.answers = append(tg.answers, a)
		tg.cond.Broadcast()
		tg.mu.Unlock()
		tgOK(w, true)
	case "getUpdates":
		tg.getUpdates(w, r, p)
	default:
		tgFail(w, http.StatusNotFound, "Not Found: method not found")
	}
}

func (tg *Telegram) chat() map[string]any {
	return map[string]any{"id": 0, "first_name": "Ann", "username": "ann", "type": "private"}
}

func (tg *Telegram) message(m *TGMessage) map[string]any {
	chat := tg.chat()
	chat["id"] = m.Chat
	out := map[string]any{"message_id": m.ID, "from": map[string]any{"id": BotID, "is_bot": true, "first_name": "Overseer",
		"username": "overseer_test_bot"}, "chat": chat, "date": time.Now().Unix(), "text": m.Text}
	if len(m.Edits) > 0 {
		out["text"] = m.Edits[len(m.Edits)-1]
		out["edit_date"] = time.Now().Unix()
	}
	if len(m.Buttons) > 0 {
		out["reply_markup"] = map[string]any{"inline_keyboard": m.Buttons}
	}
	return out
}

func readMarkup(raw json.RawMessage) ([][]TGButton, string) {
	if raw == nil {
		return nil, ""
	}
	var mk struct {
		Keyboard [][]TGButton `json:"inline_keyboard"`
	}
	if err := json.Unmarshal(raw, &mk); err != nil {
		return nil, "Bad Request: can't parse reply keyboard markup JSON object"
	}
	for _, row := range mk.Keyboard {
		for _, b := range row {
			if len(b.Data) > 64 {
				return nil, "Bad Request: BUTTON_DATA_INVALID"
			}
			if b.Data == "" && b.URL == "" {
				return nil, "Bad Request: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard"
			}
			if b.URL != "" && (strings.Contains(b.URL, "://127.") || strings.Contains(b.URL, "://localhost")) {
				return nil, "Bad Request: inline keyboard button URL '" + b.URL + "' is invalid: Wrong HTTP URL"
			}
		}
	}
	return mk.Keyboard, ""
}

func (tg *Telegram) sendMessage(w http.ResponseWriter, p map[string]json.RawMessage) {
	var chat int64
	var text string
	if err := json.Unmarshal(p["chat_id"], &chat); err != nil || chat == 0 {
		tgFail(w, http.StatusBadRequest, "Bad Request: chat not found")
		return
	}
	_ = json.Unmarshal(p["text"], &text)
	if strings.TrimSpace(text) == "" {
		tgFail(w, http.StatusBadRequest, "Bad Request: message text is empty")
		return
	}
	if len([]rune(text)) > 4096 {
		tgFail(w, http.StatusBadRequest, "Bad Request: message is too long")
		return
	}
	kb, bad := readMarkup(p["reply_markup"])
	if bad != "" {
		tgFail(w, http.StatusBadRequest, bad)
		return
	}
	var rp struct {
		MessageID int64 `json:"message_id"`
	}
	_ = json.Unmarshal(p["reply_parameters"], &rp)
	tg.mu.Lock()
	tg.nextMsg++
	m := &TGMessage{ID: tg.nextMsg, Chat: chat, Text: text, Buttons: kb, ReplyTo: rp.MessageID}
	tg.msgs[m.ID] = m
	tg.order = append(tg.order, m.ID)
	out := tg.message(m)
	tg.cond.Broadcast()
	tg.mu.Unlock()
	tgOK(w, out)
}

func (tg *Telegram) editMessageText(w http.ResponseWriter, p map[string]json.RawMessage) {
	var chat, id int64
	var text string
	_ = json.Unmarshal(p["chat_id"], &chat)
	_ = json.Unmarshal(p["message_id"], &id)
	_ = json.Unmarshal(p["text"], &text)
	kb, bad := readMarkup(p["reply_markup"])
	if bad != "" {
		tgFail(w, http.StatusBadRequest, bad)
		return
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	m := tg.msgs[id]
	if m == nil || m.Chat != chat {
		tgFail(w, http.StatusBadRequest, "Bad Request: message to edit not found")
		return
	}
	if strings.TrimSpace(text) == "" {
		tgFail(w, http.StatusBadRequest, "Bad Request: message text is empty")
		return
	}
	m.Edits = append(m.Edits, text)
	m.Buttons = kb // no reply_markup removes the keyboard, as the Bot API does
	tg.cond.Broadcast()
	tgOK(w, tg.message(m))
}

func (tg *Telegram) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]json.RawMessage) {
	var offset, timeout int64
	_ = json.Unmarshal(p["offset"], &offset)
	_ = json.Unmarshal(p["timeout"], &timeout)
	deadline := time.Now().Add(time.Duration(timeout) * time.Second)
	tg.mu.Lock()
	defer tg.mu.Unlock()
	tg.polls++
	tg.cond.Broadcast()
	// An offset confirms every update before it.
	for len(tg.updIDs) > 0 && offset > 0 && tg.updIDs[0] < offset {
		tg.updIDs, tg.updates = tg.updIDs[1:], tg.updates[1:]
	}
	for len(tg.updates) == 0 && time.Now().Before(deadline) && tg.serving(r) {
		tg.wait(time.Until(deadline))
	}
	if tg.srv == nil {
		return // killed: the connection is cut
	}
	out := append([]json.RawMessage{}, tg.updates...)
	tgOK(w, out)
}

func (tg *Telegram) push(update map[string]any) {
	tg.nextUpd++
	update["update_id"] = tg.nextUpd
	b, _ := json.Marshal(update)
	tg.updates = append(tg.updates, b)
	tg.updIDs = append(tg.updIDs, tg.nextUpd)
	tg.cond.Broadcast()
}

func tgUser(id int64, username string) map[string]any {
	u := map[string]any{"id": id, "is_bot": false, "first_name": "User" + strconv.FormatInt(id, 10), "language_code": "en"}
	if username != "" {
		u["username"] = username
	}
	return u
}

// Press makes user (id, username) press the button with callback data
// data under message msg; it returns the callback query's id.
func (tg *Telegram) Press(userID int64, username string, msg int64, data string) string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	m := tg.msgs[msg]
	if m == nil {
		tg.t.Fatalf("telegram: no message %d", msg)
	}
	tg.nextCB++
	id := fmt.Sprintf("%d%06d", userID, tg.nextCB)
	tg.push(map[string]any{"callback_query": map[string]any{"id": id, "from": tgUser(userID, username),
		"message": tg.message(m), "chat_instance": "-1234567890123456789", "data": data}})
	return id
}

// Reply makes user write text as a reply to message msg.
func (tg *Telegram) Reply(userID int64, username string, msg int64, text string) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	m := tg.msgs[msg]
	if m == nil {
		tg.t.Fatalf("telegram: no message %d", msg)
	}
	tg.nextMsg++
	chat := tg.chat()
	chat["id"] = m.Chat
	tg.push(map[string]any{"message": map[string]any{"message_id": tg.nextMsg, "from": tgUser(userID, username), "chat": chat,
		"date": time.Now().Unix(), "text": text, "reply_to_message": tg.message(m)}})
}

// WaitMessage waits until the bot has sent a message with buttons whose
// text contains substr, and returns it.
func (tg *Telegram) WaitMessage(substr string, d time.Duration) *TGMessage {
	tg.t.Helper()
	var found *TGMessage
	tg.waitFor(d, "a message with "+strconv.Quote(substr), func() bool {
		for _, id := range tg.order {
			if m := tg.msgs[id]; strings.Contains(m.Text, substr) && len(m.Buttons) > 0 {
				c := *m
				found = &c
				return true
			}
		}
		return false
	})
	return found
}

// WaitEdit waits until message id was edited to a text containing substr.
func (tg *Telegram) WaitEdit(id int64, substr string, d time.Duration) string {
	tg.t.Helper()
	var got string
	tg.waitFor(d, fmt.Sprintf("message %d edited to %q", id, substr), func() bool {
		m := tg.msgs[id]
		if m != nil && len(m.Edits) > 0 && strings.Contains(m.Edits[len(m.Edits)-1], substr) {
			got = m.Edits[len(m.Edits)-1]
			return true
		}
		return false
	})
	return got
}

// WaitCallbackAnswer waits for the answer to callback query id.
func (tg *Telegram) WaitCallbackAnswer(id string, d time.Duration) CallbackAnswer {
	tg.t.Helper()
	var got CallbackAnswer
	tg.waitFor(d, "the answer to callback "+id, func() bool {
		for _, a := range tg.answers {
			if a.ID == id {
				got = a
				return true
			}
		}
		return false
	})
	return got
}

// WaitPolls waits until getUpdates was called n times in all.
func (tg *Telegram) WaitPolls(n int, d time.Duration) {
	tg.t.Helper()
	tg.waitFor(d, fmt.Sprintf("%d polls", n), func() bool { return tg.polls >= n })
}

// Polls is how many times getUpdates was called.
func (tg *Telegram) Polls() int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.polls
}

// Messages returns the messages sent, in order.
func (tg *Telegram) Messages() []TGMessage {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	var out []TGMessage
	for _, id := range tg.order {
		out = append(out, *tg.msgs[id])
	}
	return out
}

// Pending is how many updates were not confirmed yet.
func (tg *Telegram) Pending() int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return len(tg.updates)
}

// lockedBuf is a bytes buffer safe for a process's output.
type lockedBuf struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
