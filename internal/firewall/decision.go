package firewall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Actions a decision can name. Any other action is not understood and
// makes the decision human_required.
const (
	// ActionToolCall asks to run Tool with Args (still judged by the Engine).
	ActionToolCall = "tool_call"
	// ActionAskHuman puts a question to a person.
	ActionAskHuman = "ask_human"
	// ActionDone claims the task is finished; a person confirms it first.
	ActionDone = "done"
)

// Where a decision was read from.
const (
	// SourceFenced means a fenced ```decision (or ```json) block.
	SourceFenced = "fenced"
	// SourceJSON means a JSON object embedded in the reply's text.
	SourceJSON = "json"
	// SourceFallback means no usable decision was found; a person decides.
	SourceFallback = "fallback"
)

// maxDecisionInput bounds how much of a reply is searched for a decision;
// a longer reply is not parsed and goes to a person.
const maxDecisionInput = 1 << 20

// maxEmbeddedCandidates bounds how many '{' positions are tried as the start
// of an embedded object, which keeps parsing linear in practice.
const maxEmbeddedCandidates = 64

// Decision is the structured decision an LLM reports at the end of each
// reply in the supervised loop. It is what the model asked for, not a
// permission: a tool call still goes through the Engine.
type Decision struct {
	// Action is one of ActionToolCall, ActionAskHuman, ActionDone.
	Action string
	// Tool is the tool to call for ActionToolCall.
	Tool string
	// Args are the tool's arguments.
	Args map[string]any
	// Confidence is the model's confidence in [0,1]; nil when it reported
	// none or an invalid one.
	Confidence *float64
	// Intent is what the step is meant to achieve, used to check the result.
	Intent string
	// HumanRequired means a person must answer before anything runs or the
	// task is declared done.
	HumanRequired bool
	// Reason is the model's reason, or for a fallback why parsing failed.
	Reason string
	// Source is SourceFenced, SourceJSON or SourceFallback.
	Source string
	// SubtaskDone means the model reports the plan's current subtask as
	// finished.
	SubtaskDone bool
}

// errNotDecision marks a JSON object that does not look like a decision at
// all (no "action" key), as opposed to a malformed decision.
var errNotDecision = errors.New("not a decision object")

// ParseDecision reads the decision from an LLM reply. It looks, in order,
// for a fenced ```decision block (then a ```json block holding a decision),
// for the first balanced JSON object in the text that has an "action" key,
// and otherwise returns a fallback decision with HumanRequired set. It never
// fails and never returns a runnable decision for ambiguous text: a
// malformed or unclosed decision block, several differing decisions, an
// unknown action or a tool call without a tool all yield HumanRequired.
// A "done" decision always requires a person.
func ParseDecision(raw string) Decision {
	if len(raw) > maxDecisionInput {
		return fallback(fmt.Sprintf("reply of %d bytes is too long to parse a decision from", len(raw)))
	}
	blocks, unclosed := fencedBlocks(raw)
	if unclosed != "" && (unclosed == "decision" || unclosed == "json") {
		return fallback("the reply ends inside an unclosed ```" + unclosed + " block (cut off?)")
	}

	var decisionBlocks, jsonBlocks []string
	for _, b := range blocks {
		switch b.info {
		case "decision":
			decisionBlocks = append(decisionBlocks, b.body)
		case "json":
			jsonBlocks = append(jsonBlocks, b.body)
		}
	}
	if len(decisionBlocks) > 0 {
		var found []Decision
		for _, body := range decisionBlocks {
			d, err := decodeDecision([]byte(body))
			if err != nil {
				return fallback("malformed ```decision block: " + err.Error())
			}
			found = append(found, d)
		}
		return pick(found, SourceFenced)
	}
	var found []Decision
	for _, body := range jsonBlocks {
		d, err := decodeDecision([]byte(body))
		if errors.Is(err, errNotDecision) {
			continue // an ordinary JSON example, not the decision
		}
		if err != nil {
			return fallback("malformed decision in ```json block: " + err.Error())
		}
		found = append(found, d)
	}
	if len(found) > 0 {
		return pick(found, SourceFenced)
	}

	found, err := embeddedDecisions(raw)
	if err != nil {
		return fallback(err.Error())
	}
	if len(found) > 0 {
		return pick(found, SourceJSON)
	}
	return fallback("no decision block found in the reply")
}

// pick returns the decision found, or a fallback when several differ.
func pick(found []Decision, source string) Decision {
	first := found[0]
	for _, d := range found[1:] {
		if !sameDecision(first, d) {
			return fallback(fmt.Sprintf("the reply holds %d differing decisions", len(found)))
		}
	}
	first.Source = source
	return first
}

func sameDecision(a, b Decision) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func fallback(reason string) Decision {
	return Decision{Action: ActionAskHuman, HumanRequired: true, Reason: reason, Source: SourceFallback}
}

type fence struct {
	info string
	body string
}

