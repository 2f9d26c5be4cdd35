package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
)

// TestSubmitFactsNeedToken: ?facts=1 returns the facts Overseer derived
// (the resolved paths of a shell command) to the daemon's token only, as
// the audit log; without it the answer is the same, without them.
func TestSubmitFactsNeedToken(t *testing.T) {
	srv, _ := server(t)
	dir := t.TempDir()
	for _, auth := range []bool{true, false} {
		body := map[string]any{"tool": "Bash", "kind": "shell", "agent": "a", "session": "s-facts",
			"args": map[string]any{"command": "rm -f " + dir + "/x.txt"}, "cwd": dir}
		code, b := call(t, srv, "POST", "/api/v1/actions?facts=1", body, auth)
		if code != http.StatusOK {
			t.Fatalf("auth %v: %d %s", auth, code, b)
		}
		var o httpapi.Outcome
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		switch {
		case auth && (o.Facts == nil || len(o.Facts.Commands) == 0 || len(o.Facts.Paths) == 0):
			t.Errorf("with the token: facts %+v, want the command and its path", o.Facts)
		case !auth && o.Facts != nil:
			t.Errorf("without the token: facts %+v returned", o.Facts)
		}
	}
	// Not asked for: none.
	code, b := call(t, srv, "POST", "/api/v1/actions", map[string]any{"tool": "Bash", "kind": "shell", "agent": "a",
		"session": "s-facts2", "args": map[string]any{"command": "ls"}, "cwd": dir}, true)
	var o httpapi.Outcome
	if code != http.StatusOK || json.Unmarshal(b, &o) != nil || o.Facts != nil {
		t.Errorf("without ?facts=1: %d %s", code, b)
	}
}
