package notifytest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// SlackMessage is a message the app posted.
type SlackMessage struct {
	Channel  string
	TS       string
	ThreadTS string
	Text     string
	Blocks   json.RawMessage
	Updates  []json.RawMessage // the blocks of each chat.update
	Texts    []string          // the text of each chat.update
}

// Buttons returns the values of the message's current buttons by action id.
func (m SlackMessage) Buttons() map[string]string {
	blocks := m.Blocks
	if len(m.Updates) > 0 {
		blocks = m.Updates[len(m.Updates)-1]
	}
	var bs []struct {
		Type     string `json:"type"`
		Elements []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	_ = json.Unmarshal(blocks, &bs)
	out := map[string]string{}
	for _, b := range bs {
		for _, e := range b.Elements {
			if e.Type == "button" {
				out[e.ActionID] = e.Value
			}
		}
	}
	return out
}

// Slack is a scripted Slack: the Web API methods apps.connections.open
// (app-level token), chat.postMessage and chat.update (bot token) and a
// Socket Mode WebSocket that says hello, delivers interactive and
// events_api envelopes and expects each to be acknowledged with
// {"envelope_id": …}; an envelope not acknowledged is delivered again on
// the next connection, as Slack retries.
type Slack struct {
	BotToken, AppToken string
	// PostDelay holds chat.postMessage's answer back for so long after the
	// message exists (and can be answered), as a slow network does.
	PostDelay time.Duration
	scripted

	conns   map[*websocket.Conn]bool
	opened  int
	nextTS  int64
	nextEnv int
	msgs    []*SlackMessage
	unacked map[string][]byte // envelope id → frame
	order   []string
	acked   map[string]bool
}

// NewSlack starts a scripted Slack on a random loopback port.
func NewSlack(t testing.TB, bot, app string) *Slack {
	s := &Slack{BotToken: bot, AppToken: app, conns: map[*websocket.Conn]bool{}, nextTS: 1700000000,
		unacked: map[string][]byte{}, acked: map[string]bool{}}
	s.init(t, "slack", http.HandlerFunc(s.serve))
	s.start("127.0.0.1:0")
	t.Cleanup(s.Stop)
	return s
}

// URL is the api_url to configure.
func (s *Slack) URL() string {
	return "http://" + s.hostPort() + "/api"
}

// Stop kills the server and its WebSockets.
func (s *Slack) Stop() {
	s.stop(func() {
		for c := range s.conns {
			c.CloseNow()
		}
		s.conns = map[*websocket.Conn]bool{}
	})
}

// Restart brings a stopped server back on the same port.
func (s *Slack) Restart() { s.restart() }

func slackJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Slack) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/link/") {
		s.socket(w, r)
		return
	}
	method, ok := strings.CutPrefix(r.URL.Path, "/api/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		slackJSON(w, map[string]any{"ok": false, "error": "invalid_request"})
		return
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	var p map[string]json.RawMessage
	b, _ := io.ReadAll(r.Body)
	if len(b) > 0 && json.Unmarshal(b, &p) != nil {
		slackJSON(w, map[string]any{"ok": false, "error": "invalid_json"})
		return
	}
	str := func(k string) string {
		var v string
		_ = json.Unmarshal(p[k], &v)
		return v
	}
	switch method {
	case "apps.connections.open":
		if tok != s.AppToken {
			slackJSON(w, map[string]any{"ok": false, "error": "invalid_auth"})
			return
		}
		s.mu.Lock()
		s.nextEnv++
		u := fmt.Sprintf("ws://%s/link/?ticket=%08x-ticket&app_id=A0TEST", s.addr, s.nextEnv)
		s.mu.Unlock()
		slackJSON(w, map[string]any{"ok": true, "url": u})
	case "chat.postMessage":
		if tok != s.BotToken {
			slackJSON(w, map[string]any{"ok": false, "error": "invalid_auth"})
			return
		}
		ch, text := str("channel"), str("text")
		if ch == "" {
			slackJSON(w, map[string]any{"ok": false, "error": "channel_not_found"})
			return
		}
		if text == "" && p["blocks"] == nil {
			slackJSON(w, map[string]any{"ok": false, "error": "no_text"})
			return
		}
		if bad := checkBlocks(p["blocks"]); bad != "" {
			slackJSON(w, map[string]any{"ok": false, "error": "invalid_blocks", "errors": []string{bad}})
			return
		}
		s.mu.Lock()
		s.nextTS++
		m := &SlackMessage{Channel: ch, TS: fmt.Sprintf("%d.%06d", s.nextTS, 100), ThreadTS: str("thread_ts"), Text: text, Blocks: p["blocks"]}
		s.msgs = append(s.msgs, m)
		s.cond.Broadcast()
		delay := s.PostDelay
		s.mu.Unlock()
		time.Sleep(delay)
		slackJSON(w, map[string]any{"ok": true, "channel": ch, "ts": m.TS,
			"message": map[string]any{"type": "message", "text": text, "user": "U0BOT", "ts": m.TS, "bot_id": "B0BOT", "blocks": p["blocks"]}})
	case "chat.update":
		if tok != s.BotToken {
			slackJSON(w, map[string]any{"ok": false, "error": "invalid_auth"})
			return
		}
		if bad := checkBlocks(p["blocks"]); bad != "" {
			slackJSON(w, map[string]any{"ok": false, "error": "invalid_blocks", "errors": []string{bad}})
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, m := range s.msgs {
			if m.Channel == str("channel") && m.TS == str("ts") {
				m.Updates = append(m.Updates, p["blocks"])
				m.Texts = append(m.Texts, str("text"))
				s.cond.Broadcast()
				slackJSON(w, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS, "text": str("text")})
				return
			}
		}
		slackJSON(w, map[string]any{"ok": false, "error": "message_not_found"})
	default:
		slackJSON(w, map[string]any{"ok": false, "error": "unknown_method"})
	}
}

