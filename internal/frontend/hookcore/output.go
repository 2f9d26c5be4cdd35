package hookcore

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
)

// Outcome is what the hook tells the agent.
type Outcome int

const (
	// Deny is the zero value: an undecided outcome never lets a call run.
	Deny Outcome = iota
	// Allow lets the call run.
	Allow
	// Ask hands the call to the agent's own permission prompt (Claude Code
	// and Gemini CLI; Codex runs a call its hook answers with "ask", so
	// there it is answered as Deny).
	Ask
)

// String returns "deny", "allow" or "ask".
func (o Outcome) String() string {
	switch o {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	}
	return "deny"
}

// Decision is the hook's answer to one call.
type Decision struct {
	Outcome  Outcome
	Reason   string // for the agent (and through it, the model)
	ActionID string
	Level    action.Level
	// Stop asks the agent to stop its whole task (a person answered
	// "abort", or the agent keeps repeating a call a person refused),
	// where its hooks can say so (Claude Code, Gemini CLI).
	Stop bool
}

// Response is what the hook process writes and its exit status: 0 or 2,
// never anything else.
type Response struct {
	Stdout []byte
	Stderr string
	Code   int
}

const reasonPrefix = "Overseer: "

// withPrefix makes sure a reason is non-empty (Codex rejects a deny
// without one) and says where it comes from.
func withPrefix(reason string) string {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "denied (no reason given)"
	}
	if strings.HasPrefix(reason, reasonPrefix) {
		return reason
	}
	return reasonPrefix + reason
}

// Failure is the response to an internal failure: exit status 2 with the
// reason on standard error, which every supported agent treats as "block
// this call" (and Claude Code and Gemini CLI pass to the model).
func Failure(reason string) Response {
	return Response{Stderr: withPrefix(reason) + "\n", Code: 2}
}

// Render turns a decision on ev into the agent's output format.
func Render(ev *Event, d Decision) Response {
	if ev == nil {
		return Failure(d.Reason)
	}
	if ev.Phase == PhasePost {
		return PostResponse(ev.Agent)
	}
	out := d.Outcome
	if out == Ask && !CanAsk(ev.Agent) {
		// Codex runs a call its hook answers with "ask": never hand a call
		// to a prompt that is not there.
		out = Deny
	}
	reason := withPrefix(d.Reason)
	switch ev.Agent {
	case ClaudeCode:
		return claudeCode(ev, d, out, reason)
	case Codex:
		return codex(ev, out, reason)
	case Gemini:
		return gemini(d, out, reason)
	}
	return Failure("unknown agent " + ev.Agent)
}

// PostResponse is the answer to a post event with nothing to tell the
// model.
func PostResponse(agent string) Response {
	if agent == Gemini {
		return Response{Stdout: []byte("{}\n")}
	}
	return Response{}
}

// JSONResponse is an answer of v encoded on standard output.
func JSONResponse(v any) Response {
	if b, ok := appendOutput(nil, v); ok {
		return Response{Stdout: append(b, '\n')}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Failure("could not encode the answer: " + err.Error())
	}
	return Response{Stdout: append(b, '\n')}
}

