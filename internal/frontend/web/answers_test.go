package web

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/store"
)

func TestChannelAnswers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tokenFor := func(t *testing.T, apr *store.Approval, channel string) string {
		t.Helper()
		tok, exp, err := e.con.AnswerToken(ctx, apr, channel)
		if err != nil {
			t.Fatal(err)
		}
		if len(tok) != AnswerTokenLen || !WellFormedAnswerToken(tok) {
			t.Fatalf("token %q", tok)
		}
		if !exp.After(e.clk.Now()) {
			t.Fatalf("expires %v", exp)
		}
		return tok
	}
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	for _, tc := range []struct {
		name    string
		answers func(tok string) []ChannelAnswer
		before  func(e *env, apr *store.Approval)
		errs    []error // per answer; nil means it applied
		final   store.ApprovalStatus
		reason  string
	}{
		{name: "approve", answers: func(tok string) []ChannelAnswer {
			return []ChannelAnswer{{Token: tok, Decision: "approve", Channel: "telegram", Who: "telegram:42"}}
		}, errs: []error{nil}, final: store.StatusApproved},
		{name: "deny with a reason", answers: func(tok string) []ChannelAnswer {
			return []ChannelAnswer{{Token: tok, Decision: "deny", Channel: "telegram", Who: "telegram:42", Reason: "use git clean"}}
		}, errs: []error{nil}, final: store.StatusDenied, reason: "use git clean"},
		{name: "a replay is refused", answers: func(tok string) []ChannelAnswer {
			a := ChannelAnswer{Token: tok, Decision: "deny", Channel: "telegram", Who: "telegram:42"}
			b := a
			b.Decision = "approve"
			return []ChannelAnswer{a, b}
		}, errs: []error{nil, ErrLinkUsed}, final: store.StatusDenied},
		{name: "a token of another channel is refused", answers: func(tok string) []ChannelAnswer {
			return []ChannelAnswer{{Token: tok, Decision: "approve", Channel: "ntfy", Who: "ntfy:x"}}
		}, errs: []error{ErrLinkMismatch}, final: store.StatusPending},
		{name: "an altered token is refused", answers: func(tok string) []ChannelAnswer {
			return []ChannelAnswer{
				{Token: flip(tok, 20), Decision: "approve", Channel: "telegram", Who: "telegram:42"},
				{Token: flip(tok, 3), Decision: "approve", Channel: "telegram", Who: "telegram:42"},
				{Token: tok[:31], Decision: "approve", Channel: "telegram", Who: "telegram:42"},
				{Token: tok + "A", Decision: "approve", Channel: "telegram", Who: "telegram:42"},
				{Token: "", Decision: "approve", Channel: "telegram", Who: "telegram:42"},
			}
		}, errs: []error{ErrLinkInvalid, ErrLinkInvalid, ErrLinkInvalid, ErrLinkInvalid, ErrLinkInvalid}, final: store.StatusPending},
		{name: "an unknown decision is refused", answers: func(tok string) []ChannelAnswer {
			return []ChannelAnswer{{Token: tok, Decision: "abort", Channel: "telegram", Who: "telegram:42"},
				{Token: tok, Decision: "", Channel: "telegram", Who: "telegram:42"}}
		}, errs: []error{ErrLinkInvalid, ErrLinkInvalid}, final: store.StatusPending},
		{name: "an expired token is refused", before: func(e *env, _ *store.Approval) { e.clk.Advance(DefaultLinkTTL + time.Second) },
			answers: func(tok string) []ChannelAnswer {
				return []ChannelAnswer{{Token: tok, Decision: "approve", Channel: "telegram", Who: "telegram:42"}}
			}, errs: []error{ErrLinkExpired}, final: store.StatusPending},
		{name: "after an answer elsewhere nothing changes", before: func(e *env, apr *store.Approval) {
			if _, _, err := e.k.Answer(ctx, apr.ID, store.Answer{Decision: "deny", Who: "ann", Channel: "web"}); err != nil {
				t.Fatal(err)
			}
		}, answers: func(tok string) []ChannelAnswer {
			return []ChannelAnswer{{Token: tok, Decision: "approve", Channel: "telegram", Who: "telegram:42"}}
		}, errs: []error{errAlreadyAnswered}, final: store.StatusDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apr := e.submit("deploy", map[string]any{"target": tc.name})
			tok := tokenFor(t, apr, "telegram")
			if tc.before != nil {
				tc.before(e, apr)
			}
			for i, a := range tc.answers(tok) {
				got, applied, err := e.con.AnswerFromChannel(ctx, a)
				want := tc.errs[i]
				switch {
				case want == nil && (err != nil || !applied):
					t.Fatalf("answer %d: %v applied=%v", i, err, applied)
				case want == errAlreadyAnswered && (err != nil || applied || got == nil):
					t.Fatalf("answer %d: %v applied=%v, want recorded as late", i, err, applied)
				case want != nil && want != errAlreadyAnswered && !errors.Is(err, want):
					t.Fatalf("answer %d: %v, want %v", i, err, want)
				}
			}
			got := e.approval(apr.ID)
			if got.Status != tc.final {
				t.Fatalf("status %s, want %s", got.Status, tc.final)
			}
			if tc.final != store.StatusPending && tc.errs[0] == nil {
				if got.Answer.Channel != "telegram" || got.Answer.Who != "telegram:42" || got.Answer.Reason != tc.reason {
					t.Fatalf("answer %+v", got.Answer)
				}
			}
		})
	}
	// Every refusal above is in the audit log, with channel and identity.
	recs, err := e.k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{TypeAnswerRefused}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+1+5+2+1 {
		t.Fatalf("%d refusals audited", len(recs))
	}
	var d map[string]string
	if err := json.Unmarshal(recs[0].Data, &d); err != nil || d["who"] != "telegram:42" || d["why"] != "used" || d["approval"] == "" {
		t.Fatalf("record %s (%v)", recs[0].Data, err)
	}
	if recs[0].Tool != "deploy" {
		t.Fatalf("record's tool %q", recs[0].Tool)
	}
}

