package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestModelTarget(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	tests := []struct {
		spec    string
		plugin  string
		model   string
		baseURL string
		err     string
	}{
		{spec: "ollama:qwen2.5-coder:14b", plugin: "llm.openai", model: "qwen2.5-coder:14b", baseURL: "http://127.0.0.1:11434/v1"},
		{spec: "ollama:llama3@http://gpu-box:11434/v1", plugin: "llm.openai", model: "llama3", baseURL: "http://gpu-box:11434/v1"},
		{spec: "openai:gpt-4o", plugin: "llm.openai", model: "gpt-4o"},
		{spec: "OpenAI:local@https://llm.example/v1", plugin: "llm.openai", model: "local", baseURL: "https://llm.example/v1"},
		{spec: "anthropic:claude-sonnet-4-5", plugin: "llm.anthropic", model: "claude-sonnet-4-5"},
		{spec: "gpt-4o", err: "want PROVIDER:MODEL"},
		{spec: "mistral:large", err: "unknown provider"},
		{spec: "openai:@http://x/v1", err: "no model name"},
		{spec: "openai:m@ftp://x", err: "must start with http"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := modelTarget(tt.spec)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg := got["config"].(map[string]any)
			if got["plugin"] != tt.plugin || cfg["model"] != tt.model {
				t.Fatalf("got %v", got)
			}
			if u, _ := cfg["base_url"].(string); u != tt.baseURL {
				t.Fatalf("base_url %q, want %q", u, tt.baseURL)
			}
		})
	}
}

func TestMCPToolConfig(t *testing.T) {
	dir := t.TempDir()
	if raw, err := mcpToolConfig(filepath.Join(dir, "none.yaml"), nil); raw != nil || err != nil {
		t.Fatalf("missing file: %s %v", raw, err)
	}
	file := filepath.Join(dir, "mcp.yaml")
	yaml := `hold: 25s
servers:
  fs:
    command: node
    args: [server.js, /data]
    ping: 30s
    tools:
      write_file: {kind: file_write, arg: path}
      run: {kind: shell, arg: cmdline}
      exec: {kind: shell, arg: command}
`
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	raw, err := mcpToolConfig(file, &warn)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Servers map[string]map[string]any `json:"servers"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	fs := cfg.Servers["fs"]
	if _, ok := fs["ping"]; ok {
		t.Error("ping was kept")
	}
	tools := fs["tools"].(map[string]any)
	if _, ok := tools["run"]; ok {
		t.Error("a shell mapping whose argument the guards cannot read was kept")
	}
	if _, ok := tools["exec"]; !ok {
		t.Error("a shell mapping on \"command\" was dropped")
	}
	if _, ok := tools["write_file"]; !ok {
		t.Error("a file mapping on \"path\" was dropped")
	}
	if !strings.Contains(warn.String(), "fs__run") {
		t.Errorf("no warning: %q", warn.String())
	}
	if err := os.WriteFile(file, []byte("servers: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mcpToolConfig(file, &warn); err == nil {
		t.Error("a broken file was accepted")
	}
}

func TestRegexValidator(t *testing.T) {
	if v, err := regexValidator(nil); v != nil || err != nil {
		t.Fatal("no patterns must mean no validator")
	}
	if _, err := regexValidator([]string{"("}); err == nil {
		t.Fatal("a bad pattern was accepted")
	}
	v, err := regexValidator([]string{"(?s)decision", "confidence"})
	if err != nil {
		t.Fatal(err)
	}
	if v("```decision\n{\"confidence\":1}```") != nil {
		t.Error("a matching reply was rejected")
	}
	if err := v("```decision\n{}```"); err == nil || !strings.Contains(err.Error(), "confidence") {
		t.Errorf("a reply missing a pattern: %v", err)
	}
}
