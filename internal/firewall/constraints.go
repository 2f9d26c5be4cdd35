package firewall

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/overseer-dev/overseer/internal/perception"
	"github.com/overseer-dev/overseer/plugin"
)

// maxConstraints bounds how many constraints are placed in one prompt; the
// most recent lessons are kept.
const maxConstraints = 12

// Constraints turns what happened in a task — refused and failed steps,
// and the person's standing avoidance of some tools — into rules for the
// model's next prompt. It is the kernel's judgement of what the model must
// not do again; the context plugin only places the text. stats are the
// person's answer statistics for the tools the task used (from the
// PerceptionBus); escalateAfter is the policy's adaptation threshold.
func Constraints(steps []plugin.StepRecord, stats []perception.ToolStats, escalateAfter int) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	failures := map[string]int{}
	lastErr := map[string]string{}
	for _, s := range steps {
		switch s.Outcome {
		case plugin.OutcomeBlocked:
			add(fmt.Sprintf("Step %d: the firewall blocked %s %s (%s). Do not retry it in any other form — not with another tool, a script, an encoded or split command; choose another way or ask the person.",
				s.N, s.Tool, argsBrief(s.Args), oneLine(s.Note, 200)))
		case plugin.OutcomeDenied:
			why := ""
			if s.Human != "" {
				why = fmt.Sprintf(" and said: %q", oneLine(s.Human, 300))
			}
			add(fmt.Sprintf("Step %d: the person refused %s %s%s. Do not try it again in another form; follow what they said or ask them.",
				s.N, s.Tool, argsBrief(s.Args), why))
		case plugin.OutcomeRan:
			if s.IsError || s.Class == perception.ResultFailure.String() {
				failures[s.Tool]++
				lastErr[s.Tool] = oneLine(s.Output, 200)
			} else {
				failures[s.Tool] = 0
			}
		}
	}
	tools := make([]string, 0, len(failures))
	for t := range failures {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	for _, t := range tools {
		if n := failures[t]; n >= 2 {
			add(fmt.Sprintf("%s failed %d times in a row (last error: %s). Change your approach instead of repeating it.", t, n, lastErr[t]))
		}
	}
	for _, st := range stats {
		if escalateAfter > 0 && st.ConsecutiveRejections >= escalateAfter {
			add(fmt.Sprintf("The person refused %s %d times in a row: avoid it; if it is truly needed, explain why and ask first.", st.Tool, st.ConsecutiveRejections))
		} else if st.Answers >= 4 && st.Rejections*2 > st.Answers {
			add(fmt.Sprintf("The person refuses %s more often than not (%d of %d answers): prefer another way.", st.Tool, st.Rejections, st.Answers))
		}
	}
	if len(out) > maxConstraints {
		out = out[len(out)-maxConstraints:]
	}
	return out
}

// Deviation reports whether a tool result deviates from the step's stated
// intent, from the PerceptionBus's classification of the result, and
// returns the flag to show the model and the person ("" when it does not).
// The classification already counts a call that names what the intent
// speaks of (reading "the notes" from notes.txt) as relevant.
func Deviation(step int, intent, class string) string {
	if intent == "" || class != perception.ResultIrrelevant.String() {
		return ""
	}
	return fmt.Sprintf("The result of step %d does not match its stated intent (%q): check what happened before building on it.", step, oneLine(intent, 200))
}

// argsBrief renders a call's arguments in one short line.
func argsBrief(args map[string]any) string {
	if len(args) == 0 {
		return "()"
	}
	b, err := json.Marshal(args)
	if err != nil {
		return "(…)"
	}
	return oneLine(string(b), 240)
}

// oneLine folds s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
