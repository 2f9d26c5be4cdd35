package notify

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
)

// An ntfy channel with reply_topic is two-way: the notification's action
// buttons are ntfy "http" actions that publish "approve <token>" or
// "deny <token>" to the reply topic on the same server, and the daemon
// reads that topic as a JSON stream (GET /<reply_topic>/json), a
// connection it opens itself. ntfy does not say who published: the
// identity is whoever may write the reply topic (on a server with access
// control, the holder of reply_token), so each answer's token does the
// rest (see docs/web.md).
//
// Wire format (https://docs.ntfy.sh/publish/, /subscribe/api/): one JSON
// object a line, {"id","time","event":"open"|"keepalive"|"message",
// "topic","message",…}; ?since=<id> resumes after a message id.

// ntfyKeepalive is how long the stream may stay silent before it is taken
// as lost (ntfy sends a keepalive every 45s by default).
const ntfyKeepalive = 2 * time.Minute

// maxNtfyLine bounds one line of the JSON stream.
const maxNtfyLine = 64 << 10

// ParseNtfyAnswer reads what an action button published: "approve
// <token>" or "deny <token>", nothing else.
func ParseNtfyAnswer(s string) (decision, token string, ok bool) {
	if len(s) > 256 {
		return "", "", false
	}
	f := strings.Fields(s)
	if len(f) != 2 || len(f[1]) != 32 || strings.ContainsFunc(f[1], func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		return "", "", false
	}
	switch f[0] {
	case "approve", "deny":
		return f[0], f[1], true
	}
	return "", "", false
}

type ntfyTwoWay struct {
	*ntfy
	server     string
	replyTopic string
	replyToken string
	clk        clock.Clock
	backoff    func() *backoff
	keepalive  time.Duration

	mu    sync.Mutex
	since string // the last reply message seen
}

var (
	_ Channel  = (*ntfyTwoWay)(nil)
	_ Listener = (*ntfyTwoWay)(nil)
)

func newNtfyTwoWay(cc ChannelConfig, opts Options) *ntfyTwoWay {
	server := strings.TrimRight(cc.URL, "/")
	return &ntfyTwoWay{
		ntfy:   &ntfy{url: server + "/" + cc.Topic, token: cc.Token, priority: cc.Priority, http: opts.HTTP},
		server: server, replyTopic: cc.ReplyTopic, replyToken: cc.ReplyToken, clk: opts.Clock,
		backoff: func() *backoff { return newBackoff(opts) }, keepalive: ntfyKeepalive,
		since: strconv.FormatInt(opts.Clock.Now().Unix(), 10),
	}
}

// actionValue keeps a value of ntfy's short action format safe: no
// separators (the token and the URL have none; this is a guard).
func actionValue(s string) string {
	return strings.NewReplacer(",", " ", ";", " ", "\"", " ", "'", " ").Replace(headerSafe(s))
}

func (n *ntfyTwoWay) Send(ctx context.Context, m *Message) error {
	if m.AnswerToken == "" || m.Head != nil || m.Alert != "" {
		return n.ntfy.Send(ctx, m)
	}
	mm := *m
	mm.Links = Links{}
	hdr := map[string]string{"Title": headerSafe(clip(m.Title, 200)), "Tags": "warning"}
	pr := n.priority
	if pr == "" {
		pr = "high"
	}
	hdr["Priority"] = pr
	if m.Links.Open != "" {
		hdr["Click"] = m.Links.Open
	}
	reply := n.server + "/" + n.replyTopic
	auth := ""
	if n.replyToken != "" {
		auth = ", headers.Authorization=" + actionValue("Bearer "+n.replyToken)
	}
	act := func(label, decision string) string {
		return fmt.Sprintf("http, %s, %s, method=POST, body=%s %s%s, clear=true", label, actionValue(reply), decision,
			actionValue(m.AnswerToken), auth)
	}
	hdr["Actions"] = act("Approve", "approve") + "; " + act("Deny", "deny")
	if n.token != "" {
		hdr["Authorization"] = "Bearer " + n.token
	}
	return post(ctx, n.http, n.url, "text/plain; charset=utf-8", []byte(mm.Text()), hdr)
}

// ntfyEvent is one line of the JSON stream.
type ntfyEvent struct {
	ID      string `json:"id"`
	Time    int64  `json:"time"`
	Event   string `json:"event"`
	Topic   string `json:"topic"`
	Message string `json:"message"`
}

// Listen reads the reply topic until ctx ends, reconnecting with backoff
// and resuming after the last message seen.
func (n *ntfyTwoWay) Listen(ctx context.Context, h Handler) error {
	bo := n.backoff()
	for ctx.Err() == nil {
		err := n.stream(ctx, h, bo)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			err = errors.New("the stream ended")
		}
		h.Status(fmt.Errorf("ntfy: %w", err))
		if !bo.wait(ctx) {
			return nil
		}
	}
	return nil
}

func (n *ntfyTwoWay) stream(ctx context.Context, h Handler, bo *backoff) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n.mu.Lock()
	since := n.since
	n.mu.Unlock()
	u := n.server + "/" + url.PathEscape(n.replyTopic) + "/json?since=" + url.QueryEscape(since)
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", userAgent)
	if n.token != "" {
		req.Header.Set("Authorization", "Bearer "+n.token)
	}
	resp, err := n.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("subscribing to the reply topic: HTTP %d", resp.StatusCode)
	}
	// A silent stream is a lost one.
	watchdog := time.AfterFunc(n.keepalive, cancel)
	defer watchdog.Stop()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 4096), maxNtfyLine)
	for sc.Scan() {
		watchdog.Reset(n.keepalive)
		var e ntfyEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // not an event: skipped, never guessed
		}
		switch e.Event {
		case "open", "keepalive":
			bo.reset()
			h.Status(nil)
		case "message":
			if e.Topic != "" && e.Topic != n.replyTopic {
				continue
			}
			n.mu.Lock()
			if e.ID != "" {
				n.since = e.ID
			}
			n.mu.Unlock()
			decision, tok, ok := ParseNtfyAnswer(e.Message)
			if !ok {
				continue
			}
			h.Answer(ctx, Reply{Token: tok, Decision: decision, Identity: "ntfy:" + n.replyTopic})
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return nil
}
