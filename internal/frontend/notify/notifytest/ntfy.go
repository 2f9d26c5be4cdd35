package notifytest

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NtfyAction is an action button of a published message, as ntfy parses
// its short format ("http, Label, URL, method=POST, body=…, headers.X=…,
// clear=true; …").
type NtfyAction struct {
	ID      string            `json:"id"`
	Action  string            `json:"action"`
	Label   string            `json:"label"`
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	Clear   bool              `json:"clear"`
}

// NtfyMessage is a published message, with the fields of ntfy's JSON.
type NtfyMessage struct {
	ID       string       `json:"id"`
	Time     int64        `json:"time"`
	Expires  int64        `json:"expires"`
	Event    string       `json:"event"`
	Topic    string       `json:"topic"`
	Message  string       `json:"message"`
	Title    string       `json:"title,omitempty"`
	Tags     []string     `json:"tags,omitempty"`
	Priority int          `json:"priority,omitempty"`
	Click    string       `json:"click,omitempty"`
	Actions  []NtfyAction `json:"actions,omitempty"`
}

// Ntfy is a scripted ntfy server (https://docs.ntfy.sh): POST/PUT /<topic>
// publishes (the body is the message; Title, Priority, Tags, Click and
// Actions headers), GET /<topic>/json streams one JSON object a line (an
// "open" event, the cached messages after ?since=<id|unix time>, then live
// ones and "keepalive" events). With Tokens set, every request needs
// "Authorization: Bearer <token>" and the token's topics.
type Ntfy struct {
	scripted
	// Tokens maps an access token to the topics it may read and write;
	// nil means anyone may do anything (like the public server).
	Tokens map[string][]string
	// Keepalive is the stream's keepalive interval (default 45s).
	Keepalive time.Duration

	msgs []NtfyMessage
	subs int
}

// NewNtfy starts a scripted ntfy server on a random loopback port.
func NewNtfy(t testing.TB) *Ntfy {
	n := &Ntfy{Keepalive: 45 * time.Second}
	n.init(t, "ntfy", http.HandlerFunc(n.serve))
	n.start("127.0.0.1:0")
	t.Cleanup(n.Stop)
	return n
}

// URL is the server's address.
func (n *Ntfy) URL() string {
	return "http://" + n.hostPort()
}

// Stop kills the server (streams are cut); the message cache is kept.
func (n *Ntfy) Stop() { n.stop(nil) }

// Restart brings a stopped server back on the same port.
func (n *Ntfy) Restart() { n.restart() }

func ntfyError(w http.ResponseWriter, code, http int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http)
	fmt.Fprintf(w, `{"code":%d,"http":%d,"error":%q,"link":"https://ntfy.sh/docs/publish/"}`+"\n", code, http, msg)
}

func (n *Ntfy) allowed(r *http.Request, topic string) bool {
	if n.Tokens == nil {
		return true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	for _, t := range n.Tokens[tok] {
		if t == topic {
			return true
		}
	}
	return false
}

func newID() string {
	const abc = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var b [12]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = abc[int(b[i])%len(abc)]
	}
	return string(b[:])
}

func (n *Ntfy) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] != "" && (r.Method == http.MethodPost || r.Method == http.MethodPut):
		n.publish(w, r, parts[0])
	case len(parts) == 2 && parts[1] == "json" && r.Method == http.MethodGet:
		n.subscribe(w, r, parts[0])
	default:
		ntfyError(w, 40401, http.StatusNotFound, "page not found")
	}
}

func (n *Ntfy) publish(w http.ResponseWriter, r *http.Request, topic string) {
	if !n.allowed(r, topic) {
		ntfyError(w, 40301, http.StatusForbidden, "forbidden")
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4096+1))
	if len(body) > 4096 {
		ntfyError(w, 41301, http.StatusRequestEntityTooLarge, "message too large")
		return
	}
	now := time.Now().Unix()
	m := NtfyMessage{ID: newID(), Time: now, Expires: now + 43200, Event: "message", Topic: topic,
		Message: string(body), Title: r.Header.Get("Title"), Click: r.Header.Get("Click")}
	if t := r.Header.Get("Tags"); t != "" {
		m.Tags = strings.Split(t, ",")
	}
	switch p := r.Header.Get("Priority"); p {
	case "", "default", "3":
	case "min", "1":
		m.Priority = 1
	case "low", "2":
		m.Priority = 2
	case "high", "4":
		m.Priority = 4
	case "max", "urgent", "5":
		m.Priority = 5
	default:
		ntfyError(w, 40007, http.StatusBadRequest, "invalid priority")
		return
	}
	if a := r.Header.Get("Actions"); a != "" {
		acts, err := parseActions(a)
		if err != nil {
			ntfyError(w, 40018, http.StatusBadRequest, "invalid request: actions invalid, "+err.Error())
			return
		}
		m.Actions = acts
	}
	n.mu.Lock()
	n.msgs = append(n.msgs, m)
	n.cond.Broadcast()
	n.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}

