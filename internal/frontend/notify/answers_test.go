package notify

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

var replyCases = []struct {
	name, text       string
	decision, reason string
	ok               bool
}{
	{"approve", "approve", "approve", "", true},
	{"capitals and punctuation", "Approve!", "approve", "", true},
	{"yes", "yes\n", "approve", "", true},
	{"deny with a reason", "deny use git clean instead", "deny", "use git clean instead", true},
	{"deny colon", "No: not on a Friday", "deny", "not on a Friday", true},
	{"reason on the next lines", "deny\n\nthe tests are red\nfix them first", "deny", "the tests are red\nfix them first", true},
	{"quoted text ignored", "> approve\n> old\ndeny\n", "deny", "", true},
	{"quotation header ends it", "deny too risky\n\nOn Mon, 4 Mar 2026 at 10:00, Overseer <o@example> wrote:\n> approve", "deny", "too risky", true},
	{"signature ends it", "approve\n-- \nAnn\nsent from my phone", "approve", "", true},
	{"outlook original", "deny\n-----Original Message-----\nFrom: overseer\napprove", "deny", "", true},
	{"crlf", "approve\r\n\r\n--\r\nAnn", "approve", "", true},
	{"leading blank lines", "\n\n  approve  \n", "approve", "", true},
	{"not a decision", "maybe later", "", "", false},
	{"a word that starts like one", "approves", "", "", false},
	{"nothing", "", "", "", false},
	{"only a quote", "> approve", "", "", false},
	{"only a signature", "-- \napprove", "", "", false},
	{"approve in the middle", "I would not approve this", "", "", false},
}

func TestParseReply(t *testing.T) {
	for _, tc := range replyCases {
		t.Run(tc.name, func(t *testing.T) {
			d, r, ok := ParseReply(tc.text)
			if d != tc.decision || r != tc.reason || ok != tc.ok {
				t.Fatalf("ParseReply(%q) = %q, %q, %v; want %q, %q, %v", tc.text, d, r, ok, tc.decision, tc.reason, tc.ok)
			}
		})
	}
}

func FuzzParseReply(f *testing.F) {
	for _, tc := range replyCases {
		f.Add(tc.text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		d, r, ok := ParseReply(text)
		if !ok {
			if d != "" || r != "" {
				t.Fatalf("no answer but %q %q", d, r)
			}
			return
		}
		if d != "approve" && d != "deny" {
			t.Fatalf("decision %q", d)
		}
		if len(r) > 2000 {
			t.Fatalf("reason of %d bytes", len(r))
		}
		// Text that is all quotation never answers.
		quoted := true
		for _, l := range strings.Split(text, "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, ">") {
				quoted = false
			}
		}
		if quoted {
			t.Fatalf("%q answered %s from quoted text", text, d)
		}
		if utf8.ValidString(text) && !utf8.ValidString(r) && len(r) < 2000 {
			t.Fatalf("reason %q is not UTF-8", r)
		}
	})
}

var callbackCases = []struct {
	data, verb, token string
	ok                bool
}{
	{"a:" + strings.Repeat("A", 32), "approve", strings.Repeat("A", 32), true},
	{"d:tok", "deny", "tok", true},
	{"i:tok", "details", "tok", true},
	{"x:tok", "", "", false},
	{"a:", "", "", false},
	{"a", "", "", false},
	{"a:tok:more", "", "", false},
	{"a:" + strings.Repeat("A", 63), "", "", false},
	{"", "", "", false},
}

func TestParseCallback(t *testing.T) {
	for _, tc := range callbackCases {
		v, tok, ok := ParseCallback(tc.data)
		if v != tc.verb || tok != tc.token || ok != tc.ok {
			t.Fatalf("ParseCallback(%q) = %q %q %v", tc.data, v, tok, ok)
		}
	}
}

func FuzzParseCallback(f *testing.F) {
	for _, tc := range callbackCases {
		f.Add(tc.data)
	}
	f.Fuzz(func(t *testing.T, data string) {
		v, tok, ok := ParseCallback(data)
		if !ok {
			return
		}
		if len(data) > maxCallbackData || tok == "" || strings.Contains(tok, ":") {
			t.Fatalf("%q accepted: %q %q", data, v, tok)
		}
		if v != "approve" && v != "deny" && v != "details" {
			t.Fatalf("verb %q", v)
		}
	})
}

