package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/store"
)

// BatchSeal returns a seal function for AppendAuditBatch that links
// records as ChainSeal does.
func BatchSeal() func(tail store.AuditTail, recs []*store.AuditRecord) ([]store.AuditRecord, error) {
	return func(tail store.AuditTail, recs []*store.AuditRecord) ([]store.AuditRecord, error) {
		prev := tail.Hash
		for i, r := range recs {
			r.Seq = tail.Seq + int64(i) + 1
			r.PrevHash = prev
			r.Hash = SimpleHash(prev, *r)
			prev = r.Hash
		}
		return nil, nil
	}
}

// appendEffect appends one record of type typ carrying effect e, and
// returns the write (its Err says whether the effect failed).
func appendEffect(t *testing.T, st store.Store, typ string, e store.Effect) *store.AuditWrite {
	t.Helper()
	w := &store.AuditWrite{Rec: store.AuditRecord{Time: T0, Type: typ, Data: json.RawMessage(`{}`)}, Effect: e}
	if err := st.AppendAuditBatch(t.Context(), &store.AuditBatch{Writes: []*store.AuditWrite{w}, Seal: BatchSeal()}); err != nil {
		t.Fatalf("AppendAuditBatch: %v", err)
	}
	return w
}

func pause(agent, reason string, at time.Time) *store.AgentPause {
	return &store.AgentPause{Agent: agent, Reason: reason, By: "ann", At: at}
}

func listPauses(t *testing.T, st store.Store) []store.AgentPause {
	t.Helper()
	ps, err := st.ListAgentPauses(t.Context())
	if err != nil {
		t.Fatalf("ListAgentPauses: %v", err)
	}
	return ps
}

func testPauses(t *testing.T, open Opener) {
	t.Run("PauseResume", func(t *testing.T) {
		st := open(t)
		if ps := listPauses(t, st); len(ps) != 0 {
			t.Fatalf("a fresh store has pauses: %v", ps)
		}
		v0, err := st.PausesVersion(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var described []*store.AgentPause
		describe := func(old *store.AgentPause) (json.RawMessage, error) {
			described = append(described, old)
			return json.RawMessage(`{"described":true}`), nil
		}
		w := appendEffect(t, st, "agent_paused", &store.PauseAgentEffect{Pause: pause("codex", "too many calls", T0), Describe: describe})
		if w.Err != nil {
			t.Fatalf("pause: %v", w.Err)
		}
		if len(described) != 1 || described[0] != nil {
			t.Fatalf("describe saw %v, want one nil (not paused before)", described)
		}
		if string(w.Rec.Data) != `{"described":true}` || w.Rec.Seq != 1 {
			t.Fatalf("record %+v: the description is its data", w.Rec)
		}
		appendEffect(t, st, "agent_paused", &store.PauseAgentEffect{Pause: pause("claude-code", "night", T0.Add(time.Second))})
		// Replacing a pause returns the old one.
		w = appendEffect(t, st, "agent_paused", &store.PauseAgentEffect{Pause: pause("codex", "budget", T0.Add(2*time.Second)), Describe: describe})
		if w.Err != nil || len(described) != 2 || described[1] == nil || described[1].Reason != "too many calls" {
			t.Fatalf("replace: err %v, described %+v", w.Err, described)
		}
		ps := listPauses(t, st)
		if len(ps) != 2 || ps[0].Agent != "claude-code" || ps[1].Agent != "codex" || ps[1].Reason != "budget" ||
			ps[1].By != "ann" || !ps[1].At.Equal(T0.Add(2*time.Second)) {
			t.Fatalf("pauses %+v", ps)
		}
		v1, err := st.PausesVersion(t.Context())
		if err != nil || v1 == v0 {
			t.Fatalf("version %d after %d (%v): pausing must change it", v1, v0, err)
		}
		w = appendEffect(t, st, "agent_resumed", &store.ResumeAgentEffect{Agent: "codex", Describe: describe})
		if w.Err != nil || described[2] == nil || described[2].Reason != "budget" {
			t.Fatalf("resume: err %v, described %+v", w.Err, described)
		}
		if ps := listPauses(t, st); len(ps) != 1 || ps[0].Agent != "claude-code" {
			t.Fatalf("after resume: %+v", ps)
		}
		v2, err := st.PausesVersion(t.Context())
		if err != nil || v2 == v1 {
			t.Fatalf("version %d after %d (%v): resuming must change it", v2, v1, err)
		}
	})
	t.Run("ResumeNotPaused", func(t *testing.T) {
		st := open(t)
		w := appendEffect(t, st, "agent_resumed", &store.ResumeAgentEffect{Agent: "codex"})
		if !errors.Is(w.Err, store.ErrNotFound) {
			t.Fatalf("resuming an agent that is not paused: %v, want ErrNotFound", w.Err)
		}
		// The record of a failed effect is not written.
		if recs, err := st.QueryAudit(t.Context(), store.AuditQuery{}); err != nil || len(recs) != 0 {
			t.Fatalf("records %v, %v: want none", recs, err)
		}
	})
	t.Run("NoAgent", func(t *testing.T) {
		st := open(t)
		w := appendEffect(t, st, "agent_paused", &store.PauseAgentEffect{Pause: pause(" ", "x", T0)})
		if w.Err == nil {
			t.Fatal("a pause without an agent was accepted")
		}
		if ps := listPauses(t, st); len(ps) != 0 {
			t.Fatalf("pauses %+v", ps)
		}
	})
	t.Run("DescribeErrorUndoes", func(t *testing.T) {
		st := open(t)
		boom := errors.New("boom")
		w := appendEffect(t, st, "agent_paused", &store.PauseAgentEffect{Pause: pause("codex", "x", T0),
			Describe: func(*store.AgentPause) (json.RawMessage, error) { return nil, boom }})
		if !errors.Is(w.Err, boom) {
			t.Fatalf("err %v, want boom", w.Err)
		}
		if ps := listPauses(t, st); len(ps) != 0 {
			t.Fatalf("a pause whose record failed is stored: %+v", ps)
		}
	})
}

// pausesVisible: a pause made through one handle is seen through the other.
func pausesVisible(t *testing.T, a, b store.Store) {
	v0, err := b.PausesVersion(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if w := appendEffect(t, a, "agent_paused", &store.PauseAgentEffect{Pause: pause("codex", "x", T0)}); w.Err != nil {
		t.Fatal(w.Err)
	}
	v1, err := b.PausesVersion(t.Context())
	if err != nil || v1 == v0 {
		t.Fatalf("the other handle did not see the version change (%d, %d, %v)", v0, v1, err)
	}
	if ps := listPauses(t, b); len(ps) != 1 || ps[0].Agent != "codex" {
		t.Fatalf("other handle lists %+v", ps)
	}
}