// checkBlocks applies Block Kit's limits that matter here.
func checkBlocks(raw json.RawMessage) string {
	if raw == nil {
		return ""
	}
	var bs []struct {
		Type string `json:"type"`
		Text *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(raw, &bs); err != nil {
		return "blocks must be an array"
	}
	for _, b := range bs {
		if b.Type == "section" && (b.Text == nil || len(b.Text.Text) > 3000) {
			return "section text must be 1-3000 characters"
		}
		for _, e := range b.Elements {
			if len(e.Value) > 2000 {
				return "button value must be at most 2000 characters"
			}
		}
	}
	return ""
}

func (s *Slack) socket(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.URL.RawQuery, "ticket=") {
		http.Error(w, "no ticket", http.StatusBadRequest)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ctx := r.Context()
	hello, _ := json.Marshal(map[string]any{"type": "hello", "num_connections": 1,
		"debug_info":      map[string]any{"host": "applink-test", "build_number": 1, "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": "A0TEST"}})
	s.mu.Lock()
	if s.srv == nil {
		s.mu.Unlock()
		c.CloseNow()
		return
	}
	s.conns[c] = true
	s.opened++
	pending := [][]byte{}
	for _, id := range s.order {
		if f, ok := s.unacked[id]; ok {
			pending = append(pending, f)
		}
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	_ = c.Write(ctx, websocket.MessageText, hello)
	for _, f := range pending { // redelivered: they were never acknowledged
		_ = c.Write(ctx, websocket.MessageText, f)
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			return
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(b, &ack) == nil && ack.EnvelopeID != "" {
			s.mu.Lock()
			if _, ok := s.unacked[ack.EnvelopeID]; ok {
				delete(s.unacked, ack.EnvelopeID)
				s.acked[ack.EnvelopeID] = true
			}
			s.cond.Broadcast()
			s.mu.Unlock()
		}
	}
}

// deliver sends an envelope to the open connections (or keeps it for the
// next one) and returns its id.
func (s *Slack) deliver(typ string, payload any) string {
	s.mu.Lock()
	s.nextEnv++
	id := fmt.Sprintf("%08x-%04x-4a5b-9c6d-%012x", s.nextEnv, s.nextEnv, s.nextEnv)
	f, _ := json.Marshal(map[string]any{"envelope_id": id, "payload": payload, "type": typ, "accepts_response_payload": false})
	s.unacked[id] = f
	s.order = append(s.order, id)
	var conns []*websocket.Conn
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = c.Write(ctx, websocket.MessageText, f)
		cancel()
		break // Slack sends an envelope to one connection
	}
	return id
}

// Click makes user press the button actionID of message ts; it returns
// the envelope id.
func (s *Slack) Click(user, username string, m SlackMessage, actionID string) string {
	s.t.Helper()
	value, ok := m.Buttons()[actionID]
	if !ok {
		s.t.Fatalf("slack: no button %s on %s", actionID, m.TS)
	}
	return s.deliver("interactive", map[string]any{
		"type": "block_actions", "user": map[string]any{"id": user, "username": username, "name": username, "team_id": "T0TEST"},
		"api_app_id": "A0TEST", "token": "verification-token-unused", "trigger_id": "123.456.abc",
		"container": map[string]any{"type": "message", "message_ts": m.TS, "channel_id": m.Channel, "is_ephemeral": false},
		"team":      map[string]any{"id": "T0TEST", "domain": "test"}, "channel": map[string]any{"id": m.Channel, "name": "overseer"},
		"message":      map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "blocks": m.Blocks},
		"response_url": "https://hooks.slack.invalid/actions/T0TEST/1/xyz",
		"actions": []map[string]any{{"action_id": actionID, "block_id": "overseer_answer", "value": value, "type": "button",
			"text": map[string]any{"type": "plain_text", "text": actionID}, "action_ts": fmt.Sprint(time.Now().Unix())}},
	})
}

