package hooks

import (
	"github.com/overseer-dev/overseer/internal/frontend/hookcore"
	"github.com/overseer-dev/overseer/internal/guard/resultscan"
)

// RenderPost answers a post event. A result with findings is told to the
// model as additional context (Claude Code's and Codex's PostToolUse,
// Gemini CLI's AfterTool); with on=block, Claude Code and Codex also get
// "decision": "block" with the warning as the reason, and Gemini CLI
// "decision": "deny", which replaces the result the model sees by the
// warning. A clean result gets the usual empty answer.
func RenderPost(ev *Event, rep resultscan.Report, on resultscan.On) Response {
	if ev == nil || !rep.Hit() {
		return hookcore.PostResponse(agentOf(ev))
	}
	warning := resultscan.Warning(rep)
	o := postOutput{HookSpecificOutput: postContext{HookEventName: ev.Name, AdditionalContext: warning}}
	if on == resultscan.OnBlock {
		o.Decision, o.Reason = "block", warning
		if ev.Agent == Gemini {
			o.Decision = "deny"
		}
	}
	return hookcore.JSONResponse(o)
}

func agentOf(ev *Event) string {
	if ev == nil {
		return ""
	}
	return ev.Agent
}

type postOutput struct {
	Decision           string      `json:"decision,omitempty"`
	Reason             string      `json:"reason,omitempty"`
	HookSpecificOutput postContext `json:"hookSpecificOutput"`
}

type postContext struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext"`
}