func TestAllowList(t *testing.T) {
	allowed := allowList("telegram:", []string{"42", " 7 "})
	for id, want := range map[string]bool{
		"telegram:42":              true,
		"telegram:42 @ann":         true,
		"telegram:7":               true,
		"telegram:420":             false,
		"telegram:4":               false,
		"42":                       false,
		"":                         false,
		" telegram:42":             false,
		"telegram:666 @42":         false,
		"telegram:666 telegram:42": false,
	} {
		if allowed(id) != want {
			t.Errorf("%q: %v", id, !want)
		}
	}
	if allowList("telegram:", nil)("telegram:42") {
		t.Error("an empty list allows somebody")
	}
}

func TestTelegramConfig(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, err string
	}{
		{"ok", "channels:\n  - type: telegram\n    bot_token: \"1:x\"\n    chat_id: \"-100123\"\n    allow: [\"42\"]\n", ""},
		{"no allow-list", "channels:\n  - type: telegram\n    bot_token: \"1:x\"\n    chat_id: \"1\"\n", "allow must list"},
		{"allow not an id", "channels:\n  - type: telegram\n    bot_token: \"1:x\"\n    chat_id: \"1\"\n    allow: [\"@ann\"]\n", "not a Telegram user id"},
		{"no token", "channels:\n  - type: telegram\n    chat_id: \"1\"\n    allow: [\"42\"]\n", "bot_token"},
		{"two tokens", "channels:\n  - type: telegram\n    bot_token: \"1:x\"\n    bot_token_file: /x\n    chat_id: \"1\"\n    allow: [\"42\"]\n", "one of them"},
		{"plain http api elsewhere", "channels:\n  - type: telegram\n    bot_token: \"1:x\"\n    chat_id: \"1\"\n    allow: [\"42\"]\n    api_url: http://tg.example\n", "must be https"},
		{"plain http api on loopback", "channels:\n  - type: telegram\n    bot_token: \"1:x\"\n    chat_id: \"1\"\n    allow: [\"42\"]\n    api_url: http://127.0.0.1:1\n", ""},
		{"api not an http URL", "channels:\n  - type: telegram\n    bot_token: \"1:x\"\n    chat_id: \"1\"\n    allow: [\"42\"]\n    api_url: ftp://tg.example\n", "api_url: \"ftp://tg.example\" must be an http or https URL"},
		{"slack app: plain http api elsewhere", "channels:\n  - type: slack_app\n    bot_token: xoxb-1\n    app_token: xapp-1\n    channel: C1\n    allow: [U1]\n    api_url: http://slack.example/api\n", "api_url must be https unless"},
		{"slack app: plain http api on loopback", "channels:\n  - type: slack_app\n    bot_token: xoxb-1\n    app_token: xapp-1\n    channel: C1\n    allow: [U1]\n    api_url: http://127.0.0.1:1/api\n", ""},
		{"slack app: api without a host", "channels:\n  - type: slack_app\n    bot_token: xoxb-1\n    app_token: xapp-1\n    channel: C1\n    allow: [U1]\n    api_url: https:///api\n", "api_url: \"https:///api\" has no host"},
		{"field of another type", "channels:\n  - type: telegram\n    bot_token: \"1:x\"\n    chat_id: \"1\"\n    allow: [\"42\"]\n    topic: x\n", "does not apply"},
		{"allow on a one-way channel", "channels:\n  - type: slack\n    url: https://hooks.example\n    allow: [\"U1\"]\n", "does not apply"},
		{"ntfy reply topic equal to topic", "channels:\n  - type: ntfy\n    url: https://ntfy.example\n    topic: t\n    reply_topic: t\n", "must differ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
			if err != nil && !errors.Is(err, ErrConfig) {
				t.Fatalf("not ErrConfig: %v", err)
			}
		})
	}
}