// parseActions reads ntfy's short action format (no quoting: values with
// commas are refused here, which is all Overseer needs).
func parseActions(s string) ([]NtfyAction, error) {
	var out []NtfyAction
	for _, def := range strings.Split(s, ";") {
		f := strings.Split(def, ",")
		if len(f) < 3 {
			return nil, fmt.Errorf("action %q: want action, label, url", strings.TrimSpace(def))
		}
		a := NtfyAction{ID: newID(), Action: strings.TrimSpace(f[0]), Label: strings.TrimSpace(f[1]), URL: strings.TrimSpace(f[2])}
		switch a.Action {
		case "view", "http", "broadcast":
		default:
			return nil, fmt.Errorf("action type %q unknown", a.Action)
		}
		for _, kv := range f[3:] {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok {
				return nil, fmt.Errorf("%q is not key=value", kv)
			}
			switch {
			case k == "method":
				a.Method = v
			case k == "body":
				a.Body = v
			case k == "clear":
				a.Clear = v == "true"
			case strings.HasPrefix(k, "headers."):
				if a.Headers == nil {
					a.Headers = map[string]string{}
				}
				a.Headers[strings.TrimPrefix(k, "headers.")] = v
			default:
				return nil, fmt.Errorf("key %q unknown", k)
			}
		}
		if a.Action == "http" && a.Method == "" {
			a.Method = http.MethodPost
		}
		out = append(out, a)
	}
	if len(out) > 3 {
		return nil, fmt.Errorf("too many actions")
	}
	return out, nil
}

func (n *Ntfy) subscribe(w http.ResponseWriter, r *http.Request, topic string) {
	if !n.allowed(r, topic) {
		ntfyError(w, 40301, http.StatusForbidden, "forbidden")
		return
	}
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	_ = enc.Encode(map[string]any{"id": newID(), "time": time.Now().Unix(), "event": "open", "topic": topic})
	fl.Flush()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.subs++
	n.cond.Broadcast()
	// The cached messages after since, then live ones.
	next := 0
	since := r.URL.Query().Get("since")
	if since != "" && since != "all" {
		if ts, err := strconv.ParseInt(since, 10, 64); err == nil {
			for next < len(n.msgs) && n.msgs[next].Time < ts {
				next++
			}
		} else {
			for i, m := range n.msgs {
				if m.ID == since {
					next = i + 1
				}
			}
		}
	} else if since == "" {
		next = len(n.msgs)
	}
	lastKeep := time.Now()
	for n.serving(r) {
		wrote := false
		for ; next < len(n.msgs); next++ {
			if n.msgs[next].Topic == topic {
				_ = enc.Encode(n.msgs[next])
				wrote = true
			}
		}
		if time.Since(lastKeep) >= n.Keepalive {
			_ = enc.Encode(map[string]any{"id": newID(), "time": time.Now().Unix(), "event": "keepalive", "topic": topic})
			lastKeep, wrote = time.Now(), true
		}
		if wrote {
			fl.Flush()
		}
		n.wait(50 * time.Millisecond)
	}
}

// WaitMessage waits for a message on topic whose text contains substr.
func (n *Ntfy) WaitMessage(topic, substr string, d time.Duration) NtfyMessage {
	n.t.Helper()
	var got NtfyMessage
	n.waitFor(d, fmt.Sprintf("a message on %s with %q", topic, substr), func() bool {
		for _, m := range n.msgs {
			if m.Topic == topic && strings.Contains(m.Message, substr) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// WaitSubscribers waits until the reply topic was subscribed to k times in all.
func (n *Ntfy) WaitSubscribers(k int, d time.Duration) {
	n.t.Helper()
	n.waitFor(d, fmt.Sprintf("%d subscriptions", k), func() bool { return n.subs >= k })
}

// Subscriptions is how many subscriptions were opened in all.
func (n *Ntfy) Subscriptions() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.subs
}

// Tap performs the action labelled label of m as the phone app does: an
// http action sends its request (method, headers, body) to its URL.
func (n *Ntfy) Tap(m NtfyMessage, label string) {
	n.t.Helper()
	for _, a := range m.Actions {
		if a.Label != label {
			continue
		}
		if a.Action != "http" {
			n.t.Fatalf("ntfy: action %q is %s, not http", label, a.Action)
		}
		req, err := http.NewRequest(a.Method, a.URL, bytes.NewReader([]byte(a.Body)))
		if err != nil {
			n.t.Fatal(err)
		}
		for k, v := range a.Headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			n.t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			n.t.Fatalf("ntfy: the action's request got HTTP %d", resp.StatusCode)
		}
		return
	}
	n.t.Fatalf("ntfy: no action %q in %+v", label, m.Actions)
}

// Publish publishes text to topic with an access token (empty for none)
// and returns the HTTP status, as anyone who knows the topic can.
func (n *Ntfy) Publish(topic, token, text string) int {
	n.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, n.URL()+"/"+topic, strings.NewReader(text))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		n.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
