package notify

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// An email channel with imap is two-way: the notification's subject
// carries the answer token ("… [ov:TOKEN]"), and a reply whose first line
// is "approve" or "deny <reason>" answers. Replies are read from the
// mailbox over IMAP, a connection the daemon opens itself: IDLE where the
// server offers it, polling otherwise. Quoted text ("> …", "On … wrote:")
// and signatures ("-- ") are ignored. Each unseen message is read once and
// marked seen, whatever became of it.
//
// Who answered is the reply's From address, checked against allow. A From
// header can be forged: rely on a mailbox whose server checks senders
// (SPF/DKIM/DMARC) — see docs/threat-model.md.

// DefaultEmailPoll is how often a mailbox without IDLE is read.
const DefaultEmailPoll = 30 * time.Second

// idleRefresh ends an IDLE before servers drop it (RFC 2177: 29 minutes).
const idleRefresh = 20 * time.Minute

// maxEmail bounds a reply that is read.
const maxEmail = 1 << 20

func validateEmailReplies(ch *ChannelConfig) error {
	if ch.IMAP == "" {
		if ch.IMAPTLS != "" || ch.IMAPUsername != "" || ch.IMAPPassword != "" || ch.IMAPPasswordFile != "" || ch.Mailbox != "" || len(ch.Allow) > 0 {
			return errors.New("imap_* , mailbox and allow need imap (host:port)")
		}
		return nil
	}
	host, _, err := net.SplitHostPort(ch.IMAP)
	if err != nil {
		return fmt.Errorf("imap must be host:port: %v", err)
	}
	switch ch.IMAPTLS {
	case "", "tls", "starttls":
	case "none":
		if !isLoopback(host) {
			return errors.New("imap_tls: none is only allowed for an IMAP server on this machine")
		}
	default:
		return fmt.Errorf("imap_tls %q (want tls, starttls or none)", ch.IMAPTLS)
	}
	if ch.IMAPUsername == "" {
		return errors.New("imap_username is required")
	}
	if ch.IMAPPassword != "" && ch.IMAPPasswordFile != "" {
		return errors.New("set imap_password or imap_password_file, not both")
	}
	if len(ch.Allow) == 0 {
		return errors.New("allow must list the addresses that may answer")
	}
	for _, a := range ch.Allow {
		if _, err := mail.ParseAddress(a); err != nil {
			return fmt.Errorf("allow: %q: %v", a, err)
		}
	}
	return nil
}

// subjectToken finds the answer token in a subject.
var subjectToken = lazyre.New(`\[ov:([A-Za-z0-9_-]{32})\]`)

// EmailReply is what a reply says.
type EmailReply struct {
	From     string // the sender's address, lower case
	Token    string
	Decision string
	Reason   string
}

// ParseEmailReply reads a reply: its sender, the token in its subject and
// the decision in the first lines of its plain text. Anything it cannot
// read with certainty is an error (nothing is answered).
func ParseEmailReply(raw []byte) (EmailReply, error) {
	var r EmailReply
	if len(raw) > maxEmail {
		return r, errors.New("email: too large")
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return r, fmt.Errorf("email: %w", err)
	}
	froms, err := msg.Header.AddressList("From")
	if err != nil || len(froms) != 1 {
		return r, errors.New("email: want exactly one From address")
	}
	r.From = strings.ToLower(froms[0].Address)
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		subject = msg.Header.Get("Subject")
	}
	m := subjectToken.FindAllStringSubmatch(subject, -1)
	if len(m) != 1 {
		return r, errors.New("email: no single answer token in the subject")
	}
	r.Token = m[0][1]
	text, err := plainText(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body, 0)
	if err != nil {
		return r, err
	}
	d, reason, ok := ParseReply(text)
	if !ok {
		return r, errors.New("email: the reply does not start with approve or deny")
	}
	r.Decision, r.Reason = d, reason
	return r, nil
}

// plainText returns the first text/plain part of a body.
func plainText(ctype, cte string, body io.Reader, depth int) (string, error) {
	if depth > 5 {
		return "", errors.New("email: nested too deep")
	}
	mt, params, err := mime.ParseMediaType(ctype)
	if ctype == "" {
		mt, err = "text/plain", nil
	}
	if err != nil {
		return "", fmt.Errorf("email: content type: %w", err)
	}
	switch {
	case mt == "text/plain":
		var rd io.Reader = body
		switch strings.ToLower(strings.TrimSpace(cte)) {
		case "quoted-printable":
			rd = quotedprintable.NewReader(body)
		case "base64":
			rd = base64.NewDecoder(base64.StdEncoding, body)
		}
		b, err := io.ReadAll(io.LimitReader(rd, maxEmail))
		if err != nil {
			return "", fmt.Errorf("email: body: %w", err)
		}
		return string(b), nil
	case strings.HasPrefix(mt, "multipart/"):
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if err == io.EOF {
				return "", errors.New("email: no plain text part")
			}
			if err != nil {
				return "", fmt.Errorf("email: %w", err)
			}
			t, err := plainText(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p, depth+1)
			if err == nil {
				return t, nil
			}
		}
	}
	return "", fmt.Errorf("email: %s is not plain text", mt)
}

