package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/quotedprintable"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
)

func notifier(t *testing.T, cfg string, l Linker) *Notifier {
	t.Helper()
	c, err := Parse([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(c, Options{Linker: l, Backoff: time.Millisecond, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func wait[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived")
	}
	var zero T
	return zero
}

func TestWebChannels(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   func(url string) string
		check func(t *testing.T, h hit)
	}{
		{name: "generic webhook", cfg: func(u string) string {
			return "channels:\n  - type: webhook\n    name: ops\n    url: " + u + "/hook\n    secret: s3cret\n    headers: {X-Team: infra}\n"
		}, check: func(t *testing.T, h hit) {
			if h.Path != "/hook" || h.Header.Get("Content-Type") != "application/json" || h.Header.Get("X-Team") != "infra" {
				t.Fatalf("request %s %v", h.Path, h.Header)
			}
			if got, want := h.Header.Get(SignatureHeader), Sign("s3cret", h.Body); got != want {
				t.Fatalf("signature %q, want %q", got, want)
			}
			var p struct {
				Event      string `json:"event"`
				ApprovalID string `json:"approval_id"`
				Tool       string `json:"tool"`
				Level      string `json:"level"`
				Detail     string `json:"detail"`
				Links      Links  `json:"links"`
				Preview    struct{ Items []string }
				Text       string `json:"text"`
			}
			if err := json.Unmarshal(h.Body, &p); err != nil {
				t.Fatal(err)
			}
			if p.Event != "approval_requested" || p.ApprovalID != "apr_test1" || p.Tool != "Bash" || p.Level != "approve" ||
				!strings.Contains(p.Detail, "rm -rf build") || len(p.Preview.Items) != 2 {
				t.Fatalf("payload %s", h.Body)
			}
			if p.Links.Approve != "https://console.example/ui/a/APPROVE-ops" || p.Links.Deny != "https://console.example/ui/a/DENY-ops" {
				t.Fatalf("links %+v", p.Links)
			}
			if !strings.Contains(p.Text, "Approve: https://console.example/ui/a/APPROVE-ops") {
				t.Fatalf("text %q", p.Text)
			}
		}},
		{name: "slack", cfg: func(u string) string {
			return "channels:\n  - type: slack\n    url: " + u + "/services/T/B/X\n"
		}, check: func(t *testing.T, h hit) {
			var p struct {
				Text   string `json:"text"`
				Blocks []struct {
					Type     string
					Text     struct{ Text string }
					Elements []struct {
						Style string
						URL   string
						Text  struct{ Text string }
					}
				}
			}
			if err := json.Unmarshal(h.Body, &p); err != nil {
				t.Fatal(err)
			}
			var section string
			var buttons []string
			for _, b := range p.Blocks {
				if b.Type == "section" {
					section = b.Text.Text
				}
				for _, e := range b.Elements {
					buttons = append(buttons, e.Text.Text+"="+e.URL)
				}
			}
			if strings.Contains(section, "<!channel>") || !strings.Contains(section, "&lt;!channel&gt;") {
				t.Fatalf("agent text can mention a channel: %q", section)
			}
			want := []string{"Approve=https://console.example/ui/a/APPROVE-slack", "Deny=https://console.example/ui/a/DENY-slack",
				"Open console=https://console.example/ui/#/queue/apr_test1"}
			if strings.Join(buttons, " ") != strings.Join(want, " ") {
				t.Fatalf("buttons %v", buttons)
			}
		}},
		{name: "discord", cfg: func(u string) string {
			return "channels:\n  - type: discord\n    url: " + u + "/api/webhooks/1/abc\n"
		}, check: func(t *testing.T, h hit) {
			var p struct {
				Content         string
				AllowedMentions struct{ Parse []string } `json:"allowed_mentions"`
				Embeds          []struct {
					Title, Description, URL string
				}
			}
			if err := json.Unmarshal(h.Body, &p); err != nil {
				t.Fatal(err)
			}
			if p.AllowedMentions.Parse == nil || len(p.AllowedMentions.Parse) != 0 {
				t.Fatalf("mentions are not turned off: %s", h.Body)
			}
			d := p.Embeds[0].Description
			if !strings.Contains(d, "[Approve](https://console.example/ui/a/APPROVE-discord)") ||
				!strings.Contains(d, "[Deny](https://console.example/ui/a/DENY-discord)") {
				t.Fatalf("description %q", d)
			}
			if p.Embeds[0].URL != "https://console.example/ui/#/queue/apr_test1" {
				t.Fatalf("embed url %q", p.Embeds[0].URL)
			}
		}},
		{name: "ntfy", cfg: func(u string) string {
			return "channels:\n  - type: ntfy\n    url: " + u + "\n    topic: my-overseer\n    token: tk_1\n"
		}, check: func(t *testing.T, h hit) {
			if h.Path != "/my-overseer" {
				t.Fatalf("path %q", h.Path)
			}
			for k, want := range map[string]string{
				"Title":         "Overseer: Bash needs your approval",
				"Priority":      "high",
				"Click":         "https://console.example/ui/#/queue/apr_test1",
				"Authorization": "Bearer tk_1",
				"Actions": "view, Approve, https://console.example/ui/a/APPROVE-ntfy, clear=true; " +
					"view, Deny, https://console.example/ui/a/DENY-ntfy, clear=true",
			} {
				if got := h.Header.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if !strings.Contains(string(h.Body), "rm -rf build") || !strings.Contains(string(h.Body), "build/a.o") {
				t.Fatalf("body %q", h.Body)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t)
			n := notifier(t, tc.cfg(r.URL), &fixedLinker{})
			if err := n.Notify(context.Background(), testApproval()); err != nil {
				t.Fatal(err)
			}
			tc.check(t, wait(t, r.got))
			if r.count() != 1 {
				t.Fatalf("%d requests", r.count())
			}
		})
	}
}

func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses []int
		retryHdr string
		requests int
		ok       bool
	}{
		{"a server error is retried", []int{503, 502}, "", 3, true},
		{"rate limits are honoured", []int{429}, "1", 2, true},
		{"gives up after the last try", []int{500, 500, 500, 500}, "", 3, false},
		{"a client error is not retried", []int{404}, "", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t, tc.statuses...)
			r.retryHdr = tc.retryHdr
			n := notifier(t, "channels:\n  - type: webhook\n    url: "+r.URL+"\n", &fixedLinker{})
			start := time.Now()
			err := n.Notify(context.Background(), testApproval())
			if (err == nil) != tc.ok {
				t.Fatalf("error %v, want ok=%v", err, tc.ok)
			}
			if r.count() != tc.requests {
				t.Fatalf("%d requests, want %d", r.count(), tc.requests)
			}
			if tc.retryHdr != "" && time.Since(start) < time.Second {
				t.Fatalf("Retry-After was not honoured (%v)", time.Since(start))
			}
		})
	}
}

