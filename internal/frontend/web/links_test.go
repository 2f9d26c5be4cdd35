package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store"
)

// linkPost answers through a link the way its page's form does.
func linkPost(t *testing.T, e *env, link, decision, reason string) (int, string) {
	t.Helper()
	b := e.newBrowser()
	resp, body := b.do(mustReq(t, "POST", link, url.Values{"decision": {decision}, "reason": {reason}}))
	return resp.StatusCode, string(body)
}

func mustReq(t *testing.T, method, u string, form url.Values) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

func TestApprovalLinks(t *testing.T) {
	e := newEnv(t)
	type step struct {
		link     string // "approve" or "deny": which link of the pair
		decision string // the form's decision
		status   int
		want     string // in the page
	}
	for _, tc := range []struct {
		name   string
		steps  []step
		before func(e *env, l Links)
		final  store.ApprovalStatus
		who    string
	}{
		{name: "approve once", steps: []step{{"approve", "approve", 200, "Answered: approved"}},
			final: store.StatusApproved, who: "slack"},
		{name: "deny with a reason", steps: []step{{"deny", "deny", 200, "Answered: denied"}},
			final: store.StatusDenied, who: "slack"},
		{name: "a link works once", steps: []step{
			{"approve", "approve", 200, "Answered: approved"},
			{"approve", "approve", http.StatusGone, "used already"}},
			final: store.StatusApproved, who: "slack"},
		{name: "using one link of a message spends the other", steps: []step{
			{"deny", "deny", 200, "Answered: denied"},
			{"approve", "approve", http.StatusGone, "used already"}},
			final: store.StatusDenied, who: "slack"},
		{name: "the form must state the link's decision", steps: []step{
			{"deny", "approve", http.StatusBadRequest, "does not match"},
			{"deny", "deny", 200, "Answered: denied"}},
			final: store.StatusDenied, who: "slack"},
		{name: "an expired link answers nothing", before: func(e *env, l Links) { e.clk.Advance(DefaultLinkTTL + time.Second) },
			steps: []step{{"approve", "approve", http.StatusGone, "expired"}}, final: store.StatusPending},
		{name: "an answered request is not answered again", before: func(e *env, l Links) {
			b := e.newBrowser().login()
			id := strings.TrimPrefix(l.Open, e.srv.URL+"/ui/#/queue/")
			b.send("POST", "/ui/api/approvals/"+id+"/deny", map[string]any{}, nil)
		}, steps: []step{{"approve", "approve", 200, "Already answered"}}, final: store.StatusDenied, who: "ann"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apr := e.submit("deploy", map[string]any{"target": tc.name})
			l, err := e.con.Links(apr, e.srv.URL, "slack")
			if err != nil {
				t.Fatal(err)
			}
			if tc.before != nil {
				tc.before(e, l)
			}
			for i, s := range tc.steps {
				link := l.Approve
				if s.link == "deny" {
					link = l.Deny
				}
				st, body := linkPost(t, e, link, s.decision, "not now")
				if st != s.status || !strings.Contains(body, s.want) {
					t.Fatalf("step %d: %d (want %d), page lacks %q:\n%s", i, st, s.status, s.want, body)
				}
			}
			got := e.approval(apr.ID)
			if got.Status != tc.final {
				t.Fatalf("status %s, want %s", got.Status, tc.final)
			}
			if tc.who != "" && (got.Answer == nil || got.Answer.Who != tc.who) {
				t.Fatalf("answer %+v, want who %s", got.Answer, tc.who)
			}
			if tc.final == store.StatusDenied && tc.who == "slack" && got.Answer.Reason != "not now" {
				t.Fatalf("reason %q", got.Answer.Reason)
			}
			if tc.who == "slack" && got.Answer.Channel != LinkChannel {
				t.Fatalf("channel %q", got.Answer.Channel)
			}
		})
	}
}

func TestLinkPageNeverAnswers(t *testing.T) {
	e := newEnv(t)
	apr := e.submit("deploy", map[string]any{"target": "prod"})
	l, err := e.con.Links(apr, e.srv.URL, "email")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // a mail scanner fetching the link
		st, body := e.newBrowser().get(strings.TrimPrefix(l.Approve, e.srv.URL))
		if st != 200 || !strings.Contains(string(body), "Approve this action?") || !strings.Contains(string(body), "target: prod") {
			t.Fatalf("%d %s", st, body)
		}
	}
	if got := e.approval(apr.ID); got.Status != store.StatusPending {
		t.Fatalf("a GET answered: %s", got.Status)
	}
	if st, _ := linkPost(t, e, l.Approve, "approve", ""); st != 200 {
		t.Fatal("the link was spent by a GET")
	}
}

