package notify

import (
	"bufio"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/store"
)

var t0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

// testApproval is a request a person must answer, with a preview.
func testApproval() *store.Approval {
	return &store.Approval{
		ID: "apr_test1", ActionID: "act_1", Tool: "Bash", Kind: action.KindShell, Agent: "claude-code",
		Session: "s-42", Level: action.Approve, ArgsHash: "abc",
		Action: action.Action{ID: "act_1", Tool: "Bash", Agent: "claude-code", Cwd: "/home/ann/shop",
			Args: map[string]any{"command": "rm -rf build <!channel> @everyone"}},
		Verdict: action.Verdict{Level: action.Approve,
			Reasons: []action.Reason{{Layer: "L3", Source: action.SourceRule, Name: "builtin-delete", Level: action.Approve,
				Message: "Deleting files cannot be undone"}},
			Decider: &action.Reason{Layer: "L3", Source: action.SourceRule, Name: "builtin-delete", Level: action.Approve,
				Message: "Deleting files cannot be undone"},
			Preview: &action.Preview{Summary: "2 files would be removed", Items: []string{"build/a.o", "build/b.o"}}},
		Status: store.StatusPending, CreatedAt: t0, Deadline: t0.Add(5 * time.Minute), DefaultDecision: "deny",
	}
}

// fixedLinker hands out links that name the channel they were made for.
type fixedLinker struct {
	mu  sync.Mutex
	via []string
	err error
}

func (l *fixedLinker) Links(_ context.Context, apr *store.Approval, via string) (Links, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.via = append(l.via, via)
	if l.err != nil {
		return Links{}, l.err
	}
	return Links{Approve: "https://console.example/ui/a/APPROVE-" + via, Deny: "https://console.example/ui/a/DENY-" + via,
		Open: "https://console.example/ui/#/queue/" + apr.ID, Expires: t0.Add(5 * time.Minute)}, nil
}

// hit is one request a receiver got.
type hit struct {
	Path   string
	Header http.Header
	Body   []byte
}

// receiver is a webhook host on loopback that answers with the statuses
// it is given (then 200) and records every request.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	hits     []hit
	statuses []int
	retryHdr string
	got      chan hit
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses, got: make(chan hit, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		h := hit{Path: req.URL.Path, Header: req.Header.Clone(), Body: b}
		r.mu.Lock()
		r.hits = append(r.hits, h)
		st := 200
		if len(r.statuses) > 0 {
			st, r.statuses = r.statuses[0], r.statuses[1:]
		}
		r.mu.Unlock()
		if st == http.StatusTooManyRequests && r.retryHdr != "" {
			w.Header().Set("Retry-After", r.retryHdr)
		}
		w.WriteHeader(st)
		if st == 200 {
			r.got <- h
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.hits)
}

// smtpSink is a small SMTP server on loopback that keeps what it receives.
type smtpSink struct {
	ln       net.Listener
	starttls bool // advertise STARTTLS (and refuse to go on in clear)
	mu       sync.Mutex
	msgs     []mailMsg
	got      chan mailMsg
	wg       sync.WaitGroup
}

type mailMsg struct {
	From string
	To   []string
	Auth string
	Data string
}

func newSMTPSink(t *testing.T, starttls bool) *smtpSink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpSink{ln: ln, starttls: starttls, got: make(chan mailMsg, 10)}
	s.wg.Add(1)
	go func() { // owned by the test: ends when the listener closes
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *smtpSink) addr() string { return s.ln.Addr().String() }

func (s *smtpSink) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	say := func(line string) { io.WriteString(c, line+"\r\n") }
	say("220 sink ESMTP")
	var m mailMsg
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(strings.SplitN(line, " ", 2)[0])
		switch verb {
		case "EHLO":
			say("250-sink")
			if s.starttls {
				say("250-STARTTLS")
			}
			say("250 AUTH PLAIN")
		case "HELO":
			say("250 sink")
		case "AUTH":
			parts := strings.Fields(line)
			if len(parts) == 3 {
				raw, _ := base64.StdEncoding.DecodeString(parts[2])
				m.Auth = strings.ReplaceAll(string(raw), "\x00", "|")
			}
			say("235 ok")
		case "MAIL":
			m.From = strings.TrimPrefix(line, "MAIL FROM:")
			say("250 ok")
		case "RCPT":
			m.To = append(m.To, strings.TrimPrefix(line, "RCPT TO:"))
			say("250 ok")
		case "DATA":
			say("354 go on")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(l)
			}
			m.Data = b.String()
			s.mu.Lock()
			s.msgs = append(s.msgs, m)
			s.mu.Unlock()
			s.got <- m
			m = mailMsg{}
			say("250 queued")
		case "QUIT":
			say("221 bye")
			return
		case "STARTTLS":
			say("454 not today")
		default:
			say("502 unknown")
		}
	}
}

func (s *smtpSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}
