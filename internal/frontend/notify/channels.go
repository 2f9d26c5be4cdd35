package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/mail"
	"net/smtp"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
)

// Interface guards.
var (
	_ Channel = (*webhook)(nil)
	_ Channel = (*slack)(nil)
	_ Channel = (*discord)(nil)
	_ Channel = (*ntfy)(nil)
	_ Channel = (*email)(nil)
	_ Channel = (*desktop)(nil)
)

func newChannel(cc ChannelConfig, opts Options) (Channel, error) {
	switch cc.Type {
	case TypeWebhook:
		return &webhook{url: cc.URL, headers: cc.Headers, secret: cc.Secret, http: opts.HTTP}, nil
	case TypeSlack:
		return &slack{url: cc.URL, http: opts.HTTP}, nil
	case TypeDiscord:
		return &discord{url: cc.URL, http: opts.HTTP}, nil
	case TypeNtfy:
		if cc.ReplyTopic != "" {
			return newNtfyTwoWay(cc, opts), nil
		}
		return &ntfy{url: strings.TrimRight(cc.URL, "/") + "/" + cc.Topic, token: cc.Token, priority: cc.Priority, http: opts.HTTP}, nil
	case TypeEmail:
		pw := cc.Password
		if cc.PasswordFile != "" {
			b, err := os.ReadFile(cc.PasswordFile)
			if err != nil {
				return nil, fmt.Errorf("password_file: %w", err)
			}
			pw = strings.TrimSpace(string(b))
		}
		mode := cc.TLS
		if mode == "" {
			mode = "starttls"
		}
		host, _, err := net.SplitHostPort(cc.SMTP)
		if err != nil {
			return nil, fmt.Errorf("smtp: %w", err)
		}
		e := &email{addr: cc.SMTP, host: host, from: cc.From, to: cc.To, user: cc.Username, pass: pw, mode: mode,
			clock: opts.Clock}
		if cc.IMAP != "" {
			return newEmailTwoWay(e, cc, opts)
		}
		return e, nil
	case TypeTelegram:
		return newTelegram(cc, opts)
	case TypeSlackApp:
		return newSlackApp(cc, opts)
	case TypeDesktop:
		cmd := cc.Command
		if cmd == "" {
			cmd = "notify-send"
		}
		look := opts.LookPath
		if look == nil {
			look = exec.LookPath
		}
		path, err := look(cmd)
		if err != nil {
			opts.Logf("notify: desktop notifications are off: %s was not found", cmd)
			path = ""
		}
		return &desktop{path: path, cmd: cmd}, nil
	}
	return nil, fmt.Errorf("%w: unknown type %q", ErrConfig, cc.Type)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// userAgent identifies Overseer to webhook hosts.
const userAgent = "Overseer-Notify/1"

// post sends body to url and classifies the answer: 2xx is success; 429 and
// 5xx are retried (honouring Retry-After); other statuses are permanent.
func post(ctx context.Context, c *http.Client, url, contentType string, body []byte, hdr map[string]string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return &permanent{err}
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", userAgent)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	e := fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		var wait time.Duration
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		return &retryAfter{err: e, wait: wait}
	}
	return &permanent{e}
}

// SignatureHeader carries the webhook body's HMAC-SHA256 when a secret is set.
const SignatureHeader = "X-Overseer-Signature"

// Sign returns the signature header value of body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// WebhookPayload is the generic webhook's JSON body.
type WebhookPayload struct {
	Event string `json:"event"` // approval_requested, alarm, alert (a security alert), audit_head
	*Message
	Text string `json:"text"`
}

type webhook struct {
	url     string
	headers map[string]string
	secret  string
	http    *http.Client
}

