package hookcore

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The lean hook's whole reading of an event — ParseEvent, the tool table,
// the action it submits — against the same steps done with encoding/json
// alone (as before the hand-written decoders): for any bytes, both accept
// or both refuse, and what is judged (the submitted body, byte for byte)
// is the same. The fast decoders' own targets check each decoder where it
// does not decline; this one checks the fall-backs and how the pieces fit
// (tool_input's raw bytes, the table's renamed arguments).

// refParseEvent is ParseEvent with encoding/json only.
func refParseEvent(agent string, data []byte) (*Event, error) {
	phases := events[agent]
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, ErrEmptyInput
	}
	if len(data) > MaxInput {
		return nil, ErrBadInput
	}
	w, err := refWire(data)
	if err != nil {
		return nil, err
	}
	ev := w.Event
	ev.Agent = agent
	ph, ok := phases[ev.Name]
	if !ok {
		return nil, ErrUnknownEvent
	}
	ev.Phase = ph
	if strings.TrimSpace(ev.ToolName) == "" {
		return nil, ErrNoTool
	}
	ev.ToolInput = map[string]any{}
	if len(w.RawInput) > 0 && string(w.RawInput) != "null" {
		dec := json.NewDecoder(bytes.NewReader(w.RawInput))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if m, ok := v.(map[string]any); ok {
			ev.ToolInput = m
		} else {
			ev.ToolInput = map[string]any{"input": v}
		}
	}
	if len(w.RawResponse) > 0 && string(w.RawResponse) != "null" {
		ev.ToolResponse = w.RawResponse
	}
	if len(w.RawError) > 0 && string(w.RawError) != "null" {
		var s string
		if json.Unmarshal(w.RawError, &s) == nil {
			ev.Error = s
		} else {
			ev.Error = string(w.RawError)
		}
	}
	return &ev, nil
}

// pipelineSeeds are events an agent's model can shape (through its call's
// arguments) or that a broken agent might send: duplicate and case-folded
// keys, escaped keys, bad UTF-8 and lone surrogates, NUL, deep nesting,
// odd numbers, tool_input of every type, trailing data.
var pipelineSeeds = []string{
	`{"hook_event_name":"PreToolUse","tool_name":"Read","tool_name":"Bash","tool_input":{"command":"rm -rf ~","file_path":"/etc/hostname"}}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_name":null,"tool_input":{"command":"echo hi","command":"rm -rf ~"}}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Read","TOOL_NAME":"Bash","tool_input":{"command":"rm -rf ~"}}`,
	`{"hook_event_name":"PreToolUse","tool\u005fname":"Bash","tool_input":{"comm\u0061nd":"rm -rf \u007e"}}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf ~ \ud800 \udc00\ud800 \u0000"},"\u212aey":1}`,
	"{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"echo \xff\xfe\xed\xa0\x80; rm -rf ~\"}}",
	`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo","x":` + strings.Repeat("[", 520) + strings.Repeat("]", 520) + `}}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"sleep 1","timeout":1e400,"b":-0,"c":123456789012345678901234567890}}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"rm -rf ~"}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":["rm -rf ~"]}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":5}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo hi"}}]{"tool_name":"x"}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo hi"}}{"tool_input":{"command":"rm -rf ~"}}`,
	"\xef\xbb\xbf{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\"}",
	"\xc2\xa0{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\"}\u2028",
	`{"hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls","dir_path":"/tmp","directory":"/"}}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/p/a","content":"x","file_path":"/home/u/.overseer/policy.yaml"}}`,
	`{"hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{"command":"ls"},"error":{"code":1},"tool_response":null}`,
}

func FuzzLeanPipeline(f *testing.F) {
	for _, s := range append(pipelineSeeds, eventSeeds...) {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(2))
	}
	tab, err := NewTable(nil)
	if err != nil {
		f.Fatal(err)
	}
	asker, _ := SelfAsker(0)
	f.Fuzz(func(t *testing.T, data []byte, agent uint8) {
		ag := Agents[int(agent)%len(Agents)]
		got, err := ParseEvent(ag, data)
		want, refErr := refParseEvent(ag, data)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("ParseEvent(%q): %v; with encoding/json alone: %v", data, err, refErr)
		}
		if err != nil {
			if !errors.Is(err, ErrBadInput) && !errors.Is(err, ErrEmptyInput) && !errors.Is(err, ErrUnknownEvent) && !errors.Is(err, ErrNoTool) {
				t.Fatalf("ParseEvent(%q): an error that is none of ParseEvent's: %v", data, err)
			}
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseEvent(%q)\n got %#v\nwant %#v", data, got, want)
		}
		b := submitBody{tab.Action(got), asker, nil}
		enc, err := encodeSubmit(b)
		ref, refErr := json.Marshal(submitBody{tab.Action(want), asker, nil})
		if (err == nil) != (refErr == nil) || !bytes.Equal(enc, ref) {
			t.Fatalf("the action of %q is submitted as\n%s (%v)\nwith encoding/json alone\n%s (%v)", data, enc, err, ref, refErr)
		}
	})
}
