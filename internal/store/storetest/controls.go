package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/store"
)

func control(id, kind, body string, at time.Time) *store.Control {
	return &store.Control{ID: id, Kind: kind, Body: json.RawMessage(body), CreatedBy: "ann", CreatedAt: at, UpdatedAt: at}
}

func testControls(t *testing.T, open Opener) {
	t.Run("PutListDelete", func(t *testing.T) {
		st := open(t)
		v0, err := st.ControlsVersion(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var described []*store.Control
		describe := func(old *store.Control) (json.RawMessage, error) {
			described = append(described, old)
			return json.RawMessage(`{"d":1}`), nil
		}
		w := appendEffect(t, st, "control_change", &store.PutControlEffect{Control: control("rl_1", "rate_limit", `{"max_calls":5}`, T0), Describe: describe})
		if w.Err != nil || len(described) != 1 || described[0] != nil || string(w.Rec.Data) != `{"d":1}` {
			t.Fatalf("put: %v %v %s", w.Err, described, w.Rec.Data)
		}
		appendEffect(t, st, "control_change", &store.PutControlEffect{Control: control("bc_1", "budget_cap", `{"max_cost_usd":10}`, T0.Add(time.Second))})
		// Replacing keeps the author and the creation time.
		repl := control("rl_1", "rate_limit", `{"max_calls":7}`, T0.Add(time.Hour))
		repl.CreatedBy = "mallory"
		w = appendEffect(t, st, "control_change", &store.PutControlEffect{Control: repl, Describe: describe})
		if w.Err != nil || described[1] == nil || string(described[1].Body) != `{"max_calls":5}` {
			t.Fatalf("replace: %v %+v", w.Err, described)
		}
		all, err := st.ListControls(t.Context(), "")
		if err != nil || len(all) != 2 || all[0].ID != "rl_1" || all[1].ID != "bc_1" {
			t.Fatalf("list: %+v %v", all, err)
		}
		rl := all[0]
		if string(rl.Body) != `{"max_calls":7}` || rl.CreatedBy != "ann" || !rl.CreatedAt.Equal(T0) || !rl.UpdatedAt.Equal(T0.Add(time.Hour)) {
			t.Fatalf("replaced control %+v (body %s)", rl, rl.Body)
		}
		if only, err := st.ListControls(t.Context(), "budget_cap"); err != nil || len(only) != 1 || only[0].ID != "bc_1" {
			t.Fatalf("list by kind: %+v %v", only, err)
		}
		// A put with another kind for an existing id is refused.
		if w := appendEffect(t, st, "control_change", &store.PutControlEffect{Control: control("rl_1", "budget_cap", `{}`, T0)}); w.Err == nil {
			t.Fatal("a control changed its kind")
		}
		if w := appendEffect(t, st, "control_change", &store.PutControlEffect{Control: control("x", "rate_limit", `{not json`, T0)}); w.Err == nil {
			t.Fatal("a body that is not JSON was stored")
		}
		if w := appendEffect(t, st, "control_change", &store.DeleteControlEffect{ID: "rl_1", Kind: "budget_cap"}); !errors.Is(w.Err, store.ErrNotFound) {
			t.Fatalf("delete with the wrong kind: %v", w.Err)
		}
		w = appendEffect(t, st, "control_change", &store.DeleteControlEffect{ID: "rl_1", Kind: "rate_limit", Describe: describe})
		if w.Err != nil || described[2] == nil || described[2].ID != "rl_1" {
			t.Fatalf("delete: %v %+v", w.Err, described)
		}
		if w := appendEffect(t, st, "control_change", &store.DeleteControlEffect{ID: "rl_1", Kind: "rate_limit"}); !errors.Is(w.Err, store.ErrNotFound) {
			t.Fatalf("delete again: %v", w.Err)
		}
		v1, err := st.ControlsVersion(t.Context())
		if err != nil || v1 == v0 {
			t.Fatalf("version %d after %d: changes must change it", v1, v0)
		}
		if left, _ := st.ListControls(t.Context(), ""); len(left) != 1 || left[0].ID != "bc_1" {
			t.Fatalf("left %+v", left)
		}
	})
}

func testUpdateStates(t *testing.T, open Opener) {
	st := open(t)
	ctx := t.Context()
	if err := st.UpdateState(ctx, "ns", "a", func([]byte) ([]byte, error) { return []byte(`1`), nil }); err != nil {
		t.Fatal(err)
	}
	var seen []string
	err := st.UpdateStates(ctx, "ns", []string{"a", "b", "c"}, func(key string, old []byte) ([]byte, error) {
		seen = append(seen, fmt.Sprintf("%s=%s", key, old))
		switch key {
		case "a":
			return []byte(`2`), nil
		case "b":
			return []byte(`"x"`), nil
		}
		return nil, nil // c: stays absent
	})
	if err != nil || fmt.Sprint(seen) != "[a=1 b= c=]" {
		t.Fatalf("UpdateStates: %v, saw %v", err, seen)
	}
	m, err := st.ListState(ctx, "ns")
	if err != nil || len(m) != 2 || string(m["a"]) != "2" || string(m["b"]) != `"x"` {
		t.Fatalf("state %v %v", m, err)
	}
	// An error changes nothing.
	boom := errors.New("boom")
	err = st.UpdateStates(ctx, "ns", []string{"a", "b"}, func(key string, old []byte) ([]byte, error) {
		if key == "b" {
			return nil, boom
		}
		return []byte(`3`), nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if v, _ := st.GetState(ctx, "ns", "a"); string(v) != "2" {
		t.Fatalf("a = %s after a failed batch, want 2", v)
	}
	if err := st.UpdateStates(ctx, "ns", []string{"a"}, func(string, []byte) ([]byte, error) { return []byte(`{bad`), nil }); err == nil {
		t.Fatal("invalid JSON stored")
	}
}