// ThreadReply makes user write text in the thread of message m.
func (s *Slack) ThreadReply(user string, m SlackMessage, text string) string {
	s.mu.Lock()
	s.nextTS++
	ts := fmt.Sprintf("%d.%06d", s.nextTS, 200)
	s.mu.Unlock()
	return s.deliver("events_api", map[string]any{"token": "verification-token-unused", "team_id": "T0TEST", "api_app_id": "A0TEST",
		"event": map[string]any{"type": "message", "channel": m.Channel, "user": user, "text": text, "ts": ts, "thread_ts": m.TS,
			"channel_type": "channel", "event_ts": ts},
		"type": "event_callback", "event_id": "Ev0" + ts, "event_time": time.Now().Unix()})
}

// WaitMessage waits for a top-level message with buttons whose blocks contain substr.
func (s *Slack) WaitMessage(substr string, d time.Duration) SlackMessage {
	s.t.Helper()
	var got SlackMessage
	s.waitFor(d, "a message with "+substr, func() bool {
		for _, m := range s.msgs {
			if m.ThreadTS == "" && strings.Contains(string(m.Blocks), substr) && len(m.Buttons()) > 0 {
				got = *m
				return true
			}
		}
		return false
	})
	return got
}

// WaitUpdate waits until message ts was updated to text containing substr.
func (s *Slack) WaitUpdate(ts, substr string, d time.Duration) {
	s.t.Helper()
	s.waitFor(d, "an update of "+ts+" with "+substr, func() bool {
		for _, m := range s.msgs {
			if m.TS == ts && len(m.Updates) > 0 && strings.Contains(string(m.Updates[len(m.Updates)-1]), substr) {
				return true
			}
		}
		return false
	})
}

// WaitThread waits for a reply of the app in the thread of ts containing substr.
func (s *Slack) WaitThread(ts, substr string, d time.Duration) {
	s.t.Helper()
	s.waitFor(d, "a thread reply with "+substr, func() bool {
		for _, m := range s.msgs {
			if m.ThreadTS == ts && strings.Contains(m.Text, substr) {
				return true
			}
		}
		return false
	})
}

// WaitAck waits until envelope id was acknowledged.
func (s *Slack) WaitAck(id string, d time.Duration) {
	s.t.Helper()
	s.waitFor(d, "the ack of "+id, func() bool { return s.acked[id] })
}

// WaitConnections waits until n Socket Mode connections were opened in all.
func (s *Slack) WaitConnections(n int, d time.Duration) {
	s.t.Helper()
	s.waitFor(d, fmt.Sprintf("%d connections", n), func() bool { return s.opened >= n })
}

// Connections is how many Socket Mode connections were opened in all.
func (s *Slack) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened
}

// Messages returns the messages posted, in order.
func (s *Slack) Messages() []SlackMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SlackMessage
	for _, m := range s.msgs {
		out = append(out, *m)
	}
	return out
}