func (w *webhook) Send(ctx context.Context, m *Message) error {
	event := "approval_requested"
	if m.Head != nil {
		event = audit.HeadEvent
	}
	if m.Alert != "" {
		event = "alarm"
		if m.Security {
			event = "alert"
		}
	}
	body, err := json.Marshal(WebhookPayload{Event: event, Message: m, Text: m.Text()})
	if err != nil {
		return &permanent{err}
	}
	hdr := map[string]string{"X-Overseer-Event": event}
	for k, v := range w.headers {
		hdr[k] = v
	}
	if w.secret != "" {
		hdr[SignatureHeader] = Sign(w.secret, body)
	}
	return post(ctx, w.http, w.url, "application/json", body, hdr)
}

// slackEscape escapes the three characters Slack's mrkdwn gives meaning to,
// so that text from the agent cannot mention a channel or forge a link.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// codeSafe keeps text inside a code span: backticks become a look-alike.
func codeSafe(s string) string { return strings.ReplaceAll(s, "`", "ˋ") }

type slack struct {
	url  string
	http *http.Client
}

func (s *slack) Send(ctx context.Context, m *Message) error {
	if m.Head != nil {
		body, err := json.Marshal(map[string]any{"text": m.Title + "\n```" + m.Head.Line() + "```"})
		if err != nil {
			return &permanent{err}
		}
		return post(ctx, s.http, s.url, "application/json", body, nil)
	}
	if m.Alert != "" {
		body, err := json.Marshal(map[string]any{"text": slackEscape(m.Title + ": " + m.Summary)})
		if err != nil {
			return &permanent{err}
		}
		return post(ctx, s.http, s.url, "application/json", body, nil)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%s* wants to run (level *%s*)", slackEscape(m.Tool), m.Level)
	if m.Agent != "" {
		fmt.Fprintf(&b, " — agent %s", slackEscape(m.Agent))
	}
	if m.Session != "" {
		fmt.Fprintf(&b, ", session %s", slackEscape(m.Session))
	}
	if m.Detail != "" {
		fmt.Fprintf(&b, "\n```%s```", slackEscape(codeSafe(m.Detail)))
	}
	if m.Cwd != "" {
		fmt.Fprintf(&b, "\n*In:* `%s`", slackEscape(codeSafe(m.Cwd)))
	}
	fmt.Fprintf(&b, "\n*Why:* %s", slackEscape(m.Summary))
	if m.Preview != nil {
		fmt.Fprintf(&b, "\n*Preview:* %s", slackEscape(m.Preview.Summary))
	}
	if !m.Deadline.IsZero() {
		fmt.Fprintf(&b, "\nTimes out <!date^%d^{time}|at %s> (then: %s).", m.Deadline.Unix(),
			m.Deadline.Format(time.RFC1123), m.DefaultDecision)
	}
	blocks := []any{
		map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": clip(m.Title, 150)}},
		map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": clip(b.String(), 2900)}},
	}
	var buttons []any
	if m.Links.Approve != "" {
		buttons = append(buttons,
			map[string]any{"type": "button", "style": "primary", "text": map[string]any{"type": "plain_text", "text": "Approve"}, "url": m.Links.Approve, "action_id": "approve"},
			map[string]any{"type": "button", "style": "danger", "text": map[string]any{"type": "plain_text", "text": "Deny"}, "url": m.Links.Deny, "action_id": "deny"})
	}
	if m.Links.Open != "" {
		buttons = append(buttons, map[string]any{"type": "button", "text": map[string]any{"type": "plain_text", "text": "Open console"}, "url": m.Links.Open, "action_id": "open"})
	}
	if len(buttons) > 0 {
		blocks = append(blocks, map[string]any{"type": "actions", "elements": buttons})
	}
	body, err := json.Marshal(map[string]any{"text": slackEscape(m.Title + ": " + m.Summary), "blocks": blocks})
	if err != nil {
		return &permanent{err}
	}
	return post(ctx, s.http, s.url, "application/json", body, nil)
}

type discord struct {
	url  string
	http *http.Client
}

// discordColor is the embed colour per level.
var discordColor = map[string]int{"confirm": 0xe8b339, "approve": 0xe07b39}

func (d *discord) Send(ctx context.Context, m *Message) error {
	if m.Head != nil {
		body, err := json.Marshal(map[string]any{"content": m.Title + "\n```\n" + m.Head.Line() + "\n```",
			"allowed_mentions": map[string]any{"parse": []string{}}})
		if err != nil {
			return &permanent{err}
		}
		return post(ctx, d.http, d.url, "application/json", body, nil)
	}
	if m.Alert != "" {
		body, err := json.Marshal(map[string]any{"content": clip(discordEscape(m.Title+": "+m.Summary), 1900),
			"allowed_mentions": map[string]any{"parse": []string{}}})
		if err != nil {
			return &permanent{err}
		}
		return post(ctx, d.http, d.url, "application/json", body, nil)
	}
	var desc strings.Builder
	if m.Detail != "" {
		fmt.Fprintf(&desc, "```\n%s\n```\n", codeSafe(m.Detail))
	}
	if m.Cwd != "" {
		fmt.Fprintf(&desc, "**In:** `%s`\n", codeSafe(m.Cwd))
	}
	fmt.Fprintf(&desc, "**Why:** %s\n", discordEscape(m.Summary))
	if m.Preview != nil {
		fmt.Fprintf(&desc, "**Preview:** %s\n", discordEscape(m.Preview.Summary))
	}
	if m.Links.Approve != "" {
		fmt.Fprintf(&desc, "\n[Approve](%s) · [Deny](%s)", m.Links.Approve, m.Links.Deny)
	}
	if m.Links.Open != "" {
		fmt.Fprintf(&desc, " · [Open console](%s)", m.Links.Open)
	}
	fields := []any{map[string]any{"name": "Level", "value": m.Level, "inline": true}}
	if m.Agent != "" {
		fields = append(fields, map[string]any{"name": "Agent", "value": clip(discordEscape(m.Agent), 100), "inline": true})
	}
	if !m.Deadline.IsZero() {
		fields = append(fields, map[string]any{"name": "Times out", "value": fmt.Sprintf("<t:%d:R> (then %s)", m.Deadline.Unix(), m.DefaultDecision), "inline": true})
	}
	embed := map[string]any{"title": clip(m.Title, 250), "description": clip(desc.String(), 4000),
		"color": discordColor[m.Level], "fields": fields}
	if !m.CreatedAt.IsZero() {
		embed["timestamp"] = m.CreatedAt.UTC().Format(time.RFC3339)
	}
	if m.Links.Open != "" {
		embed["url"] = m.Links.Open
	}
	body, err := json.Marshal(map[string]any{
		"content": clip(m.Title, 1900),
		"embeds":  []any{embed},
		// Text from the agent must not ping anyone.
		"allowed_mentions": map[string]any{"parse": []string{}},
	})
	if err != nil {
		return &permanent{err}
	}
	return post(ctx, d.http, d.url, "application/json", body, nil)
}

// discordEscape neutralises markdown and mentions in text from the agent.
func discordEscape(s string) string {
	return strings.NewReplacer("*", `\*`, "_", `\_`, "~", `\~`, "`", `\`+"`", "|", `\|`, ">", `\>`,
		"[", `\[`, "]", `\]`, "@", "@\u200b").Replace(s)
}

type ntfy struct {
	url      string
	token    string
	priority string
	http     *http.Client
}

// headerSafe keeps a header value on one line, without control characters.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func (n *ntfy) Send(ctx context.Context, m *Message) error {
	hdr := map[string]string{
		"Title": headerSafe(clip(m.Title, 200)),
		"Tags":  "warning",
	}
	pr := n.priority
	if pr == "" {
		pr = "high"
	}
	if m.Head != nil {
		hdr["Tags"], pr = "lock", "min"
	}
	hdr["Priority"] = pr
	if m.Links.Open != "" {
		hdr["Click"] = m.Links.Open
	}
	if m.Links.Approve != "" {
		hdr["Actions"] = fmt.Sprintf("view, Approve, %s, clear=true; view, Deny, %s, clear=true", m.Links.Approve, m.Links.Deny)
	}
	if n.token != "" {
		hdr["Authorization"] = "Bearer " + n.token
	}
	return post(ctx, n.http, n.url, "text/plain; charset=utf-8", []byte(m.Text()), hdr)
}