// fencedBlocks splits markdown fenced code blocks out of s. unclosed names
// the info word of a block still open at the end of s ("" if none, "-" for
// a block without an info word).
func fencedBlocks(s string) (blocks []fence, unclosed string) {
	lines := strings.Split(s, "\n")
	open := false
	var marker, info string
	var body []string
	for _, line := range lines {
		t := strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if !open {
			m := fenceMarker(t)
			if m == "" {
				continue
			}
			open, marker, body = true, m, nil
			info = strings.ToLower(strings.TrimSpace(t[len(m):]))
			if i := strings.IndexAny(info, " \t{"); i >= 0 {
				info = info[:i]
			}
			continue
		}
		if fenceMarker(t) != "" && strings.HasPrefix(t, marker) && strings.Trim(t, marker[:1]) == "" {
			blocks = append(blocks, fence{info: info, body: strings.Join(body, "\n")})
			open = false
			continue
		}
		body = append(body, line)
	}
	if open {
		if info == "" {
			info = "-"
		}
		return blocks, info
	}
	return blocks, ""
}

// fenceMarker returns the run of three or more backticks or tildes that
// opens t, or "".
func fenceMarker(t string) string {
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return ""
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 {
		return ""
	}
	return t[:n]
}

// embeddedDecisions finds balanced JSON objects in s that have an "action"
// key. Objects found are skipped over, so nested objects of a decision are
// not read as further decisions.
func embeddedDecisions(s string) ([]Decision, error) {
	var found []Decision
	tried := 0
	for i := 0; i < len(s) && tried < maxEmbeddedCandidates; i++ {
		if s[i] != '{' || !startsObjectWithKey(s[i+1:]) {
			continue
		}
		tried++
		end := balancedEnd(s, i)
		if end < 0 {
			continue
		}
		d, err := decodeDecision([]byte(s[i:end]))
		if errors.Is(err, errNotDecision) {
			continue
		}
		if err != nil {
			if !json.Valid([]byte(s[i:end])) {
				continue // braces in prose, not JSON
			}
			return nil, fmt.Errorf("malformed embedded decision: %w", err)
		}
		found = append(found, d)
		i = end - 1
	}
	return found, nil
}

// startsObjectWithKey reports whether rest, the text after a '{', goes on
// (after white space) with a '"', as a JSON object with a key does.
func startsObjectWithKey(rest string) bool {
	t := strings.TrimLeft(rest, " \t\r\n")
	return t != "" && t[0] == '"'
}

// balancedEnd returns the index just past the '}' that closes the '{' at
// s[start], honouring JSON strings, or -1.
func balancedEnd(s string, start int) int {
	depth := 0
	inString, escaped := false, false
	for i := start; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// decodeDecision decodes one JSON object into a Decision, applying the
// kernel's rules. It returns errNotDecision for an object without "action".
func decodeDecision(b []byte) (Decision, error) {
	if err := checkDuplicateKeys(b); err != nil {
		return Decision{}, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return Decision{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if m == nil {
		return Decision{}, errNotDecision
	}
	rawAction, ok := m["action"]
	if !ok {
		return Decision{}, errNotDecision
	}
	act, ok := rawAction.(string)
	if !ok {
		return Decision{}, fmt.Errorf("action is %T, want a string", rawAction)
	}
	d := Decision{Action: strings.ToLower(strings.TrimSpace(act))}

	if v, ok := m["tool"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return Decision{}, fmt.Errorf("tool is %T, want a string", v)
		}
		d.Tool = strings.TrimSpace(s)
	}
	args, hasArgs := m["args"]
	if alt, ok := m["arguments"]; ok {
		if hasArgs {
			return Decision{}, errors.New(`both "args" and "arguments" are given`)
		}
		args, hasArgs = alt, true
	}
	if hasArgs && args != nil {
		a, ok := args.(map[string]any)
		if !ok {
			return Decision{}, fmt.Errorf("args is %T, want an object", args)
		}
		d.Args = a
	}
	if v, ok := m["confidence"].(float64); ok && v >= 0 && v <= 1 && !math.IsNaN(v) {
		c := v
		d.Confidence = &c
	}
	d.Intent, _ = m["intent"].(string)
	d.Reason, _ = m["reason"].(string)
	d.SubtaskDone, _ = m["subtask_done"].(bool)
	if v, ok := m["human_required"]; ok && v != nil {
		b, isBool := v.(bool)
		// Anything but an explicit false asks a person.
		d.HumanRequired = !isBool || b
	}

	switch d.Action {
	case ActionToolCall:
		if d.Tool == "" {
			return Decision{}, errors.New("tool_call without a tool")
		}
	case ActionAskHuman, ActionDone:
		d.HumanRequired = true
	case "":
		return Decision{}, errors.New("empty action")
	default:
		return Decision{}, fmt.Errorf("unknown action %q", d.Action)
	}
	return d, nil
}

// checkDuplicateKeys rejects an object that repeats a top-level key, which
// different JSON readers resolve differently.
func checkDuplicateKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '{' {
		return errNotDecision
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("invalid JSON: %w", err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("key %q repeats", key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("invalid JSON: %w", err)
		}
	}
	return nil
}