type emailTwoWay struct {
	*email
	imapAddr, imapHost string
	imapMode           string
	imapUser, imapPass string
	mailbox            string
	poll               time.Duration
	logf               func(string, ...any)
	backoff            func() *backoff
}

var (
	_ Channel  = (*emailTwoWay)(nil)
	_ Listener = (*emailTwoWay)(nil)
)

func newEmailTwoWay(base *email, cc ChannelConfig, opts Options) (*emailTwoWay, error) {
	pass := cc.IMAPPassword
	if cc.IMAPPasswordFile != "" {
		p, err := secretOf("", cc.IMAPPasswordFile, "imap_password")
		if err != nil {
			return nil, err
		}
		pass = p
	}
	host, _, _ := net.SplitHostPort(cc.IMAP)
	mode := cc.IMAPTLS
	if mode == "" {
		mode = "tls"
	}
	mbox := cc.Mailbox
	if mbox == "" {
		mbox = "INBOX"
	}
	return &emailTwoWay{email: base, imapAddr: cc.IMAP, imapHost: host, imapMode: mode, imapUser: cc.IMAPUsername,
		imapPass: pass, mailbox: mbox, poll: DefaultEmailPoll, logf: opts.Logf,
		backoff: func() *backoff { return newBackoff(opts) }}, nil
}

func (e *emailTwoWay) Send(ctx context.Context, m *Message) error {
	if m.AnswerToken == "" || m.Head != nil || m.Alert != "" {
		return e.email.Send(ctx, m)
	}
	mm := *m
	mm.Title = m.Title + " [ov:" + m.AnswerToken + "]"
	mm.Reply = `Reply to this email with "approve", or "deny" and a reason, on the first line.`
	return e.email.Send(ctx, &mm)
}

// Listen reads replies until ctx ends, reconnecting with backoff.
func (e *emailTwoWay) Listen(ctx context.Context, h Handler) error {
	bo := e.backoff()
	for ctx.Err() == nil {
		err := e.session(ctx, h, bo)
		if ctx.Err() != nil {
			return nil
		}
		h.Status(fmt.Errorf("imap: %w", err))
		if !bo.wait(ctx) {
			return nil
		}
	}
	return nil
}

func (e *emailTwoWay) dial(opts *imapclient.Options) (*imapclient.Client, error) {
	opts.Dialer = &net.Dialer{Timeout: 30 * time.Second}
	switch e.imapMode {
	case "none":
		return imapclient.DialInsecure(e.imapAddr, opts)
	case "starttls":
		return imapclient.DialStartTLS(e.imapAddr, opts)
	}
	return imapclient.DialTLS(e.imapAddr, opts)
}

// session is one IMAP connection: read what is unseen, then wait (IDLE or
// a pause) for more, until an error or ctx ends.
func (e *emailTwoWay) session(ctx context.Context, h Handler, bo *backoff) error {
	news := make(chan struct{}, 1)
	var once sync.Once
	opts := &imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				select {
				case news <- struct{}{}:
				default:
				}
			}
		},
	}}
	c, err := e.dial(opts)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { once.Do(func() { c.Close() }) })
	defer stop()
	if err := c.Login(e.imapUser, e.imapPass).Wait(); err != nil {
		return fmt.Errorf("login: %w", err)
	}
	if _, err := c.Select(e.mailbox, nil).Wait(); err != nil {
		return fmt.Errorf("select %s: %w", e.mailbox, err)
	}
	bo.reset()
	h.Status(nil)
	canIdle := c.Caps().Has(imap.CapIdle)
	for {
		if err := e.readUnseen(ctx, c, h); err != nil {
			return err
		}
		if canIdle {
			idle, err := c.Idle()
			if err != nil {
				return fmt.Errorf("idle: %w", err)
			}
			select {
			case <-ctx.Done():
			case <-news:
			case <-time.After(idleRefresh):
			case <-c.Closed():
			}
			if err := idle.Close(); err != nil {
				return fmt.Errorf("idle: %w", err)
			}
			if err := idle.Wait(); err != nil {
				return fmt.Errorf("idle: %w", err)
			}
		} else {
			select {
			case <-ctx.Done():
			case <-time.After(e.poll):
			case <-c.Closed():
			}
			if err := c.Noop().Wait(); err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

func (e *emailTwoWay) readUnseen(ctx context.Context, c *imapclient.Client, h Handler) error {
	sd, err := c.UIDSearch(&imap.SearchCriteria{NotFlag: []imap.Flag{imap.FlagSeen}}, nil).Wait()
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	uids := sd.AllUIDs()
	if len(uids) == 0 {
		return nil
	}
	section := &imap.FetchItemBodySection{Peek: true}
	msgs, err := c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{section}}).Collect()
	if err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	for _, m := range msgs {
		raw := m.FindBodySection(section)
		r, err := ParseEmailReply(raw)
		if err != nil {
			e.logf("notify: email: ignoring a message in %s: %v", e.mailbox, err)
		} else {
			h.Answer(ctx, Reply{Token: r.Token, Decision: r.Decision, Identity: "email:" + r.From, Reason: r.Reason})
		}
		// Read once, whatever became of it.
		if err := c.Store(imap.UIDSetNum(m.UID), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true,
			Flags: []imap.Flag{imap.FlagSeen}}, nil).Close(); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	return nil
}