type email struct {
	addr, host string
	from       string
	to         []string
	user, pass string
	mode       string // starttls, tls, none
	clock      interface{ Now() time.Time }
}

// build renders the email.
func (e *email) build(m *Message) ([]byte, error) {
	var body bytes.Buffer
	qp := quotedprintable.NewWriter(&body)
	if _, err := qp.Write([]byte(strings.ReplaceAll(m.Text(), "\n", "\r\n"))); err != nil {
		return nil, err
	}
	if err := qp.Close(); err != nil {
		return nil, err
	}
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	from, _ := mail.ParseAddress(e.from)
	var b bytes.Buffer
	hdr := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	hdr("From", from.String())
	hdr("To", strings.Join(e.to, ", "))
	hdr("Subject", mime.QEncoding.Encode("utf-8", headerSafe(m.Title)))
	hdr("Date", e.clock.Now().Format(time.RFC1123Z))
	domain := "overseer.local"
	if i := strings.LastIndexByte(from.Address, '@'); i >= 0 {
		domain = from.Address[i+1:]
	}
	hdr("Message-ID", fmt.Sprintf("<%s.%s@%s>", m.ApprovalID, hex.EncodeToString(id[:]), domain))
	hdr("X-Overseer-Approval", m.ApprovalID)
	hdr("Auto-Submitted", "auto-generated")
	hdr("MIME-Version", "1.0")
	hdr("Content-Type", "text/plain; charset=utf-8")
	hdr("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	b.Write(body.Bytes())
	return b.Bytes(), nil
}

func (e *email) Send(ctx context.Context, m *Message) error {
	msg, err := e.build(m)
	if err != nil {
		return &permanent{err}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", e.addr)
	if err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if e.mode == "tls" {
		conn = tls.Client(conn, &tls.Config{ServerName: e.host, MinVersion: tls.VersionTLS12})
	}
	c, err := smtp.NewClient(conn, e.host)
	if err != nil {
		conn.Close()
		return err
	}
	defer c.Close()
	if err := c.Hello("localhost"); err != nil {
		return err
	}
	if e.mode == "starttls" {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			// Never fall back to sending the links in clear text.
			return &permanent{errors.New("the SMTP server does not offer STARTTLS (set tls: tls, or tls: none for a server on this machine)")}
		}
		if err := c.StartTLS(&tls.Config{ServerName: e.host, MinVersion: tls.VersionTLS12}); err != nil {
			return err
		}
	}
	if e.user != "" {
		if err := c.Auth(smtp.PlainAuth("", e.user, e.pass, e.host)); err != nil {
			return &permanent{fmt.Errorf("SMTP authentication: %w", err)}
		}
	}
	from, _ := mail.ParseAddress(e.from)
	if err := c.Mail(from.Address); err != nil {
		return err
	}
	for _, t := range e.to {
		a, _ := mail.ParseAddress(t)
		if err := c.Rcpt(a.Address); err != nil {
			return err
		}
	}
	wc, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := wc.Write(msg); err != nil {
		return err
	}
	if err := wc.Close(); err != nil {
		return err
	}
	return c.Quit()
}

type desktop struct {
	path string
	cmd  string
}

func (d *desktop) Send(ctx context.Context, m *Message) error {
	if d.path == "" {
		return fmt.Errorf("%w: %s is not installed", ErrUnavailable, d.cmd)
	}
	body := m.Summary
	if m.Cwd != "" {
		body = "in " + m.Cwd + "\n" + body
	}
	if m.Detail != "" {
		body = m.Detail + "\n" + body
	}
	if m.Links.Open != "" {
		body += "\n" + m.Links.Open
	}
	cmd := exec.CommandContext(ctx, d.path, "--app-name=Overseer", "--urgency=critical", "--", headerSafe(m.Title), clip(body, 1000))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", d.cmd, err, strings.TrimSpace(string(out)))
	}
	return nil
}