func TestForgedLinks(t *testing.T) {
	e := newEnv(t)
	apr := e.submit("deploy", map[string]any{"target": "prod"})
	other := e.submit("deploy", map[string]any{"target": "staging"})
	l, err := e.con.Links(apr, e.srv.URL, "x")
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimPrefix(l.Approve, e.srv.URL+"/ui/a/")
	payload, sig, _ := strings.Cut(tok, ".")
	signed := func(cl LinkClaims) string {
		s, err := e.con.signLink(cl)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good, err := e.con.ParseLink(tok)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := New(e.k, Options{Token: testToken, KeyFile: t.TempDir() + "/other.key"})
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := otherKey.Links(apr, e.srv.URL, "x")
	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"flipped signature", payload + "." + flip(sig), http.StatusForbidden},
		{"flipped payload", flip(payload) + "." + sig, http.StatusForbidden},
		{"no signature", payload, http.StatusForbidden},
		{"made with another key", strings.TrimPrefix(foreign.Approve, e.srv.URL+"/ui/a/"), http.StatusForbidden},
		{"claims moved to another approval", signed(LinkClaims{Approval: other.ID, ArgsHash: good.ArgsHash, Decision: "approve",
			Expires: good.Expires, Nonce: "n1"}), http.StatusForbidden},
		{"arguments changed", signed(LinkClaims{Approval: apr.ID, ArgsHash: strings.Repeat("0", 64), Decision: "approve",
			Expires: good.Expires, Nonce: "n2"}), http.StatusForbidden},
		{"unknown decision", signed(LinkClaims{Approval: apr.ID, ArgsHash: apr.ArgsHash, Decision: "abort",
			Expires: good.Expires, Nonce: "n3"}), http.StatusForbidden},
		{"unknown approval", signed(LinkClaims{Approval: "apr_nope", ArgsHash: apr.ArgsHash, Decision: "approve",
			Expires: good.Expires, Nonce: "n4"}), http.StatusNotFound},
		{"garbage", "%%%", http.StatusForbidden},
		{"too long", strings.Repeat("a", maxTokenLen+1), http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, body := linkPost(t, e, e.srv.URL+"/ui/a/"+url.PathEscape(tc.token), "approve", "")
			if st != tc.status {
				t.Fatalf("status %d, want %d: %s", st, tc.status, body)
			}
		})
	}
	for _, id := range []string{apr.ID, other.ID} {
		if got := e.approval(id); got.Status != store.StatusPending {
			t.Fatalf("a forged link answered %s: %s", id, got.Status)
		}
	}
}

func TestLinksExpireWithTheApproval(t *testing.T) {
	e := newEnv(t)
	apr := e.submit("deploy", map[string]any{"target": "prod"})
	con, err := New(e.k, Options{Token: testToken, LinkTTL: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l, err := con.Links(apr, "https://phone.example:7777/", "x")
	if err != nil {
		t.Fatal(err)
	}
	if !l.Expires.Equal(apr.Deadline.Truncate(time.Second)) {
		t.Fatalf("expires %v, want the deadline %v", l.Expires, apr.Deadline)
	}
	if !strings.HasPrefix(l.Approve, "https://phone.example:7777/ui/a/") || l.Open != "https://phone.example:7777/ui/#/queue/"+apr.ID {
		t.Fatalf("links %+v", l)
	}
	for _, base := range []string{"", "ftp://x", "phone.example", "http://"} {
		if _, err := con.Links(apr, base, "x"); err == nil {
			t.Errorf("base %q accepted", base)
		}
	}
}

func FuzzParseLink(f *testing.F) {
	c := &Console{key: []byte(strings.Repeat("k", 32)), clk: clock.NewFake(t0)}
	exp := t0.Add(time.Hour).Unix()
	for _, cl := range []LinkClaims{
		{Approval: "apr_x", ArgsHash: "h", Decision: "approve", Expires: exp, Nonce: "n"},
		{Approval: "apr_y", ArgsHash: "h2", Decision: "deny", Expires: exp, Nonce: "n2", Who: "slack"},
		{Approval: "apr_z", ArgsHash: "h", Decision: "approve", Expires: t0.Unix() - 1, Nonce: "n"},
	} {
		tok, err := c.signLink(cl)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tok)
		f.Add(tok[:len(tok)-1])
	}
	for _, s := range []string{"", ".", "a.b", "e30.", "%%%", strings.Repeat("x.", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		cl, err := c.ParseLink(tok)
		if err != nil {
			return
		}
		// Whatever is accepted was signed by us: it re-signs to itself.
		again, err := c.signLink(cl)
		if err != nil || again != tok {
			t.Fatalf("accepted %q, which re-signs to %q", tok, again)
		}
		if cl.Approval == "" || cl.Nonce == "" || (cl.Decision != "approve" && cl.Decision != "deny") {
			t.Fatalf("accepted incomplete claims %+v", cl)
		}
	})
}

// flip changes the first character of s.
func flip(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}