// appendOutput writes what json.Marshal writes for the agents' answers
// (see fastjson.go), or declines.
func appendOutput(dst []byte, v any) ([]byte, bool) {
	// key writes a key, with a comma unless it opens the object at open.
	key := func(open int, name string) {
		if len(dst) > open {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, '"', ':')
	}
	switch o := v.(type) {
	case hookOutput:
		dst = append(dst, '{')
		open := len(dst)
		if o.Continue != nil {
			key(open, "continue")
			dst = strconv.AppendBool(dst, *o.Continue)
		}
		if o.StopReason != "" {
			key(open, "stopReason")
			dst = appendJSONString(dst, o.StopReason)
		}
		key(open, "hookSpecificOutput")
		var ok bool
		if dst, ok = appendOutput(dst, o.HookSpecificOutput); !ok {
			return dst, false
		}
		return append(dst, '}'), true
	case preToolUse:
		dst = append(dst, `{"hookEventName":`...)
		dst = appendJSONString(dst, o.HookEventName)
		dst = append(dst, `,"permissionDecision":`...)
		dst = appendJSONString(dst, o.PermissionDecision)
		if o.PermissionDecisionReason != "" {
			dst = append(dst, `,"permissionDecisionReason":`...)
			dst = appendJSONString(dst, o.PermissionDecisionReason)
		}
		return append(dst, '}'), true
	case permissionRequest:
		dst = append(dst, `{"hookEventName":`...)
		dst = appendJSONString(dst, o.HookEventName)
		dst = append(dst, `,"decision":{"behavior":`...)
		dst = appendJSONString(dst, o.Decision.Behavior)
		if o.Decision.Message != "" {
			dst = append(dst, `,"message":`...)
			dst = appendJSONString(dst, o.Decision.Message)
		}
		return append(dst, '}', '}'), true
	case geminiOutput:
		dst = append(dst, `{"decision":`...)
		dst = appendJSONString(dst, o.Decision)
		if o.Reason != "" {
			dst = append(dst, `,"reason":`...)
			dst = appendJSONString(dst, o.Reason)
		}
		if o.Continue != nil {
			dst = append(dst, `,"continue":`...)
			dst = strconv.AppendBool(dst, *o.Continue)
		}
		if o.StopReason != "" {
			dst = append(dst, `,"stopReason":`...)
			dst = appendJSONString(dst, o.StopReason)
		}
		return append(dst, '}'), true
	}
	return dst, false
}

type preToolUse struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
}

type permissionRequest struct {
	HookEventName string             `json:"hookEventName"`
	Decision      permissionDecision `json:"decision"`
}

type permissionDecision struct {
	Behavior string `json:"behavior"`
	Message  string `json:"message,omitempty"`
}

type hookOutput struct {
	Continue           *bool  `json:"continue,omitempty"`
	StopReason         string `json:"stopReason,omitempty"`
	HookSpecificOutput any    `json:"hookSpecificOutput"`
}

var no = false

func claudeCode(ev *Event, d Decision, out Outcome, reason string) Response {
	if ev.Name == "PermissionRequest" {
		switch out {
		case Allow:
			return JSONResponse(hookOutput{HookSpecificOutput: permissionRequest{"PermissionRequest", permissionDecision{Behavior: "allow"}}})
		case Ask:
			return Response{} // no answer: Claude Code shows its own dialog
		}
		return JSONResponse(hookOutput{HookSpecificOutput: permissionRequest{"PermissionRequest", permissionDecision{"deny", reason}}})
	}
	o := hookOutput{HookSpecificOutput: preToolUse{"PreToolUse", out.String(), reason}}
	if out == Deny && d.Stop {
		o.Continue, o.StopReason = &no, reason
	}
	return JSONResponse(o)
}

func codex(ev *Event, out Outcome, reason string) Response {
	if ev.Name == "PermissionRequest" {
		if out == Allow {
			return JSONResponse(hookOutput{HookSpecificOutput: permissionRequest{"PermissionRequest", permissionDecision{Behavior: "allow"}}})
		}
		return JSONResponse(hookOutput{HookSpecificOutput: permissionRequest{"PermissionRequest", permissionDecision{"deny", reason}}})
	}
	if out == Allow {
		// Codex 0.169 treats "allow" without updatedInput as a malformed
		// answer (and runs the call); no output is the plain "go ahead".
		return Response{}
	}
	return JSONResponse(hookOutput{HookSpecificOutput: preToolUse{"PreToolUse", "deny", reason}})
}

type geminiOutput struct {
	Decision   string `json:"decision"`
	Reason     string `json:"reason,omitempty"`
	Continue   *bool  `json:"continue,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
}

// CanAsk reports whether the agent's hooks can hand a call to the agent's
// own permission prompt.
func CanAsk(agent string) bool { return agent == ClaudeCode || agent == Gemini }

func gemini(d Decision, out Outcome, reason string) Response {
	switch out {
	case Allow:
		return JSONResponse(geminiOutput{Decision: "allow"})
	case Ask:
		return JSONResponse(geminiOutput{Decision: "ask", Reason: reason})
	}
	o := geminiOutput{Decision: "deny", Reason: reason}
	if d.Stop {
		o.Continue, o.StopReason = &no, reason
	}
	return JSONResponse(o)
}