// errAlreadyAnswered marks a case whose answer is recorded as late.
var errAlreadyAnswered = errors.New("already answered")

func TestAnswerTokenBoundToArguments(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	apr := e.submit("deploy", map[string]any{"target": "staging"})
	tok, _, err := e.con.AnswerToken(ctx, apr, "telegram")
	if err != nil {
		t.Fatal(err)
	}
	// The stored claims are rewritten to another approval (as if the
	// database were edited): the tag no longer matches.
	other := e.submit("deploy", map[string]any{"target": "prod"})
	nonce := tok[:AnswerTokenLen/2]
	if err := e.k.Store.UpdateState(ctx, answerNS, nonce, func(old []byte) ([]byte, error) {
		var cl AnswerClaims
		_ = json.Unmarshal(old, &cl)
		cl.Approval, cl.ArgsHash = other.ID, other.ArgsHash
		return json.Marshal(cl)
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.con.AnswerFromChannel(ctx, ChannelAnswer{Token: tok, Decision: "approve", Channel: "telegram", Who: "x"}); !errors.Is(err, ErrLinkInvalid) {
		t.Fatalf("rewritten claims: %v", err)
	}
	if got := e.approval(other.ID); got.Status != store.StatusPending {
		t.Fatalf("other approval %s", got.Status)
	}
	// A token made for other arguments than the approval's now (as if the
	// action had changed under it) is refused as a mismatch, and audited.
	changed := *other
	changed.ArgsHash = "sha256:the-arguments-the-person-was-shown"
	tok2, _, err := e.con.AnswerToken(ctx, &changed, "telegram")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.con.AnswerFromChannel(ctx, ChannelAnswer{Token: tok2, Decision: "approve", Channel: "telegram", Who: "x"}); !errors.Is(err, ErrLinkMismatch) {
		t.Fatalf("changed arguments: %v", err)
	}
	if got := e.approval(other.ID); got.Status != store.StatusPending {
		t.Fatalf("other approval %s", got.Status)
	}
	recs, err := e.k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{TypeAnswerRefused}})
	if err != nil || len(recs) != 2 || !strings.Contains(string(recs[1].Data), `"why":"mismatch"`) {
		t.Fatalf("audited refusals: %v %d", err, len(recs))
	}
	if !strings.Contains(refusalReason(ErrLinkMismatch), "mismatch") {
		t.Fatal("refusal reason")
	}
}

func FuzzWellFormedAnswerToken(f *testing.F) {
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add("")
	f.Add("a.b")
	f.Fuzz(func(t *testing.T, s string) {
		if WellFormedAnswerToken(s) && len(s) != AnswerTokenLen {
			t.Fatalf("%q accepted", s)
		}
	})
}
