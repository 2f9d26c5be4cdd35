package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/overseer-dev/overseer/plugin"
	_ "github.com/overseer-dev/overseer/plugins/llm/openai"
	"github.com/overseer-dev/overseer/plugins/llm/router"
)

// modelServer is an OpenAI-compatible server that answers every request
// with one streamed text naming the model it was asked for.
func modelServer(t *testing.T, hits *atomic.Int32) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		var body struct {
			Model string `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"from %s\"}}]}\n\n", body.Model, body.Model)
		fmt.Fprintf(w, "data: {\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}\n\n", body.Model)
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestRouteByPurpose(t *testing.T) {
	var primaryHits, cheapHits atomic.Int32
	primary, cheap := modelServer(t, &primaryHits), modelServer(t, &cheapHits)
	cfg := fmt.Sprintf(`{
		"default": {"plugin": "llm.openai", "config": {"model": "big", "base_url": %q}},
		"routes": {
			"reflect":  {"plugin": "llm.openai", "config": {"model": "small", "base_url": %q}},
			"compress": {"plugin": "llm.openai", "config": {"model": "small", "base_url": %q}}
		}}`, primary, cheap, cheap)
	inst, err := plugin.New("llm.router", json.RawMessage(cfg))
	if err != nil {
		t.Fatal(err)
	}
	llm := inst.(plugin.LLM)
	tests := []struct {
		purpose, wantModel string
	}{
		{plugin.PurposeDecide, "big"},
		{plugin.PurposePlan, "big"},
		{plugin.PurposeReflect, "small"},
		{plugin.PurposeCompress, "small"},
		{"", "big"},
	}
	for _, tt := range tests {
		t.Run("purpose "+tt.purpose, func(t *testing.T) {
			resp, err := llm.Complete(t.Context(), plugin.Request{Purpose: tt.purpose,
				Messages: []plugin.Message{{Role: plugin.RoleUser, Content: "x"}}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Model != tt.wantModel || resp.Text != "from "+tt.wantModel {
				t.Errorf("answered by %q (%q), want %q", resp.Model, resp.Text, tt.wantModel)
			}
		})
	}
	if primaryHits.Load() != 3 || cheapHits.Load() != 2 {
		t.Errorf("hits primary=%d cheap=%d, want 3 and 2", primaryHits.Load(), cheapHits.Load())
	}
}

func TestSingleModel(t *testing.T) {
	var hits atomic.Int32
	url := modelServer(t, &hits)
	inst, err := plugin.New("llm.router", json.RawMessage(fmt.Sprintf(
		`{"default":{"plugin":"llm.openai","config":{"model":"only","base_url":%q}}}`, url)))
	if err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	for _, p := range []string{plugin.PurposeDecide, plugin.PurposeReflect, plugin.PurposePlan, plugin.PurposeCompress} {
		resp, err := inst.(plugin.LLMStreamer).Stream(t.Context(), plugin.Request{Purpose: p,
			Messages: []plugin.Message{{Role: plugin.RoleUser, Content: "x"}}}, func(d plugin.Delta) { streamed.WriteString(d.Text) })
		if err != nil || resp.Model != "only" {
			t.Fatalf("%s: %v %q", p, err, resp.Model)
		}
	}
	if hits.Load() != 4 || streamed.String() != strings.Repeat("from only", 4) {
		t.Errorf("hits = %d, streamed %q", hits.Load(), streamed.String())
	}
}

func TestNoRouteFailsClosed(t *testing.T) {
	var hits atomic.Int32
	url := modelServer(t, &hits)
	inst, err := plugin.New("llm.router", json.RawMessage(fmt.Sprintf(
		`{"routes":{"decide":{"plugin":"llm.openai","config":{"model":"m","base_url":%q}}}}`, url)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = inst.(plugin.LLM).Complete(t.Context(), plugin.Request{Purpose: plugin.PurposeReflect})
	if !errors.Is(err, router.ErrNoRoute) {
		t.Fatalf("err = %v, want ErrNoRoute", err)
	}
	if hits.Load() != 0 {
		t.Error("a request was sent")
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct{ name, cfg string }{
		{"empty", `{}`},
		{"unknown field", `{"default":{"plugin":"llm.openai","config":{"model":"m"}},"extra":1}`},
		{"unknown purpose", `{"routes":{"dream":{"plugin":"llm.openai","config":{"model":"m"}}}}`},
		{"missing plugin name", `{"default":{"config":{"model":"m"}}}`},
		{"unregistered plugin", `{"default":{"plugin":"llm.nope","config":{}}}`},
		{"bad target config", `{"default":{"plugin":"llm.openai","config":{"modle":"m"}}}`},
		{"not json", `{`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := plugin.New("llm.router", json.RawMessage(tt.cfg)); !errors.Is(err, router.ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
		})
	}
}

// wholeLLM answers without the streaming ability.
type wholeLLM struct{ text string }

func (w wholeLLM) Complete(context.Context, plugin.Request) (plugin.Response, error) {
	return plugin.Response{Text: w.text, StopReason: "stop"}, nil
}

func TestStreamFallsBackToComplete(t *testing.T) {
	r, err := router.New(wholeLLM{text: "whole"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	resp, err := r.Stream(t.Context(), plugin.Request{Purpose: plugin.PurposeDecide}, func(d plugin.Delta) { got = append(got, d.Text) })
	if err != nil || resp.Text != "whole" || len(got) != 1 || got[0] != "whole" {
		t.Fatalf("resp %+v err %v deltas %q", resp, err, got)
	}
}
