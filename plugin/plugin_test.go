package plugin

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", name)
		}
	}()
	f()
}

func TestRegistry(t *testing.T) {
	newOK := func(json.RawMessage) (any, error) { return "instance", nil }
	Register(Info{ID: "test.one", New: newOK})
	Register(Info{ID: "test.failing", New: func(json.RawMessage) (any, error) { return nil, errors.New("bad config") }})
	mustPanic(t, "duplicate", func() { Register(Info{ID: "test.one", New: newOK}) })
	mustPanic(t, "no namespace", func() { Register(Info{ID: "plain", New: newOK}) })
	mustPanic(t, "no constructor", func() { Register(Info{ID: "test.nil"}) })

	inst, err := New("test.one", nil)
	if err != nil || inst != "instance" {
		t.Fatalf("New: %v %v", inst, err)
	}
	if _, err := New("test.failing", nil); err == nil || !strings.Contains(err.Error(), "test.failing: bad config") {
		t.Fatalf("constructor error: %v", err)
	}
	if _, err := Get("test.missing"); err == nil || !strings.Contains(err.Error(), "test.one") {
		t.Fatalf("unknown plugin: %v", err)
	}
	ids := IDs("test")
	if len(ids) != 2 || ids[0] != "test.failing" || ids[1] != "test.one" {
		t.Fatalf("IDs(test) = %v", ids)
	}
}

func TestDecodeConfig(t *testing.T) {
	type cfg struct {
		A int    `json:"a"`
		B string `json:"b"`
	}
	tests := []struct {
		raw     string
		want    cfg
		wantErr bool
	}{
		{raw: "", want: cfg{A: 7}},
		{raw: "  null ", want: cfg{A: 7}},
		{raw: `{"a": 1, "b": "x"}`, want: cfg{A: 1, B: "x"}},
		{raw: `{"a": 1, "c": 2}`, wantErr: true},
		{raw: `{"a": "1"}`, wantErr: true},
		{raw: `{"a": 1} {"a": 2}`, wantErr: true},
		{raw: `{"a": 1`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got := cfg{A: 7}
			err := DecodeConfig(json.RawMessage(tt.raw), &got)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