func FuzzParseNtfyAnswer(f *testing.F) {
	f.Add("approve " + strings.Repeat("A", 32))
	f.Add("deny " + strings.Repeat("-", 32))
	f.Add("approve")
	f.Add("maybe " + strings.Repeat("A", 32))
	f.Fuzz(func(t *testing.T, s string) {
		d, tok, ok := ParseNtfyAnswer(s)
		if !ok {
			return
		}
		if d != "approve" && d != "deny" || len(tok) != 32 || !strings.HasPrefix(strings.TrimSpace(s), d) {
			t.Fatalf("%q: %q %q", s, d, tok)
		}
	})
}

func FuzzParseSlackEnvelope(f *testing.F) {
	f.Add([]byte(`{"type":"hello","num_connections":1}`))
	f.Add([]byte(`{"envelope_id":"e1","type":"interactive","payload":{"type":"block_actions","actions":[{"action_id":"overseer_approve","value":"x"}]}}`))
	f.Add([]byte(`{"type":"disconnect","reason":"refresh_requested"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseSlackEnvelope(b)
		if err != nil {
			if e.Type != "" || e.EnvelopeID != "" {
				t.Fatalf("error %v with %+v", err, e)
			}
			return
		}
		if e.Type == "" {
			t.Fatal("no type")
		}
		var p slackInteraction
		_ = json.Unmarshal(e.Payload, &p) // must not panic
	})
}

var emailCases = []struct {
	name, raw         string
	from, tok, d, why string
	ok                bool
}{
	{"plain", "From: Ann <Ann@Example.com>\r\nSubject: Re: Overseer: Bash needs your approval [ov:" + strings.Repeat("A", 32) + "]\r\n\r\napprove\r\n",
		"ann@example.com", strings.Repeat("A", 32), "approve", "", true},
	{"quoted-printable deny with a reason", "From: ann@example.com\r\nSubject: Re: x [ov:" + strings.Repeat("b", 32) + "]\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\ndeny not =\r\ntoday\r\n> approve\r\n",
		"ann@example.com", strings.Repeat("b", 32), "deny", "not today", true},
	{"multipart", "From: ann@example.com\r\nSubject: =?utf-8?q?Re:_x_[ov:" + strings.Repeat("c", 32) + "]?=\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/alternative; boundary=XX\r\n\r\n--XX\r\nContent-Type: text/html\r\n\r\n<p>approve</p>\r\n" +
		"--XX\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\nYXBwcm92ZQ==\r\n--XX--\r\n",
		"ann@example.com", strings.Repeat("c", 32), "approve", "", true},
	{"no token", "From: ann@example.com\r\nSubject: Re: x\r\n\r\napprove\r\n", "", "", "", "", false},
	{"two tokens", "From: ann@example.com\r\nSubject: [ov:" + strings.Repeat("A", 32) + "] [ov:" + strings.Repeat("B", 32) + "]\r\n\r\napprove\r\n", "", "", "", "", false},
	{"two senders", "From: a@example.com, b@example.com\r\nSubject: [ov:" + strings.Repeat("A", 32) + "]\r\n\r\napprove\r\n", "", "", "", "", false},
	{"html only", "From: ann@example.com\r\nSubject: [ov:" + strings.Repeat("A", 32) + "]\r\nContent-Type: text/html\r\n\r\napprove\r\n", "", "", "", "", false},
	{"no decision", "From: ann@example.com\r\nSubject: [ov:" + strings.Repeat("A", 32) + "]\r\n\r\nthanks!\r\n> approve\r\n", "", "", "", "", false},
}

func TestParseEmailReply(t *testing.T) {
	for _, tc := range emailCases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseEmailReply([]byte(tc.raw))
			if (err == nil) != tc.ok {
				t.Fatalf("err %v", err)
			}
			if tc.ok && (r.From != tc.from || r.Token != tc.tok || r.Decision != tc.d || r.Reason != tc.why) {
				t.Fatalf("%+v", r)
			}
		})
	}
}

func FuzzParseEmailReply(f *testing.F) {
	for _, tc := range emailCases {
		f.Add([]byte(tc.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := ParseEmailReply(raw)
		if err != nil {
			return
		}
		if r.Decision != "approve" && r.Decision != "deny" || len(r.Token) != 32 || r.From == "" {
			t.Fatalf("%+v", r)
		}
	})
}
