package notifytest

import (
	"bufio"
	"fmt"
	"io"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"
)

// SMTP is a scripted SMTP server (RFC 5321: EHLO/HELO, MAIL, RCPT, DATA,
// RSET, NOOP, QUIT, without TLS or authentication) that keeps the
// messages it is given.
type SMTP struct {
	t    testing.TB
	ln   net.Listener
	mu   sync.Mutex
	msgs []string
}

// NewSMTP starts the server on a random loopback port.
func NewSMTP(t testing.TB) *SMTP {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &SMTP{t: t, ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() { // ends when the listener closes
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

// Addr is the server's host:port.
func (s *SMTP) Addr() string { return s.ln.Addr().String() }

func (s *SMTP) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	say := func(f string, a ...any) { fmt.Fprintf(c, f+"\r\n", a...) }
	say("220 localhost ESMTP scripted")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"):
			say("250-localhost")
			say("250 8BITMIME")
		case strings.HasPrefix(cmd, "HELO"), strings.HasPrefix(cmd, "MAIL FROM:"), strings.HasPrefix(cmd, "RCPT TO:"),
			cmd == "RSET", cmd == "NOOP":
			say("250 OK")
		case cmd == "DATA":
			say("354 End data with <CR><LF>.<CR><LF>")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, "."))
			}
			s.mu.Lock()
			s.msgs = append(s.msgs, b.String())
			s.mu.Unlock()
			say("250 OK: queued")
		case cmd == "QUIT":
			say("221 Bye")
			return
		default:
			say("502 Command not implemented")
		}
	}
}

// WaitMessage waits for a message whose decoded text contains substr and
// returns it parsed.
func (s *SMTP) WaitMessage(substr string, d time.Duration) *mail.Message {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		msgs := append([]string(nil), s.msgs...)
		s.mu.Unlock()
		for _, m := range msgs {
			msg, err := mail.ReadMessage(strings.NewReader(m))
			if err != nil {
				s.t.Fatal(err)
			}
			var body io.Reader = msg.Body
			if strings.EqualFold(msg.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
				body = quotedprintable.NewReader(body)
			}
			b, _ := io.ReadAll(body)
			if strings.Contains(string(b), substr) {
				msg, _ = mail.ReadMessage(strings.NewReader(m))
				return msg
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("smtp: no message with %q", substr)
	return nil
}
