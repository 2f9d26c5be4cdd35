// Package storetest is a conformance suite for implementations of
// store.Store. An implementation's tests call Run with a function that opens
// a fresh, empty store, and RunShared with one that opens two handles on the
// same fresh backend (two processes sharing one database, in effect).
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/store"
)

// Opener opens a fresh, empty store for one test. The suite closes the
// store itself in some tests; the opener's own cleanup may close it again,
// which must not panic.
type Opener func(t *testing.T) store.Store

// SharedOpener opens two handles on the same fresh, empty backend.
type SharedOpener func(t *testing.T) (a, b store.Store)

// Run runs the conformance suite on the stores open makes.
func Run(t *testing.T, open Opener) {
	t.Run("Audit", func(t *testing.T) { testAudit(t, open) })
	t.Run("AuditBatch", func(t *testing.T) { testAuditBatch(t, open) })
	t.Run("Approvals", func(t *testing.T) { testApprovals(t, open) })
	t.Run("Rules", func(t *testing.T) { testRules(t, open) })
	t.Run("State", func(t *testing.T) { testState(t, open) })
	t.Run("Closed", func(t *testing.T) { testClosed(t, open) })
	t.Run("Canceled", func(t *testing.T) { testCanceled(t, open) })
	t.Run("Pauses", func(t *testing.T) { testPauses(t, open) })
	t.Run("Controls", func(t *testing.T) { testControls(t, open) })
	t.Run("UpdateStates", func(t *testing.T) { testUpdateStates(t, open) })
}

// T0 is the time the suite's records start at. It has nanoseconds, which a
// store must keep.
var T0 = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)

// ChainSeal returns a seal function for AppendAudit that numbers records
// after the tail and links each to its predecessor with a simple hash. It
// also checks that the tail it is given is the chain's true tail as far as
// the records it sealed before tell (never going backwards).
func ChainSeal() func(tailSeq int64, tailHash string, recs []store.AuditRecord) error {
	var (
		mu       sync.Mutex
		lastSeen int64
	)
	return func(tailSeq int64, tailHash string, recs []store.AuditRecord) error {
		mu.Lock()
		defer mu.Unlock()
		if tailSeq < lastSeen {
			return fmt.Errorf("tail went backwards: %d after %d", tailSeq, lastSeen)
		}
		if (tailSeq == 0) != (tailHash == "") {
			return fmt.Errorf("inconsistent tail (%d, %q)", tailSeq, tailHash)
		}
		prev := tailHash
		for i := range recs {
			recs[i].Seq = tailSeq + int64(i) + 1
			recs[i].PrevHash = prev
			recs[i].Hash = SimpleHash(prev, recs[i])
			prev = recs[i].Hash
		}
		lastSeen = tailSeq + int64(len(recs))
		return nil
	}
}

// SimpleHash is the link ChainSeal makes.
func SimpleHash(prev string, r store.AuditRecord) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d\n%s\n", prev, r.Seq, r.Type)
	h.Write(r.Data)
	return hex.EncodeToString(h.Sum(nil))
}

// CheckChain fails t unless recs are numbered 1..n without gaps and each
// links to its predecessor as ChainSeal links them.
func CheckChain(t testing.TB, recs []store.AuditRecord) {
	t.Helper()
	prev := ""
	for i, r := range recs {
		if r.Seq != int64(i)+1 {
			t.Fatalf("record %d has seq %d: chain has a gap", i+1, r.Seq)
		}
		if r.PrevHash != prev {
			t.Fatalf("record %d: prev_hash %q, want %q", r.Seq, r.PrevHash, prev)
		}
		if got := SimpleHash(prev, r); got != r.Hash {
			t.Fatalf("record %d: hash %q, want %q", r.Seq, r.Hash, got)
		}
		prev = r.Hash
	}
}

// auditFixture is a small, varied log: 6 records a second apart.
func auditFixture() []store.AuditRecord {
	zone := time.FixedZone("X", 5*3600+1800) // stored times must come back as the same instant
	mk := func(i int, typ, actionID, agent, session, tool, data string) store.AuditRecord {
		return store.AuditRecord{Time: T0.Add(time.Duration(i) * time.Second).In(zone), Type: typ,
			ActionID: actionID, Agent: agent, Session: session, Tool: tool, Data: json.RawMessage(data)}
	}
	return []store.AuditRecord{
		mk(0, "action", "a1", "claude-code", "s1", "Bash", `{"command":"ls -la"}`),
		mk(1, "verdict", "a1", "claude-code", "s1", "Bash", `{"level":"auto"}`),
		mk(2, "action", "a2", "codex", "s2", "apply_patch", `{"patch":"--- a\n+++ b"}`),
		mk(3, "approval_request", "a2", "codex", "s2", "apply_patch", `{"level":"approve", "note":  "spaces kept"}`),
		mk(4, "answer", "a2", "", "s2", "", `{"who":"李雷","decision":"approve"}`),
		mk(5, "policy_change", "", "", "", "", `null`),
	}
}

func sameRecord(t testing.TB, got, want store.AuditRecord) {
	t.Helper()
	if got.Seq != want.Seq || !got.Time.Equal(want.Time) || got.Type != want.Type || got.ActionID != want.ActionID ||
		got.Agent != want.Agent || got.Session != want.Session || got.Tool != want.Tool ||
		string(got.Data) != string(want.Data) || got.PrevHash != want.PrevHash || got.Hash != want.Hash {
		t.Fatalf("record differs:\n got  %+v (data %s)\n want %+v (data %s)", got, got.Data, want, want.Data)
	}
}

func seqs(recs []store.AuditRecord) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.Seq
	}
	return out
}

func appendFixture(t *testing.T, st store.Store) []store.AuditRecord {
	t.Helper()
	recs := auditFixture()
	if err := st.AppendAudit(t.Context(), recs, ChainSeal()); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	return recs
}

