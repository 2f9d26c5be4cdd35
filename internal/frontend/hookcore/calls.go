package hookcore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// CallsDir holds, under Overseer's home, for agents that send no tool-use
// id (Gemini CLI), the action id of each allowed call until its post event
// arrives.
const CallsDir = "hooks/calls"

// CallKey identifies a call by agent, session, tool and exact arguments.
func CallKey(ev *Event) string {
	b, _ := json.Marshal(ev.ToolInput)
	sum := sha256.Sum256([]byte(ev.Agent + "\x00" + ev.SessionID + "\x00" + ev.ToolName + "\x00" + string(b)))
	return hex.EncodeToString(sum[:16])
}

// Remember keeps the action id of ev's call under home until Recall.
func Remember(home string, ev *Event, id string) {
	if home == "" {
		return
	}
	dir := filepath.Join(home, CallsDir)
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	_ = os.WriteFile(filepath.Join(dir, CallKey(ev)), []byte(id), 0o600)
}

// Recall returns (and forgets) the action id Remember kept for ev's call,
// or "".
func Recall(home string, ev *Event) string {
	if home == "" {
		return ""
	}
	p := filepath.Join(home, CallsDir, CallKey(ev))
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	_ = os.Remove(p)
	id := strings.TrimSpace(string(b))
	if !strings.HasPrefix(id, "act_") {
		return ""
	}
	return id
}
