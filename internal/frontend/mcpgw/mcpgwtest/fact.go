package mcpgwtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FactUpstream writes home's mcp.yaml with one upstream, "up": this test
// server (the running test binary, re-executed; its TestMain calls
// MaybeServe) offering the "fact" tool described as desc. It returns the
// file holding the description (EnvFact): write it to change the tool
// before the gateway's next session.
func FactUpstream(t testing.TB, home, desc string) string {
	t.Helper()
	descFile := filepath.Join(t.TempDir(), "fact.txt")
	if err := os.WriteFile(descFile, []byte(desc), 0o600); err != nil {
		t.Fatal(err)
	}
	exe, _ := Command(t)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	cfg := "servers:\n  up:\n    command: " + q(exe) + "\n    env:\n      " + EnvServe + ": \"1\"\n      " +
		EnvFact + ": " + q(descFile) + "\n"
	if err := os.WriteFile(filepath.Join(home, "mcp.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return descFile
}