func testAudit(t *testing.T, open Opener) {
	t.Run("RoundTripExact", func(t *testing.T) {
		st := open(t)
		want := appendFixture(t, st)
		var got []store.AuditRecord
		if err := st.ScanAudit(t.Context(), 0, func(r store.AuditRecord) error { got = append(got, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("scanned %d records, want %d", len(got), len(want))
		}
		for i := range want {
			sameRecord(t, got[i], want[i])
			if got[i].Time.Location() != time.UTC {
				t.Errorf("record %d: time in %v, want UTC", got[i].Seq, got[i].Time.Location())
			}
		}
		CheckChain(t, got)
	})

	t.Run("SealSeesTail", func(t *testing.T) {
		st := open(t)
		type tail struct {
			seq  int64
			hash string
		}
		var seen []tail
		seal := ChainSeal()
		spy := func(s int64, h string, recs []store.AuditRecord) error {
			seen = append(seen, tail{s, h})
			return seal(s, h, recs)
		}
		a := auditFixture()[:2]
		if err := st.AppendAudit(t.Context(), a, spy); err != nil {
			t.Fatal(err)
		}
		b := auditFixture()[2:3]
		if err := st.AppendAudit(t.Context(), b, spy); err != nil {
			t.Fatal(err)
		}
		want := []tail{{0, ""}, {2, a[1].Hash}}
		if len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
			t.Fatalf("seal saw tails %v, want %v", seen, want)
		}
		if b[0].Seq != 3 {
			t.Fatalf("sealed seq %d, want 3 (the caller's slice holds the sealed records)", b[0].Seq)
		}
	})

	t.Run("EmptyBatchIsNoop", func(t *testing.T) {
		st := open(t)
		called := false
		err := st.AppendAudit(t.Context(), nil, func(int64, string, []store.AuditRecord) error { called = true; return nil })
		if err != nil || called {
			t.Fatalf("empty append: err %v, seal called %v", err, called)
		}
	})

	t.Run("SealErrorWritesNothing", func(t *testing.T) {
		st := open(t)
		appendFixture(t, st)
		boom := errors.New("boom")
		err := st.AppendAudit(t.Context(), auditFixture(), func(s int64, h string, recs []store.AuditRecord) error {
			_ = ChainSeal()(s, h, recs)
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want wrapping %v", err, boom)
		}
		recs, err := st.QueryAudit(t.Context(), store.AuditQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(auditFixture()) {
			t.Fatalf("%d records after a failed seal, want %d", len(recs), len(auditFixture()))
		}
	})

	t.Run("BadSealRejected", func(t *testing.T) {
		st := open(t)
		appendFixture(t, st)
		// A seal that reuses a sequence number must fail the whole batch.
		err := st.AppendAudit(t.Context(), auditFixture()[:2], func(s int64, h string, recs []store.AuditRecord) error {
			for i := range recs {
				recs[i].Seq, recs[i].PrevHash, recs[i].Hash = s+1, h, "x"
			}
			return nil
		})
		if err == nil {
			t.Fatal("duplicate seq accepted")
		}
		recs, err := st.QueryAudit(t.Context(), store.AuditQuery{})
		if err != nil {
			t.Fatal(err)
		}
		CheckChain(t, recs)
		if len(recs) != len(auditFixture()) {
			t.Fatalf("%d records after a failed batch, want %d", len(recs), len(auditFixture()))
		}
	})

	t.Run("Scan", func(t *testing.T) {
		st := open(t)
		// More than one page of any reasonable paging.
		const n = 2345
		recs := make([]store.AuditRecord, n)
		for i := range recs {
			recs[i] = store.AuditRecord{Time: T0.Add(time.Duration(i) * time.Millisecond), Type: "action",
				Data: json.RawMessage(strconv.Itoa(i))}
		}
		if err := st.AppendAudit(t.Context(), recs, ChainSeal()); err != nil {
			t.Fatal(err)
		}
		for _, after := range []int64{0, 1, 999, 1000, 1001, n - 1, n, n + 10} {
			t.Run(fmt.Sprintf("after%d", after), func(t *testing.T) {
				next := after + 1
				err := st.ScanAudit(t.Context(), after, func(r store.AuditRecord) error {
					if r.Seq != next {
						return fmt.Errorf("got seq %d, want %d", r.Seq, next)
					}
					next++
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if want := max(int64(n), after) + 1; next != want {
					t.Fatalf("scan ended before seq %d, want %d", next, want)
				}
			})
		}
		t.Run("StopsOnError", func(t *testing.T) {
			stop := errors.New("stop")
			calls := 0
			err := st.ScanAudit(t.Context(), 0, func(store.AuditRecord) error {
				calls++
				if calls == 1500 {
					return stop
				}
				return nil
			})
			if !errors.Is(err, stop) || calls != 1500 {
				t.Fatalf("err %v after %d calls, want %v after 1500", err, calls, stop)
			}
		})
	})

	t.Run("Query", func(t *testing.T) {
		st := open(t)
		appendFixture(t, st)
		cases := []struct {
			name string
			q    store.AuditQuery
			want []int64
		}{
			{"all", store.AuditQuery{}, []int64{1, 2, 3, 4, 5, 6}},
			{"after", store.AuditQuery{AfterSeq: 4}, []int64{5, 6}},
			{"one type", store.AuditQuery{Types: []string{"action"}}, []int64{1, 3}},
			{"two types", store.AuditQuery{Types: []string{"verdict", "answer"}}, []int64{2, 5}},
			{"unknown type", store.AuditQuery{Types: []string{"nope"}}, nil},
			{"action id", store.AuditQuery{ActionID: "a2"}, []int64{3, 4, 5}},
			{"agent", store.AuditQuery{Agent: "claude-code"}, []int64{1, 2}},
			{"session", store.AuditQuery{Session: "s2"}, []int64{3, 4, 5}},
			{"tool", store.AuditQuery{Tool: "apply_patch"}, []int64{3, 4}},
			{"since inclusive", store.AuditQuery{Since: T0.Add(4 * time.Second)}, []int64{5, 6}},
			{"until exclusive", store.AuditQuery{Until: T0.Add(2 * time.Second)}, []int64{1, 2}},
			{"window", store.AuditQuery{Since: T0.Add(time.Second), Until: T0.Add(3 * time.Second)}, []int64{2, 3}},
			{"sub-second since", store.AuditQuery{Since: T0.Add(time.Nanosecond)}, []int64{2, 3, 4, 5, 6}},
			{"since other zone", store.AuditQuery{Since: T0.Add(5 * time.Second).In(time.FixedZone("Y", -7*3600))}, []int64{6}},
			{"text", store.AuditQuery{Text: "approve"}, []int64{4, 5}},
			{"text unicode", store.AuditQuery{Text: "李雷"}, []int64{5}},
			{"text is case sensitive", store.AuditQuery{Text: "LS -LA"}, nil},
			{"text percent is literal", store.AuditQuery{Text: "%"}, nil},
			{"limit", store.AuditQuery{Limit: 2}, []int64{1, 2}},
			{"desc", store.AuditQuery{Desc: true}, []int64{6, 5, 4, 3, 2, 1}},
			{"desc limit", store.AuditQuery{Desc: true, Limit: 2}, []int64{6, 5}},
			{"combined", store.AuditQuery{Session: "s2", Types: []string{"action", "answer"}, AfterSeq: 3, Desc: true}, []int64{5}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				got, err := st.QueryAudit(t.Context(), c.q)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(seqs(got)) != fmt.Sprint(c.want) {
					t.Fatalf("got seqs %v, want %v", seqs(got), c.want)
				}
			})
		}
	})
}

func approvalFixture(id string, created time.Time, session, argsHash string) *store.Approval {
	conf := 0.42
	act := action.Action{ID: "act-" + id, Agent: "claude-code", Session: session, Tool: "Bash", Kind: action.KindShell,
		Args: map[string]any{"command": "rm -rf build", "n": 3.0}, Cwd: "/src", Confidence: &conf, Time: created}
	return &store.Approval{
		ID: id, ActionID: act.ID, Tool: act.Tool, Kind: act.Kind, Agent: act.Agent, Session: session,
		Level: action.Approve, ArgsHash: argsHash, Action: act,
		Verdict: action.Verdict{ActionID: act.ID, Level: action.Approve, ArgsHash: argsHash,
			Reasons: []action.Reason{{Layer: "L3", Source: action.SourceGuard, Name: "rm", Level: action.Approve, Message: "deletes files"}},
			Preview: &action.Preview{Summary: "remove 2 files", Items: []string{"build/a", "build/b"}}},
		CreatedAt:       created,
		Deadline:        created.Add(5 * time.Minute),
		DefaultDecision: "deny",
	}
}

func jsonEq(t testing.TB, what string, got, want any) {
	t.Helper()
	g, err1 := json.Marshal(got)
	w, err2 := json.Marshal(want)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: marshal: %v %v", what, err1, err2)
	}
	if string(g) != string(w) {
		t.Fatalf("%s differs:\n got  %s\n want %s", what, g, w)
	}
}

func answer(decision, who string, at time.Time) store.Answer {
	return store.Answer{Decision: decision, Who: who, Channel: "cli", Reason: "because", At: at}
}

func testApprovals(t *testing.T, open Opener) {
	t.Run("CreateGet", func(t *testing.T) {
		st := open(t)
		a := approvalFixture("ap1", T0, "s1", "h1")
		if err := st.CreateApproval(t.Context(), a); err != nil {
			t.Fatal(err)
		}
		if a.Status != store.StatusPending {
			t.Fatalf("status after create = %q, want pending", a.Status)
		}
		got, err := st.GetApproval(t.Context(), "ap1")
		if err != nil {
			t.Fatal(err)
		}
		jsonEq(t, "approval", got, a)
		if !got.CreatedAt.Equal(T0) || !got.Deadline.Equal(T0.Add(5*time.Minute)) {
			t.Fatalf("times %v %v", got.CreatedAt, got.Deadline)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		st := open(t)
		cases := []struct {
			name string
			a    *store.Approval
		}{
			{"nil", nil},
			{"no id", &store.Approval{Status: store.StatusPending}},
			{"unknown status", &store.Approval{ID: "x", Status: "maybe"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if err := st.CreateApproval(t.Context(), c.a); err == nil {
					t.Fatal("accepted")
				}
			})
		}
	})

	t.Run("Duplicate", func(t *testing.T) {
		st := open(t)
		if err := st.CreateApproval(t.Context(), approvalFixture("d", T0, "s", "h")); err != nil {
			t.Fatal(err)
		}
		b := approvalFixture("d", T0.Add(time.Hour), "other", "h2")
		if err := st.CreateApproval(t.Context(), b); err == nil {
			t.Fatal("duplicate id accepted")
		}
		got, err := st.GetApproval(t.Context(), "d")
		if err != nil {
			t.Fatal(err)
		}
		if got.Session != "s" {
			t.Fatalf("duplicate create replaced the approval (session %q)", got.Session)
		}
	})

	t.Run("GetMissing", func(t *testing.T) {
		st := open(t)
		if _, err := st.GetApproval(t.Context(), "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})

	t.Run("List", func(t *testing.T) {
		st := open(t)
		// Created out of order; listed oldest first.
		for _, a := range []*store.Approval{
			approvalFixture("c", T0.Add(2*time.Second), "s2", "h1"),
			approvalFixture("a", T0, "s1", "h1"),
			approvalFixture("b", T0.Add(time.Second), "s1", "h2"),
			approvalFixture("d", T0.Add(3*time.Second), "s2", "h2"),
		} {
			if err := st.CreateApproval(t.Context(), a); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := st.AnswerApproval(t.Context(), "b", store.StatusApproved, answer("approve", "ann", T0)); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			f    store.ApprovalFilter
			want string
		}{
			{"all", store.ApprovalFilter{}, "[a b c d]"},
			{"pending", store.ApprovalFilter{Status: store.StatusPending}, "[a c d]"},
			{"approved", store.ApprovalFilter{Status: store.StatusApproved}, "[b]"},
			{"args hash", store.ApprovalFilter{ArgsHash: "h2"}, "[b d]"},
			{"session", store.ApprovalFilter{Session: "s2"}, "[c d]"},
			{"limit", store.ApprovalFilter{Limit: 3}, "[a b c]"},
			{"pending limit", store.ApprovalFilter{Status: store.StatusPending, Limit: 2}, "[a c]"},
			{"combined", store.ApprovalFilter{Session: "s1", ArgsHash: "h2", Status: store.StatusApproved}, "[b]"},
			{"none", store.ApprovalFilter{Session: "zzz"}, "[]"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				got, err := st.ListApprovals(t.Context(), c.f)
				if err != nil {
					t.Fatal(err)
				}
				ids := make([]string, len(got))
				for i, a := range got {
					ids[i] = a.ID
					if a.ID == "b" && (len(a.Answers) != 1 || a.Answer == nil || a.Answer.Who != "ann") {
						t.Fatalf("listed approval b lacks its answers: %+v", a)
					}
					if a.ID != "b" && len(a.Answers) != 0 {
						t.Fatalf("approval %s has answers %+v", a.ID, a.Answers)
					}
				}
				if fmt.Sprint(ids) != c.want {
					t.Fatalf("got %v, want %v", ids, c.want)
				}
			})
		}
	})

	t.Run("Answer", func(t *testing.T) {
		type step struct {
			status      store.ApprovalStatus
			ans         store.Answer
			wantApplied bool
			wantStatus  store.ApprovalStatus
		}
		at := T0.Add(time.Minute)
		cases := []struct {
			name  string
			steps []step
		}{
			{"approve", []step{{store.StatusApproved, answer("approve", "ann", at), true, store.StatusApproved}}},
			{"deny", []step{{store.StatusDenied, answer("deny", "ann", at), true, store.StatusDenied}}},
			{"expire", []step{{store.StatusExpired, answer("deny", "timeout", at), true, store.StatusExpired}}},
			{"abort", []step{{store.StatusAborted, answer("abort", "ann", at), true, store.StatusAborted}}},
			{"first wins", []step{
				{store.StatusDenied, answer("deny", "ann", at), true, store.StatusDenied},
				{store.StatusApproved, answer("approve", "bob", at.Add(time.Second)), false, store.StatusDenied},
				{store.StatusExpired, answer("deny", "timeout", at.Add(2*time.Second)), false, store.StatusDenied},
			}},
			{"non-terminal is recorded only", []step{
				{store.StatusPending, answer("", "ann", at), false, store.StatusPending},
				{"", answer("", "ann", at), false, store.StatusPending},
				{store.StatusApproved, answer("approve", "bob", at), true, store.StatusApproved},
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				st := open(t)
				if err := st.CreateApproval(t.Context(), approvalFixture("x", T0, "s", "h")); err != nil {
					t.Fatal(err)
				}
				var firstApplied *store.Answer
				for i, s := range c.steps {
					got, applied, err := st.AnswerApproval(t.Context(), "x", s.status, s.ans)
					if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					if applied != s.wantApplied || got.Status != s.wantStatus {
						t.Fatalf("step %d: applied %v status %q, want %v %q", i, applied, got.Status, s.wantApplied, s.wantStatus)
					}
					if applied && firstApplied == nil {
						a := s.ans
						a.Applied = true
						firstApplied = &a
					}
					if len(got.Answers) != i+1 {
						t.Fatalf("step %d: %d answers recorded, want %d", i, len(got.Answers), i+1)
					}
					for j := 0; j <= i; j++ {
						if got.Answers[j].Who != c.steps[j].ans.Who || !got.Answers[j].At.Equal(c.steps[j].ans.At) ||
							got.Answers[j].Applied != c.steps[j].wantApplied {
							t.Fatalf("step %d: answer %d is %+v", i, j, got.Answers[j])
						}
					}
					if firstApplied == nil {
						if got.Answer != nil {
							t.Fatalf("step %d: terminal answer %+v before any applied", i, got.Answer)
						}
					} else {
						jsonEq(t, "terminal answer", got.Answer, firstApplied)
					}
					stored, err := st.GetApproval(t.Context(), "x")
					if err != nil {
						t.Fatal(err)
					}
					jsonEq(t, "stored approval", stored, got)
				}
			})
		}
	})

	t.Run("AnswerMissing", func(t *testing.T) {
		st := open(t)
		_, _, err := st.AnswerApproval(t.Context(), "nope", store.StatusApproved, answer("approve", "ann", T0))
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})

	t.Run("AnswerUnknownStatus", func(t *testing.T) {
		st := open(t)
		if err := st.CreateApproval(t.Context(), approvalFixture("x", T0, "s", "h")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.AnswerApproval(t.Context(), "x", "yes-please", answer("approve", "ann", T0)); err == nil {
			t.Fatal("unknown status accepted")
		}
		got, err := st.GetApproval(t.Context(), "x")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != store.StatusPending || len(got.Answers) != 0 {
			t.Fatalf("a rejected answer changed the approval: %+v", got)
		}
	})

	t.Run("ConcurrentAnswersOneWins", func(t *testing.T) {
		st := open(t)
		concurrentAnswers(t, st, st)
	})
}

// concurrentAnswers answers one approval from many goroutines through a and
// b alternately and checks that exactly one answer was applied.
func concurrentAnswers(t *testing.T, a, b store.Store) {
	t.Helper()
	if err := a.CreateApproval(t.Context(), approvalFixture("race", T0, "s", "h")); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []string
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, status := a, store.StatusApproved
			if i%2 == 1 {
				st, status = b, store.StatusDenied
			}
			who := fmt.Sprintf("p%d", i)
			_, applied, err := st.AnswerApproval(t.Context(), "race", status, answer(string(status), who, T0))
			if err != nil {
				t.Errorf("answer %d: %v", i, err)
				return
			}
			if applied {
				mu.Lock()
				winners = append(winners, who)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d answers applied (%v), want exactly 1", len(winners), winners)
	}
	got, err := b.GetApproval(t.Context(), "race")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Answers) != n || got.Answer == nil || got.Answer.Who != winners[0] {
		t.Fatalf("stored %d answers, terminal %+v; want %d and %s", len(got.Answers), got.Answer, n, winners[0])
	}
	applied := 0
	for _, ans := range got.Answers {
		if ans.Applied {
			applied++
		}
	}
	if applied != 1 || !got.Answers[0].Applied {
		t.Fatalf("applied flags wrong: %d applied, first %+v", applied, got.Answers[0])
	}
}

func rule(id string, pos int, expires time.Time) *store.UserRule {
	return &store.UserRule{ID: id, Position: pos, Rule: json.RawMessage(`{"name":"` + id + `","level":"approve"}`),
		Origin: "human", CreatedBy: "ann", CreatedAt: T0, ExpiresAt: expires}
}

func ruleIDs(rs []store.UserRule) string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = fmt.Sprintf("%s@%d", r.ID, r.Position)
	}
	return fmt.Sprint(ids)
}

func testRules(t *testing.T, open Opener) {
	t.Run("PutListOrder", func(t *testing.T) {
		st := open(t)
		for _, r := range []*store.UserRule{rule("c", 30, time.Time{}), rule("a", 10, time.Time{}), rule("b", 20, time.Time{})} {
			if err := st.PutUserRule(t.Context(), r); err != nil {
				t.Fatal(err)
			}
		}
		app := rule("z", 0, time.Time{})
		if err := st.PutUserRule(t.Context(), app); err != nil {
			t.Fatal(err)
		}
		if app.Position <= 30 {
			t.Fatalf("appended rule got position %d, want > 30", app.Position)
		}
		got, err := st.ListUserRules(t.Context(), T0)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("[a@10 b@20 c@30 z@%d]", app.Position); ruleIDs(got) != want {
			t.Fatalf("got %s, want %s", ruleIDs(got), want)
		}
		jsonEq(t, "rule a", got[0], rule("a", 10, time.Time{}))
	})

	t.Run("Replace", func(t *testing.T) {
		st := open(t)
		for _, r := range []*store.UserRule{rule("a", 10, time.Time{}), rule("b", 20, time.Time{})} {
			if err := st.PutUserRule(t.Context(), r); err != nil {
				t.Fatal(err)
			}
		}
		// Replacing with a zero position keeps the rule where it was.
		repl := rule("a", 0, time.Time{})
		repl.Rule = json.RawMessage(`{"name":"a","level":"block"}`)
		if err := st.PutUserRule(t.Context(), repl); err != nil {
			t.Fatal(err)
		}
		if repl.Position != 10 {
			t.Fatalf("replaced rule position %d, want 10", repl.Position)
		}
		// Replacing with a position moves it.
		mv := rule("b", 5, time.Time{})
		if err := st.PutUserRule(t.Context(), mv); err != nil {
			t.Fatal(err)
		}
		got, err := st.ListUserRules(t.Context(), T0)
		if err != nil {
			t.Fatal(err)
		}
		if ruleIDs(got) != "[b@5 a@10]" {
			t.Fatalf("got %s", ruleIDs(got))
		}
		if string(got[1].Rule) != `{"name":"a","level":"block"}` {
			t.Fatalf("rule not replaced: %s", got[1].Rule)
		}
	})

	t.Run("Expiry", func(t *testing.T) {
		st := open(t)
		for _, r := range []*store.UserRule{
			rule("never", 1, time.Time{}),
			rule("soon", 2, T0.Add(time.Minute)),
			rule("later", 3, T0.Add(time.Hour)),
		} {
			if err := st.PutUserRule(t.Context(), r); err != nil {
				t.Fatal(err)
			}
		}
		cases := []struct {
			name string
			now  time.Time
			want string
		}{
			{"before", T0, "[never@1 soon@2 later@3]"},
			{"just before", T0.Add(time.Minute - time.Nanosecond), "[never@1 soon@2 later@3]"},
			{"at expiry", T0.Add(time.Minute), "[never@1 later@3]"},
			{"after all", T0.Add(2 * time.Hour), "[never@1]"},
			{"other zone", T0.Add(time.Minute).In(time.FixedZone("Z", -3*3600)), "[never@1 later@3]"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				got, err := st.ListUserRules(t.Context(), c.now)
				if err != nil {
					t.Fatal(err)
				}
				if ruleIDs(got) != c.want {
					t.Fatalf("got %s, want %s", ruleIDs(got), c.want)
				}
			})
		}
	})

	t.Run("Version", func(t *testing.T) {
		st := open(t)
		ver := func() int64 {
			t.Helper()
			v, err := st.RulesVersion(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		v0 := ver()
		if err := st.PutUserRule(t.Context(), rule("a", 1, time.Time{})); err != nil {
			t.Fatal(err)
		}
		v1 := ver()
		if v1 == v0 {
			t.Fatal("version unchanged by put")
		}
		if _, err := st.ListUserRules(t.Context(), T0); err != nil {
			t.Fatal(err)
		}
		if ver() != v1 {
			t.Fatal("version changed by a read")
		}
		if err := st.PutUserRule(t.Context(), rule("a", 2, time.Time{})); err != nil {
			t.Fatal(err)
		}
		v2 := ver()
		if v2 == v1 {
			t.Fatal("version unchanged by replace")
		}
		if err := st.DeleteUserRule(t.Context(), "missing"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("delete missing: %v, want ErrNotFound", err)
		}
		if ver() != v2 {
			t.Fatal("version changed by a failed delete")
		}
		if err := st.PutUserRule(t.Context(), &store.UserRule{ID: "bad", Rule: json.RawMessage(`{`)}); err == nil {
			t.Fatal("invalid rule JSON accepted")
		}
		if err := st.PutUserRule(t.Context(), &store.UserRule{Rule: json.RawMessage(`{}`)}); err == nil {
			t.Fatal("rule without id accepted")
		}
		if ver() != v2 {
			t.Fatal("version changed by a rejected put")
		}
		if err := st.DeleteUserRule(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		if ver() == v2 {
			t.Fatal("version unchanged by delete")
		}
		got, err := st.ListUserRules(t.Context(), T0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Fatalf("rules after delete: %s", ruleIDs(got))
		}
	})
}

func testState(t *testing.T, open Opener) {
	t.Run("Lifecycle", func(t *testing.T) {
		st := open(t)
		if _, err := st.GetState(t.Context(), "ns", "k"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("get missing: %v", err)
		}
		set := func(v string) func([]byte) ([]byte, error) {
			return func([]byte) ([]byte, error) { return []byte(v), nil }
		}
		sawOld := []byte("unset")
		if err := st.UpdateState(t.Context(), "ns", "k", func(old []byte) ([]byte, error) {
			sawOld = old
			return []byte(`{"n":1}`), nil
		}); err != nil {
			t.Fatal(err)
		}
		if sawOld != nil {
			t.Fatalf("fn got %q for a missing key, want nil", sawOld)
		}
		if err := st.UpdateState(t.Context(), "ns", "k", func(old []byte) ([]byte, error) {
			sawOld = old
			return []byte(`{"n":2}`), nil
		}); err != nil {
			t.Fatal(err)
		}
		if string(sawOld) != `{"n":1}` {
			t.Fatalf("fn got %q, want the old value", sawOld)
		}
		if err := st.UpdateState(t.Context(), "ns", "other", set(`"x"`)); err != nil {
			t.Fatal(err)
		}
		if err := st.UpdateState(t.Context(), "ns2", "k", set(`3`)); err != nil {
			t.Fatal(err)
		}
		got, err := st.GetState(t.Context(), "ns", "k")
		if err != nil || string(got) != `{"n":2}` {
			t.Fatalf("get = %q, %v", got, err)
		}
		all, err := st.ListState(t.Context(), "ns")
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 2 || string(all["k"]) != `{"n":2}` || string(all["other"]) != `"x"` {
			t.Fatalf("list = %q", all)
		}
		boom := errors.New("boom")
		if err := st.UpdateState(t.Context(), "ns", "k", func([]byte) ([]byte, error) { return []byte(`9`), boom }); !errors.Is(err, boom) {
			t.Fatalf("fn error: got %v", err)
		}
		if err := st.UpdateState(t.Context(), "ns", "k", set(`not json`)); err == nil {
			t.Fatal("invalid JSON value accepted")
		}
		if got, _ := st.GetState(t.Context(), "ns", "k"); string(got) != `{"n":2}` {
			t.Fatalf("failed updates changed the value to %q", got)
		}
		if err := st.UpdateState(t.Context(), "ns", "k", func([]byte) ([]byte, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
		if _, err := st.GetState(t.Context(), "ns", "k"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after delete: %v", err)
		}
		empty, err := st.ListState(t.Context(), "none")
		if err != nil || empty == nil || len(empty) != 0 {
			t.Fatalf("list of empty ns = %v, %v; want an empty map", empty, err)
		}
	})

	t.Run("ConcurrentIncrements", func(t *testing.T) {
		st := open(t)
		concurrentIncrements(t, st, st)
	})

	t.Run("PutStateEffect", func(t *testing.T) { testPutStateEffect(t, open(t)) })
	t.Run("PutStateEffectsInOneBatch", func(t *testing.T) { testPutStateBatch(t, open(t)) })
	t.Run("StateKeysOfAnyBytes", func(t *testing.T) { testStateKeys(t, open(t)) })
	t.Run("OddRecordFailsAlone", func(t *testing.T) { testOddRecord(t, open(t)) })
}

// testOddRecord: a record with text a store may refuse (a NUL, bytes that
// are not UTF-8 or a name too long to index, in names an agent sent) fails
// alone, if at all: the
// other callers' records of its batch are written, in one chain.
func testOddRecord(t *testing.T, st store.Store) {
	ctx := t.Context()
	rec := func(agent, session string) *store.AuditWrite {
		return &store.AuditWrite{Rec: store.AuditRecord{Type: "action", Agent: agent, Session: session, Tool: "Read",
			Data: json.RawMessage(`{"session":` + strconv.Quote(session) + `}`)}}
	}
	var long strings.Builder // 6,400 bytes that do not compress: over an index entry's bound
	for h := sha256.Sum256([]byte("long")); long.Len() < 6400; h = sha256.Sum256(h[:]) {
		long.WriteString(hex.EncodeToString(h[:]))
	}
	ws := []*store.AuditWrite{rec("a", "one"), rec("b", "bad\x00session"), rec("c\xff", "two"), rec("d", "three"), rec(long.String(), "four"),
		{Rec: store.AuditRecord{Type: "state"}, Effect: &store.PutStateEffect{NS: "odd", Key: "k", Value: json.RawMessage(`1`)}}}
	if err := st.AppendAuditBatch(ctx, &store.AuditBatch{Writes: ws, Seal: batchSeal}); err != nil {
		t.Fatalf("the batch failed: %v", err)
	}
	for _, i := range []int{0, 3, 5} {
		if ws[i].Err != nil {
			t.Errorf("write %d failed with the odd ones: %v", i, ws[i].Err)
		}
	}
	recs, err := st.QueryAudit(ctx, store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, w := range ws {
		if w.Err == nil {
			want++
		}
	}
	if len(recs) != want {
		t.Fatalf("%d records, want %d (one per write that succeeded)", len(recs), want)
	}
	if got, err := st.GetState(ctx, "odd", "k"); err != nil || string(got) != "1" {
		t.Errorf("the batch's state put: %q %v", got, err)
	}
	for i, r := range recs {
		if r.Seq != int64(i+1) || i > 0 && r.PrevHash != recs[i-1].Hash {
			t.Fatalf("record %d (seq %d) does not follow record %d: not one chain", i+1, r.Seq, i)
		}
	}
}

// longKey is a key of about n bytes that does not compress: hex of a
// SHA-256 chain from seed.
func longKey(seed string, n int) string {
	var b strings.Builder
	h := sha256.Sum256([]byte(seed))
	for b.Len() < n {
		b.WriteString(hex.EncodeToString(h[:]))
		h = sha256.Sum256(h[:])
	}
	return b.String()
}

// testStateKeys: a state key is any string, as its callers make them (the
// MCP gateway's pins and the shared quotas join their parts with NUL; a
// key may hold a name an agent made up): each is written, read, listed
// and updated as itself, through every way of writing state, and keys
// that look like another's escaped form stay apart.
func testStateKeys(t *testing.T, st store.Store) {
	ctx := t.Context()
	keys := []string{"srv\x00fact", "srv\x00prompt\x00p", "odd\x00\xff", "\xe2\x82", "100%", "%00", "%25", "%2", "a%41", "aA", "é/ü", ""}
	// Long keys that do not compress (an index entry holds at most 2704
	// bytes in PostgreSQL), two that differ only at their end, one with
	// bytes to escape: first, so that the batch below writes them.
	keys = append([]string{longKey("a", 6000), longKey("a", 6000) + "!", "\x00%" + longKey("b", 3000) + "\xff"}, keys...)
	for i, k := range keys {
		v := strconv.Itoa(i)
		if err := st.UpdateState(ctx, "keys", k, func(old []byte) ([]byte, error) {
			if old != nil {
				return nil, fmt.Errorf("key %q already holds %s", k, old)
			}
			return []byte(v), nil
		}); err != nil {
			t.Fatalf("update state %q: %v", k, err)
		}
	}
	all, err := st.ListState(ctx, "keys")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(keys) {
		t.Errorf("listed %d keys, want %d: %q", len(all), len(keys), all)
	}
	for i, k := range keys {
		if got, err := st.GetState(ctx, "keys", k); err != nil || string(got) != strconv.Itoa(i) {
			t.Errorf("get state %q = %q (%v), want %d", k, got, err, i)
		}
		if got := all[k]; string(got) != strconv.Itoa(i) {
			t.Errorf("listed %q = %q, want %d", k, got, i)
		}
	}
	// Several at once, as the shared quotas draw: fn sees the caller's keys.
	seen := map[string]bool{}
	if err := st.UpdateStates(ctx, "keys", keys[:4], func(key string, old []byte) ([]byte, error) {
		seen[key] = true
		return []byte(`"` + strconv.Itoa(len(old)) + `"`), nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys[:4] {
		if !seen[k] {
			t.Errorf("update states: fn was not given %q (given %v)", k, seen)
		}
		if got, _ := st.GetState(ctx, "keys", k); string(got) != `"1"` {
			t.Errorf("after update states, %q = %q", k, got)
		}
	}
	// Deleted as itself.
	if err := st.UpdateState(ctx, "keys", keys[0], func([]byte) ([]byte, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetState(ctx, "keys", keys[0]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted %q: %v", keys[0], err)
	}
	// Through the audit log's state puts, plain and IfAbsent, in one batch.
	ws := []*store.AuditWrite{
		{Rec: store.AuditRecord{Type: "ingested"}, Effect: &store.PutStateEffect{NS: "keys", Key: "put\x00plain", Value: json.RawMessage(`1`)}},
		{Rec: store.AuditRecord{Type: "ingested"}, Effect: &store.PutStateEffect{NS: "keys", Key: "put\x00once\xff", Value: json.RawMessage(`2`), IfAbsent: true}},
		{Rec: store.AuditRecord{Type: "ingested"}, Effect: &store.PutStateEffect{NS: "keys", Key: "put\x00once\xff", Value: json.RawMessage(`3`), IfAbsent: true}},
		{Rec: store.AuditRecord{Type: "ingested"}, Effect: &store.PutStateEffect{NS: "keys", Key: longKey("put", 4000), Value: json.RawMessage(`4`)}},
		{Rec: store.AuditRecord{Type: "ingested"}, Effect: &store.PutStateEffect{NS: "keys", Key: longKey("once", 4000), Value: json.RawMessage(`5`), IfAbsent: true}},
	}
	if err := st.AppendAuditBatch(ctx, &store.AuditBatch{Writes: ws, Seal: batchSeal}); err != nil {
		t.Fatal(err)
	}
	if ws[0].Err != nil || ws[1].Err != nil || !errors.Is(ws[2].Err, store.ErrExists) || ws[3].Err != nil || ws[4].Err != nil {
		t.Errorf("state puts: %v, %v, %v, %v, %v (want nil, nil, ErrExists, nil, nil)", ws[0].Err, ws[1].Err, ws[2].Err, ws[3].Err, ws[4].Err)
	}
	for k, want := range map[string]string{"put\x00plain": "1", "put\x00once\xff": "2", longKey("put", 4000): "4", longKey("once", 4000): "5"} {
		if got, err := st.GetState(ctx, "keys", k); err != nil || string(got) != want {
			t.Errorf("put %q = %q (%v), want %s", k, got, err, want)
		}
	}
}

// batchSeal seals a batch's records after the tail with SimpleHash.
func batchSeal(tail store.AuditTail, recs []*store.AuditRecord) ([]store.AuditRecord, error) {
	prev, seq := tail.Hash, tail.Seq
	if prev == "" {
		prev = strings.Repeat("0", 64)
	}
	for _, r := range recs {
		seq++
		r.Seq, r.PrevHash = seq, prev
		if r.Time.IsZero() {
			r.Time = T0
		}
		r.Hash = SimpleHash(prev, *r)
		prev = r.Hash
	}
	return nil, nil
}

// testPutStateEffect: a state change committed with its record; with
// IfAbsent a second offer of the same key writes neither the value nor
// its record.
func testPutStateEffect(t *testing.T, st store.Store) {
	ctx := t.Context()
	put := func(key, val string, ifAbsent bool) (*store.AuditWrite, error) {
		w := &store.AuditWrite{
			Rec:    store.AuditRecord{Type: "ingested", Data: json.RawMessage(`{"k":"` + key + `"}`)},
			Effect: &store.PutStateEffect{NS: "seen", Key: key, Value: json.RawMessage(val), IfAbsent: ifAbsent},
		}
		err := st.AppendAuditBatch(ctx, &store.AuditBatch{Writes: []*store.AuditWrite{w}, Seal: batchSeal})
		return w, err
	}
	if w, err := put("a", `1`, true); err != nil || w.Err != nil {
		t.Fatalf("first put: %v %v", err, w.Err)
	}
	if got, err := st.GetState(ctx, "seen", "a"); err != nil || string(got) != "1" {
		t.Fatalf("state after put = %q, %v", got, err)
	}
	w, _ := put("a", `2`, true)
	if !errors.Is(w.Err, store.ErrExists) {
		t.Fatalf("second IfAbsent put: write error %v, want ErrExists", w.Err)
	}
	if got, _ := st.GetState(ctx, "seen", "a"); string(got) != "1" {
		t.Fatalf("a refused put changed the value to %q", got)
	}
	if w, err := put("a", `3`, false); err != nil || w.Err != nil {
		t.Fatalf("overwrite: %v %v", err, w.Err)
	}
	if w, _ := put("b", `not json`, false); w.Err == nil {
		t.Fatal("invalid JSON value accepted")
	}
	recs, err := st.QueryAudit(ctx, store.AuditQuery{Types: []string{"ingested"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records written, want 2 (the refused and the invalid put write none)", len(recs))
	}
	if got, _ := st.GetState(ctx, "seen", "a"); string(got) != "3" {
		t.Fatalf("state = %q, want 3", got)
	}
}

// testPutStateBatch: the state puts of one batch (as many auto reads'
// records share a commit) apply in order, each IfAbsent seeing the puts
// before it; a put that fails takes back only itself and its record, even
// an odd key a store may refuse.
func testPutStateBatch(t *testing.T, st store.Store) {
	ctx := t.Context()
	n := 0
	w := func(key, val string, ifAbsent bool) *store.AuditWrite {
		n++
		return &store.AuditWrite{
			Rec:    store.AuditRecord{Type: "ingested", Data: json.RawMessage(`{"n":` + strconv.Itoa(n) + `}`)},
			Effect: &store.PutStateEffect{NS: "seen", Key: key, Value: json.RawMessage(val), IfAbsent: ifAbsent},
		}
	}
	ws := []*store.AuditWrite{
		w("x", `1`, false),
		w("y", `1`, false),
		w("x", `9`, true), // x was put just before: refused
		w("z", `5`, true),
		w("z", `6`, false), // after the IfAbsent put of z
		w("x", `2`, false),
		w("v", `not json`, false),    // refused alone
		w("odd\x00\xff", `1`, false), // any key is taken (testStateKeys)
		w("y", `3`, false),
	}
	if err := st.AppendAuditBatch(ctx, &store.AuditBatch{Writes: ws, Seal: batchSeal}); err != nil {
		t.Fatal(err)
	}
	wantErr := map[int]bool{2: true, 6: true}
	written := 0
	for i, w := range ws {
		switch {
		case wantErr[i] && w.Err == nil:
			t.Errorf("write %d was not refused", i)
		case !wantErr[i] && w.Err != nil:
			t.Errorf("write %d: %v", i, w.Err)
		}
		if w.Err == nil {
			written++
		}
	}
	if !errors.Is(ws[2].Err, store.ErrExists) {
		t.Errorf("IfAbsent put of a key put earlier in the batch: %v, want ErrExists", ws[2].Err)
	}
	for key, want := range map[string]string{"x": "2", "y": "3", "z": "6"} {
		if got, err := st.GetState(ctx, "seen", key); err != nil || string(got) != want {
			t.Errorf("state %s = %q (%v), want %s", key, got, err, want)
		}
	}
	if got, err := st.GetState(ctx, "seen", "v"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("refused put of v left %q (%v)", got, err)
	}
	recs, err := st.QueryAudit(ctx, store.AuditQuery{Types: []string{"ingested"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != written {
		t.Fatalf("%d records, want %d (one per write that succeeded)", len(recs), written)
	}
}

// concurrentIncrements increments one counter from many goroutines through
// a and b and checks that no increment was lost.
func concurrentIncrements(t *testing.T, a, b store.Store) {
	t.Helper()
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := a
			if i%2 == 1 {
				st = b
			}
			for range each {
				err := st.UpdateState(t.Context(), "count", "n", func(old []byte) ([]byte, error) {
					n := 0
					if old != nil {
						if err := json.Unmarshal(old, &n); err != nil {
							return nil, err
						}
					}
					return json.Marshal(n + 1)
				})
				if err != nil {
					t.Errorf("increment: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, err := b.GetState(t.Context(), "count", "n")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(workers * each); string(got) != want {
		t.Fatalf("counter = %s, want %s", got, want)
	}
}

func testClosed(t *testing.T, open Opener) {
	st := open(t)
	if err := st.CreateApproval(t.Context(), approvalFixture("x", T0, "s", "h")); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ops := map[string]func() error{
		"AppendAudit": func() error { return st.AppendAudit(ctx, auditFixture(), ChainSeal()) },
		"ScanAudit":   func() error { return st.ScanAudit(ctx, 0, func(store.AuditRecord) error { return nil }) },
		"QueryAudit":  func() error { _, err := st.QueryAudit(ctx, store.AuditQuery{}); return err },
		"CreateApproval": func() error {
			return st.CreateApproval(ctx, approvalFixture("y", T0, "s", "h"))
		},
		"GetApproval":   func() error { _, err := st.GetApproval(ctx, "x"); return err },
		"ListApprovals": func() error { _, err := st.ListApprovals(ctx, store.ApprovalFilter{}); return err },
		"AnswerApproval": func() error {
			_, _, err := st.AnswerApproval(ctx, "x", store.StatusApproved, answer("approve", "a", T0))
			return err
		},
		"ListUserRules":  func() error { _, err := st.ListUserRules(ctx, T0); return err },
		"PutUserRule":    func() error { return st.PutUserRule(ctx, rule("r", 1, time.Time{})) },
		"DeleteUserRule": func() error { return st.DeleteUserRule(ctx, "r") },
		"RulesVersion":   func() error { _, err := st.RulesVersion(ctx); return err },
		"GetState":       func() error { _, err := st.GetState(ctx, "a", "b"); return err },
		"UpdateState": func() error {
			return st.UpdateState(ctx, "a", "b", func([]byte) ([]byte, error) { return []byte(`1`), nil })
		},
		"ListState": func() error { _, err := st.ListState(ctx, "a"); return err },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			if err := op(); !errors.Is(err, store.ErrClosed) {
				t.Fatalf("after Close: %v, want ErrClosed", err)
			}
		})
	}
}

func testCanceled(t *testing.T, open Opener) {
	st := open(t)
	if err := st.CreateApproval(t.Context(), approvalFixture("x", T0, "s", "h")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ops := map[string]func() error{
		"AppendAudit": func() error { return st.AppendAudit(ctx, auditFixture(), ChainSeal()) },
		"QueryAudit":  func() error { _, err := st.QueryAudit(ctx, store.AuditQuery{}); return err },
		"AnswerApproval": func() error {
			_, _, err := st.AnswerApproval(ctx, "x", store.StatusApproved, answer("approve", "a", T0))
			return err
		},
		"UpdateState": func() error {
			return st.UpdateState(ctx, "a", "b", func([]byte) ([]byte, error) { return []byte(`1`), nil })
		},
		"PutUserRule": func() error { return st.PutUserRule(ctx, rule("r", 1, time.Time{})) },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			if err := op(); !errors.Is(err, context.Canceled) {
				t.Fatalf("with a canceled context: %v, want context.Canceled", err)
			}
		})
	}
	// Nothing was written.
	a, err := st.GetApproval(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != store.StatusPending || len(a.Answers) != 0 {
		t.Fatalf("a canceled answer was recorded: %+v", a)
	}
	recs, err := st.QueryAudit(t.Context(), store.AuditQuery{})
	if err != nil || len(recs) != 0 {
		t.Fatalf("canceled append wrote %d records (%v)", len(recs), err)
	}
}

// testBatchChainShared: batches of records with state puts (as auto
// reads write them), appended through two handles at once, some with an
// effect that must run before its batch is sealed, make one gapless chain
// (each handle's next batch follows the other's, whatever the handle
// expected), and every put of a batch is written with its records, the
// last put of a key winning.
func testBatchChainShared(t *testing.T, open SharedOpener) {
	a, b := open(t)
	const workers, batches, per = 4, 25, 5
	seal := func(tail store.AuditTail, recs []*store.AuditRecord) ([]store.AuditRecord, error) {
		prev := tail.Hash
		for i, r := range recs {
			r.Seq, r.PrevHash, r.Time = tail.Seq+int64(i)+1, prev, T0
			r.Hash = SimpleHash(prev, *r)
			prev = r.Hash
		}
		return nil, nil
	}
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := a
			if i%2 == 1 {
				st = b
			}
			for j := range batches {
				ws := make([]*store.AuditWrite, per)
				for k := range ws {
					ws[k] = &store.AuditWrite{
						Rec: store.AuditRecord{Type: "action", Data: json.RawMessage(fmt.Sprintf(`{"w":%d,"b":%d,"k":%d}`, i, j, k))},
						Effect: &store.PutStateEffect{NS: "reads", Key: fmt.Sprintf("w%d", i),
							Value: json.RawMessage(strconv.Itoa(j*per + k))},
					}
				}
				if j%5 == 4 { // an effect whose outcome is known only once it ran
					ws[per-1].Effect = &store.PutStateEffect{NS: "once", Key: fmt.Sprintf("w%d-%d", i, j),
						Value: json.RawMessage(`1`), IfAbsent: true}
				}
				if err := st.AppendAuditBatch(t.Context(), &store.AuditBatch{Writes: ws, Seal: seal}); err != nil {
					t.Errorf("append: %v", err)
					return
				}
				for _, w := range ws {
					if w.Err != nil {
						t.Errorf("write: %v", w.Err)
					}
				}
			}
		}()
	}
	wg.Wait()
	recs, err := a.QueryAudit(t.Context(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != workers*batches*per {
		t.Fatalf("%d records, want %d", len(recs), workers*batches*per)
	}
	CheckChain(t, recs)
	for i := range workers {
		want := strconv.Itoa(batches*per - 1) // the last batch's last put
		if (batches-1)%5 == 4 {
			want = strconv.Itoa(batches*per - 2)
		}
		if got, err := b.GetState(t.Context(), "reads", fmt.Sprintf("w%d", i)); err != nil || string(got) != want {
			t.Errorf("state w%d = %q (%v), want %s", i, got, err, want)
		}
	}
	once, err := a.ListState(t.Context(), "once")
	if err != nil || len(once) != workers*batches/5 {
		t.Errorf("%d IfAbsent puts written (%v), want %d", len(once), err, workers*batches/5)
	}
}

// RunShared runs the tests that need two handles on one backend: writes
// through both are serialised as if by one.
func RunShared(t *testing.T, open SharedOpener) {
	t.Run("AuditChainGapless", func(t *testing.T) {
		a, b := open(t)
		const workers, batches, per = 4, 20, 7
		seal := ChainSeal()
		var wg sync.WaitGroup
		for i := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := a
				if i%2 == 1 {
					st = b
				}
				for j := range batches {
					recs := make([]store.AuditRecord, per)
					for k := range recs {
						recs[k] = store.AuditRecord{Time: T0, Type: "action",
							Data: json.RawMessage(fmt.Sprintf(`{"w":%d,"b":%d,"k":%d}`, i, j, k))}
					}
					if err := st.AppendAudit(t.Context(), recs, seal); err != nil {
						t.Errorf("append: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		recs, err := a.QueryAudit(t.Context(), store.AuditQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != workers*batches*per {
			t.Fatalf("%d records, want %d", len(recs), workers*batches*per)
		}
		CheckChain(t, recs)
	})
	t.Run("AuditBatchChainGapless", func(t *testing.T) { testBatchChainShared(t, open) })
	t.Run("FirstAnswerWins", func(t *testing.T) {
		a, b := open(t)
		concurrentAnswers(t, a, b)
	})
	t.Run("StateIncrements", func(t *testing.T) {
		a, b := open(t)
		concurrentIncrements(t, a, b)
	})
	t.Run("PausesVisible", func(t *testing.T) {
		a, b := open(t)
		pausesVisible(t, a, b)
	})
	t.Run("RulesVisible", func(t *testing.T) {
		a, b := open(t)
		v0, err := b.RulesVersion(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := a.PutUserRule(t.Context(), rule("x", 0, time.Time{})); err != nil {
			t.Fatal(err)
		}
		v1, err := b.RulesVersion(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if v1 == v0 {
			t.Fatal("the other handle did not see the version change")
		}
		got, err := b.ListUserRules(t.Context(), T0)
		if err != nil || len(got) != 1 {
			t.Fatalf("other handle lists %v, %v", got, err)
		}
	})
}

// markerSeal is a Seal for AppendAuditBatch that chains recs as ChainSeal
// does and appends one marker record when marker is set.
func markerSeal(marker bool, seen *store.AuditTail) func(store.AuditTail, []*store.AuditRecord) ([]store.AuditRecord, error) {
	return func(tail store.AuditTail, recs []*store.AuditRecord) ([]store.AuditRecord, error) {
		*seen = tail
		prev, seq := tail.Hash, tail.Seq
		for _, r := range recs {
			seq++
			r.Seq, r.PrevHash = seq, prev
			r.Hash = SimpleHash(prev, *r)
			prev = r.Hash
		}
		if !marker {
			return nil, nil
		}
		m := store.AuditRecord{Seq: seq + 1, Time: T0, Type: "seal", Data: json.RawMessage(`{"epoch":0}`), PrevHash: prev, Epoch: 3, Tag: "t"}
		m.Hash = SimpleHash(prev, m)
		return []store.AuditRecord{m}, nil
	}
}

func testAuditBatch(t *testing.T, open Opener) {
	t.Run("EffectsWithRecords", func(t *testing.T) {
		st := open(t)
		ctx := t.Context()
		rec := func(typ string) store.AuditRecord {
			return store.AuditRecord{Time: T0, Type: typ, Data: json.RawMessage(`{}`)}
		}
		described := json.RawMessage(`{"answered":true}`)
		b := &store.AuditBatch{Writes: []*store.AuditWrite{
			{Rec: rec("approval_request"), Effect: &store.CreateApprovalEffect{Approval: approvalFixture("x", T0, "s", "h")}},
			// A duplicate: its effect fails, and it and its record are left out.
			{Rec: rec("approval_request"), Effect: &store.CreateApprovalEffect{Approval: approvalFixture("x", T0, "s", "h")}},
			{Rec: rec("policy_change"), Effect: &store.PutUserRuleEffect{Rule: rule("r", 0, time.Time{})}},
			{Rec: rec("answer"), Effect: &store.AnswerApprovalEffect{ID: "x", Status: store.StatusApproved,
				Answer: answer("approve", "ann", T0),
				Describe: func(ap *store.Approval, applied bool) (json.RawMessage, error) {
					if ap.Status != store.StatusApproved || !applied {
						return nil, fmt.Errorf("described %s applied=%v", ap.Status, applied)
					}
					return described, nil
				}}},
			// Unknown approval: fails alone.
			{Rec: rec("answer"), Effect: &store.AnswerApprovalEffect{ID: "nope", Status: store.StatusDenied, Answer: answer("deny", "bob", T0)}},
			{Rec: rec("action")},
		}}
		var tail store.AuditTail
		b.Seal = markerSeal(true, &tail)
		if err := st.AppendAuditBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
		for i, w := range b.Writes {
			if failed := i == 1 || i == 4; (w.Err != nil) != failed {
				t.Errorf("write %d: err %v", i, w.Err)
			}
		}
		if b.Writes[4].Err != nil && !errors.Is(b.Writes[4].Err, store.ErrNotFound) {
			t.Errorf("answer of an unknown approval: %v, want ErrNotFound", b.Writes[4].Err)
		}
		if len(b.Extra) != 1 || b.Extra[0].Type != "seal" {
			t.Fatalf("extra %+v", b.Extra)
		}
		recs, err := st.QueryAudit(ctx, store.AuditQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, r := range recs {
			types = append(types, r.Type)
		}
		if got := fmt.Sprint(types); got != "[approval_request policy_change answer action seal]" {
			t.Fatalf("records %s", got)
		}
		CheckChain(t, recs)
		if string(recs[2].Data) != string(described) || recs[4].Epoch != 3 || recs[4].Tag != "t" {
			t.Fatalf("stored %+v", recs)
		}
		ap, err := st.GetApproval(ctx, "x")
		if err != nil || ap.Status != store.StatusApproved || len(ap.Answers) != 1 {
			t.Fatalf("approval %+v, %v", ap, err)
		}
		if rs, err := st.ListUserRules(ctx, T0); err != nil || ruleIDs(rs) != "[r@1]" {
			t.Fatalf("rules %v, %v", rs, err)
		}
		// The next batch sees the marker as the tail.
		b2 := &store.AuditBatch{Writes: []*store.AuditWrite{{Rec: rec("action")}}}
		b2.Seal = markerSeal(false, &tail)
		if err := st.AppendAuditBatch(ctx, b2); err != nil {
			t.Fatal(err)
		}
		if tail.Seq != 5 || tail.Type != "seal" || tail.Epoch != 3 || tail.Tag != "t" || string(tail.Data) != `{"epoch":0}` {
			t.Fatalf("tail %+v", tail)
		}
	})

	t.Run("SealErrorWritesNothing", func(t *testing.T) {
		st := open(t)
		ctx := t.Context()
		boom := errors.New("boom")
		b := &store.AuditBatch{
			Writes: []*store.AuditWrite{{Rec: store.AuditRecord{Time: T0, Type: "approval_request", Data: json.RawMessage(`{}`)},
				Effect: &store.CreateApprovalEffect{Approval: approvalFixture("x", T0, "s", "h")}}},
			Seal: func(store.AuditTail, []*store.AuditRecord) ([]store.AuditRecord, error) { return nil, boom },
		}
		if err := st.AppendAuditBatch(ctx, b); !errors.Is(err, boom) {
			t.Fatalf("err %v, want %v", err, boom)
		}
		if _, err := st.GetApproval(ctx, "x"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the effect of a batch whose seal failed was kept: %v", err)
		}
	})

	t.Run("NoWritesStillSeals", func(t *testing.T) {
		st := open(t)
		appendFixture(t, st)
		var tail store.AuditTail
		b := &store.AuditBatch{Seal: markerSeal(true, &tail)}
		if err := st.AppendAuditBatch(t.Context(), b); err != nil {
			t.Fatal(err)
		}
		recs, err := st.QueryAudit(t.Context(), store.AuditQuery{})
		if err != nil || len(recs) != len(auditFixture())+1 || recs[len(recs)-1].Type != "seal" {
			t.Fatalf("after an empty batch with a marker: %d records, %v", len(recs), err)
		}
		if tail.Seq != int64(len(auditFixture())) {
			t.Fatalf("seal saw tail %d", tail.Seq)
		}
	})
}