func TestEmail(t *testing.T) {
	t.Run("delivers the summary and the links", func(t *testing.T) {
		s := newSMTPSink(t, false)
		n := notifier(t, "channels:\n  - type: email\n    smtp: "+s.addr()+"\n    tls: none\n    from: Overseer <overseer@example.com>\n"+
			"    to: [ann@example.com, bob@example.com]\n    username: ann\n    password: pw\n", &fixedLinker{})
		if err := n.Notify(context.Background(), testApproval()); err != nil {
			t.Fatal(err)
		}
		m := wait(t, s.got)
		if m.From != "<overseer@example.com>" || strings.Join(m.To, ",") != "<ann@example.com>,<bob@example.com>" {
			t.Fatalf("envelope %q → %q", m.From, m.To)
		}
		if m.Auth != "|ann|pw" {
			t.Fatalf("auth %q", m.Auth)
		}
		head, body, _ := strings.Cut(m.Data, "\r\n\r\n")
		var subject string
		for _, l := range strings.Split(head, "\r\n") {
			if v, ok := strings.CutPrefix(l, "Subject: "); ok {
				subject, _ = new(mime.WordDecoder).DecodeHeader(v)
			}
		}
		if subject != "Overseer: Bash needs your approval" {
			t.Fatalf("subject %q", subject)
		}
		plain, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(body)))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"rm -rf build", "Approve: https://console.example/ui/a/APPROVE-email",
			"Deny:    https://console.example/ui/a/DENY-email", "2 files would be removed", "Each link works once"} {
			if !strings.Contains(string(plain), want) {
				t.Errorf("body lacks %q:\n%s", want, plain)
			}
		}
	})
	t.Run("never falls back to clear text", func(t *testing.T) {
		s := newSMTPSink(t, false) // offers no STARTTLS
		n := notifier(t, "channels:\n  - type: email\n    smtp: "+s.addr()+"\n    from: o@example.com\n    to: [a@example.com]\n", &fixedLinker{})
		err := n.Notify(context.Background(), testApproval())
		if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
			t.Fatalf("error %v", err)
		}
		if s.count() != 0 {
			t.Fatal("a message went out in clear text")
		}
	})
}

func TestDesktop(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "args")
	script := filepath.Join(dir, "notify-send")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+out+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Run("runs the notification command", func(t *testing.T) {
		n := notifier(t, "channels:\n  - type: desktop\n    command: "+script+"\n", &fixedLinker{})
		if err := n.Notify(context.Background(), testApproval()); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		args := string(b)
		for _, want := range []string{"--app-name=Overseer", "--urgency=critical", "--\nOverseer: Bash needs your approval",
			"https://console.example/ui/#/queue/apr_test1"} {
			if !strings.Contains(args, want) {
				t.Errorf("arguments lack %q:\n%s", want, args)
			}
		}
	})
	t.Run("a missing command is reported, not fatal", func(t *testing.T) {
		n := notifier(t, "channels:\n  - type: desktop\n    command: "+filepath.Join(dir, "none")+"\n", &fixedLinker{})
		if err := n.Notify(context.Background(), testApproval()); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("%v", err)
		}
	})
}

func TestNoLinksStillNotifies(t *testing.T) {
	r := newReceiver(t)
	n := notifier(t, "channels:\n  - type: webhook\n    url: "+r.URL+"\n", &fixedLinker{err: errors.New("no address yet")})
	if err := n.Notify(context.Background(), testApproval()); err != nil {
		t.Fatal(err)
	}
	h := wait(t, r.got)
	if strings.Contains(string(h.Body), "/ui/a/") {
		t.Fatalf("links without a linker: %s", h.Body)
	}
}
