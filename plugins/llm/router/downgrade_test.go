package router_test

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/overseer-dev/overseer/plugin"
)

// TestDowngrade: after Downgrade every purpose goes to the cheaper model —
// the configured one, else the compress route's; a router with one model
// cannot downgrade.
func TestDowngrade(t *testing.T) {
	var bigHits, smallHits, tinyHits atomic.Int32
	big, small, tiny := modelServer(t, &bigHits), modelServer(t, &smallHits), modelServer(t, &tinyHits)
	ask := func(llm plugin.LLM, purpose string) string {
		resp, err := llm.Complete(t.Context(), plugin.Request{Purpose: purpose, Messages: []plugin.Message{{Role: plugin.RoleUser, Content: "x"}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Model
	}
	mk := func(cfg string) plugin.LLM {
		inst, err := plugin.New("llm.router", json.RawMessage(cfg))
		if err != nil {
			t.Fatal(err)
		}
		return inst.(plugin.LLM)
	}
	byRoute := mk(fmt.Sprintf(`{"default": {"plugin": "llm.openai", "config": {"model": "big", "base_url": %q}},
		"routes": {"compress": {"plugin": "llm.openai", "config": {"model": "small", "base_url": %q}}}}`, big, small))
	if got := ask(byRoute, plugin.PurposeDecide); got != "big" {
		t.Fatalf("before: %s", got)
	}
	if !byRoute.(plugin.Downgrader).Downgrade() {
		t.Fatal("no downgrade with a compress route")
	}
	for _, p := range []string{plugin.PurposeDecide, plugin.PurposePlan, plugin.PurposeCompress} {
		if got := ask(byRoute, p); got != "small" {
			t.Errorf("after, %s: %s", p, got)
		}
	}
	explicit := mk(fmt.Sprintf(`{"default": {"plugin": "llm.openai", "config": {"model": "big", "base_url": %q}},
		"routes": {"compress": {"plugin": "llm.openai", "config": {"model": "small", "base_url": %q}}},
		"cheaper": {"plugin": "llm.openai", "config": {"model": "tiny", "base_url": %q}}}`, big, small, tiny))
	explicit.(plugin.Downgrader).Downgrade()
	if got := ask(explicit, plugin.PurposeDecide); got != "tiny" {
		t.Errorf("configured cheaper: %s", got)
	}
	single := mk(fmt.Sprintf(`{"default": {"plugin": "llm.openai", "config": {"model": "big", "base_url": %q}}}`, big))
	if single.(plugin.Downgrader).Downgrade() {
		t.Error("a single model downgraded")
	}
	if got := ask(single, plugin.PurposeDecide); got != "big" {
		t.Errorf("single: %s", got)
	}
}
