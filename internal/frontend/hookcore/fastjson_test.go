package hookcore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard/secrets"
)

// The fast decoders and encoders of fastjson.go and fastwire.go must agree
// with encoding/json on every input: a decoder either declines or gives
// what encoding/json gives (which then has no error), an encoder either
// declines or writes json.Marshal's bytes. Run the targets with
//
//	go test -run '^$' -fuzz FuzzFastEvent ./internal/frontend/hookcore/
//
// (and FuzzFastValue, FuzzFastAnswer, FuzzFastSubmit, FuzzFastOutput, and
// FuzzLeanPipeline in fastpipeline_test.go); without -fuzz they run their
// seeds.

// refWire is how ParseEvent decoded an event before the fast decoder.
func refWire(data []byte) (wire, error) {
	var w wire
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return wire{}, err
	}
	if dec.More() {
		return wire{}, errTrailing
	}
	return w, nil
}

var errTrailing = json.Unmarshal([]byte("x"), new(any))

// refValue decodes one value with UseNumber, with only white space after it.
func refValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if len(bytes.Trim(data[dec.InputOffset():], " \t\r\n")) != 0 {
		return nil, errTrailing
	}
	return v, nil
}

const benchEvent = `{"session_id":"bench-1","transcript_path":"/home/dev/t.jsonl","cwd":"/home/dev/proj","permission_mode":"default",` +
	`"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo bench 1","description":"bench"},` +
	`"tool_use_id":"toolu_bench_1"}`

// spacedEvent has white space wherever JSON allows it.
const spacedEvent = " \t{ \"tool_input\" :\n { \"a\" : [ 1 , \"x\" ] } , \"tool_response\" : null ,\r\n\"error\":\"e\", " +
	"\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\" }\n"

var eventSeeds = []string{
	benchEvent,
	`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/a/b.go","content":"package b\n\nfunc F() {\n\treturn \"<&>\" \u2028 \ud83d\ude00 \ud800 x\u00e9\"}\n"},"tool_use_id":"t"}`,
	`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"a\nb","stderr":"","interrupted":false},"tool_use_id":"t","model":"m"}`,
	`{"hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"rm -rf /","n":[1,-2.5e10,0.0,{"x":null}],"b":true},"session_id":"g","cwd":"/"}`,
	`{"hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":"just a string","error":"boom","session_id":"x"}`,
	`{"hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":[1,2],"error":{"code":1},"session_id":"x"}`,
	`{"Session_ID":"case","hook_event_name":"PreToolUse","tool_name":"Bash"}`,
	`{"ſession_id":"long s","hook_event_name":"PreToolUse","tool_name":"Bash"}`,
	`{"session_\u0069d":"escaped key","hook_event_name":"PreToolUse","tool_name":"Bash"}`,
	`{"session_id":"a","session_id":null,"session_id":"b","tool_input":{"a":1},"tool_input":null,"hook_event_name":"PreToolUse","tool_name":"Bash"}`,
	`{"session_id":5,"hook_event_name":"PreToolUse","tool_name":"Bash"}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash"} `,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash"}}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash"} {}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"k":"\x80\xff bad utf8","d":{"d":{"d":[[[[]]]]}}}}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"a":1,"a":2}}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"a":01}}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"a":"\x"}}`,
	`{"hook_event_name":"PreToolUse","tool_name":"Bash","x":{"deep":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}`,
	spacedEvent,
	`null`, `[]`, `"x"`, ``, `{`, `{"a"}`, `{"a":}`, `{,}`, `{"a":1,}`,
}

func FuzzFastEvent(f *testing.F) {
	for _, s := range eventSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := fastWire(data)
		want, err := refWire(data)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("fastWire took %q, which encoding/json refuses: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fastWire(%q)\n got %#v\nwant %#v", data, got, want)
		}
	})
}

func FuzzFastValue(f *testing.F) {
	for _, s := range eventSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{`1`, `-0.5e-7`, `1.`, `-`, `"\ud83d\ude00"`, `"\udc00\ud800"`, `"\ud800\u0041"`, " [true,false,null] ", `{"":""}`, `"\u00zz"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := fastValue(data)
		want, err := refValue(data)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("fastValue took %q, which encoding/json refuses: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fastValue(%q)\n got %#v\nwant %#v", data, got, want)
		}
		// What the fast decoder made, the fast encoder writes as
		// json.Marshal does.
		enc, ok := appendJSONValue(nil, got, 0)
		ref, err := json.Marshal(got)
		if ok && (err != nil || !bytes.Equal(enc, ref)) {
			t.Fatalf("appendJSONValue(%#v) = %q, json.Marshal: %q, %v", got, enc, ref, err)
		}
	})
}

// daemonAnswer is an answer of the daemon to a submitted shell call.
const daemonAnswer = `{"action_id":"act_06h4ktvmou1meq8fkmnkh4ft8g","client_id":"act_irgth73wkal7qjg5","decision":"allow","level":"auto",` +
	`"reason":"read-only: echo","verdict":{"action_id":"act_06h4ktvmou1meq8fkmnkh4ft8g","level":"auto","reasons":[{"layer":"L3",` +
	`"source":"guard","name":"shell.readonly","level":"auto","message":"read-only: echo"},{"layer":"L3","source":"rule",` +
	`"name":"bench-echo-auto","policy_layer":"admin","level":"auto","message":"echo is harmless"}],"decider":{"layer":"L3",` +
	`"source":"guard","name":"shell.readonly","level":"auto","message":"read-only: echo"},"args_hash":"3da3f5972e07716e"},` +
	`"status_token":"st_NkymIX8CLEtkFbUbnm2qrPjhgop","facts":{"commands":[{"name":"echo","args":["bench","1"]}]}}` + "\n"

var answerSeeds = []string{
	daemonAnswer,
	`{"action_id":"a","decision":"allow","level":"notify","facts":{"paths":[{"path":"/a/b","intent":"write","in_cwd":true},{"path":"/c","intent":"read","in_cwd":false,"created":true}],"urls":["https://x"],"sql_class":"read","notes":["unparseable"],"commands":[{"name":"cp","args":[],"dynamic":true,"stdin":"/i","piped_files":["/p"]}]}}`,
	`{"action_id":"a","decision":"deny","level":"block","verdict":{"level":"block","reasons":[],"hints":["explain"],"stop":true,"preview":null,"cut":null,"decider":null}}`,
	`{"action_id":"a","decision":"pending","level":"approve","approval":{"id":"apr_1","status":"pending"}}`,
	`{"action_id":"a","decision":"pending","level":"Approve","approval":null,"facts":null,"verdict":null}`,
	`{"action_id":"a","level":" AUTO "}`,
	`{"action_id":"a","level":"unset"}`,
	`{"action_id":"a","level":""}`,
	`{"action_id":"a","level":"bogus"}`,
	`{"action_id":"a","level":3}`,
	`{"action_id":"a","action_id":"b"}`,
	`{"verdict":{"stop":true},"verdict":{"level":"auto"}}`,
	`{"Decision":"allow"}`,
	`{"decision":"allow","verdict":{"reasons":[null]}}`,
	`{"decision":"allow","facts":{"commands":[{"args":[null]}]}}`,
	`{"decision":"allow","facts":{"paths":[{"in_cwd":"yes"}]}}`,
	`{"addr":"127.0.0.1:7777","pid":12,"started":"2026-12-06T08:26:54Z"}`,
	`{"addr":"127.0.0.1:7777","tls":true}`,
	`{"addr":"127.0.0.1:7777","tls":null,"Addr":"x"}`,
	`null`, `{}`, `[]`, `{"decision":"allow"} x`,
}

func FuzzFastAnswer(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, ok := fastAnswer(data); ok {
			var want Answer
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatalf("fastAnswer took %q, which encoding/json refuses: %v", data, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("fastAnswer(%q)\n got %#v\nwant %#v", data, got, want)
			}
		}
		var o, ref Answer
		errFast, errRef := decodeAnswer(data, &o), json.Unmarshal(data, &ref)
		if (errFast == nil) != (errRef == nil) || errFast == nil && !reflect.DeepEqual(o, ref) {
			t.Fatalf("decodeAnswer(%q) = %#v, %v; json.Unmarshal: %#v, %v", data, o, errFast, ref, errRef)
		}
		info, err := decodeAddr(data)
		var refInfo addrInfo
		refErr := json.Unmarshal(data, &refInfo)
		if (err == nil) != (refErr == nil) || err == nil && info != refInfo {
			t.Fatalf("decodeAddr(%q) = %#v, %v; json.Unmarshal: %#v, %v", data, info, err, refInfo, refErr)
		}
	})
}

func FuzzFastSubmit(f *testing.F) {
	f.Add("claude-code", "sess-1", "Bash", "shell", "/home/dev/proj", "toolu_1", "bench", `{"command":"echo bench 1","description":"bench"}`,
		"hook", 1234, "99 1", "5542442f/pid:[1]", "2s", true, "19a189c5", "env:API_KEY", 40, uint64(7), "AAAA", false)
	f.Add("", "", "", "", "", "", "", `{}`, "", 0, "", "", "", false, "", "", 0, uint64(0), "", true)
	f.Add("<&>\u2028\x80", "\"\\\n\t\b\f\r\x01\x7f", "é", "file_write", "", "", "", `{"b":[1,"<"],"a":{"z":null,"é":false},"":-0.0e+5}`,
		"", -1, "", "", "", false, "", "src\xff", -3, uint64(1<<63), "w", true)
	f.Add("a", "b", "c", "", "", "", "", `"not an object"`, "", 0, "", "", "", false, "", "", 0, uint64(0), "", false)
	f.Fuzz(func(t *testing.T, agent, session, tool, kind, cwd, toolUseID, intent, args,
		askerKind string, pid int, start, host, wait string, hold bool, key, source string, length int, whole uint64, windows string, human bool) {
		a := &action.Action{Agent: agent, Session: session, Tool: tool, Kind: action.Kind(kind), Cwd: cwd,
			ToolUseID: toolUseID, ClientID: toolUseID + intent, SubagentID: intent, Intent: intent, HumanRequested: human}
		if v, err := refValue([]byte(args)); err == nil {
			if m, ok := v.(map[string]any); ok {
				a.Args = m
			} else {
				a.Args = map[string]any{"input": v}
			}
		}
		bodies := []submitBody{{Action: a}}
		if askerKind != "" || pid != 0 || hold {
			asker := &Asker{Kind: askerKind, PID: pid, Start: start, Host: host, Wait: wait, Hold: hold, Key: key}
			bodies = append(bodies, submitBody{a, asker, nil},
				submitBody{a, asker, []secrets.ValueFP{{Source: source, Length: length, Whole: whole, Windows: windows}, {}}})
		}
		for _, b := range bodies {
			got, ok := appendSubmit(nil, b)
			want, err := json.Marshal(b)
			if !ok {
				if err == nil && a.Args != nil {
					t.Fatalf("appendSubmit declined %#v", b.Action)
				}
				continue
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("appendSubmit:\n got %s\nwant %s (%v)", got, want, err)
			}
		}
	})
}

// The hook's usual documents take the fast paths (else the fast code would
// be dead weight and its speed-up gone unnoticed).
func TestFastPathsTaken(t *testing.T) {
	for _, ev := range []string{benchEvent, spacedEvent, eventSeeds[1], eventSeeds[2]} {
		if _, ok := fastWire([]byte(ev)); !ok {
			t.Errorf("fastWire declined %s", ev)
		}
	}
	if _, ok := fastValue([]byte(`{"command":"echo bench 1","description":"bench"}`)); !ok {
		t.Error("fastValue declined a tool input")
	}
	if _, ok := fastAnswer([]byte(daemonAnswer)); !ok {
		t.Error("fastAnswer declined the daemon's answer")
	}
	ev, err := ParseEvent(ClaudeCode, []byte(benchEvent))
	if err != nil {
		t.Fatal(err)
	}
	tab, err := NewTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	asker, _ := SelfAsker(0)
	b := submitBody{tab.Action(ev), asker, []secrets.ValueFP{{Source: "env:X", Length: 20, Whole: 3, Windows: "AA=="}}}
	got, ok := appendSubmit(nil, b)
	if !ok {
		t.Fatal("appendSubmit declined the bench event's action")
	}
	want, err := json.Marshal(b)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("appendSubmit:\n got %s\nwant %s", got, want)
	}
}

// Input the fast decoders do not model goes to encoding/json, and what it
// refuses is still refused.
func TestFastDeclines(t *testing.T) {
	for _, s := range []string{
		`{"Session_ID":"x","hook_event_name":"PreToolUse","tool_name":"Bash"}`,
		`{"sessıon_id":"x","hook_event_name":"PreToolUse","tool_name":"Bash"}`,
		`{"session_id":5,"hook_event_name":"PreToolUse","tool_name":"Bash"}`,
		`{"hook_event_name":"PreToolUse","tool_name":"Bash"}}`,
		`{"hook_event_name":"PreToolUse","tool_name":"Bash"} x`,
	} {
		if _, ok := fastWire([]byte(s)); ok {
			t.Errorf("fastWire took %s", s)
		}
	}
	// encoding/json matches keys case-insensitively: so does ParseEvent.
	ev, err := ParseEvent(ClaudeCode, []byte(`{"Session_ID":"x","HOOK_EVENT_NAME":"PreToolUse","tool_name":"Bash"}`))
	if err != nil || ev.SessionID != "x" || ev.Phase != PhasePre {
		t.Errorf("case-folded keys: %+v, %v", ev, err)
	}
	for _, s := range []string{`{"session_id":5,"hook_event_name":"PreToolUse","tool_name":"Bash"}`,
		`{"hook_event_name":"PreToolUse","tool_name":"Bash"} x`, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"a":01}}`} {
		if _, err := ParseEvent(ClaudeCode, []byte(s)); err == nil {
			t.Errorf("ParseEvent took %s", s)
		}
	}
	for _, s := range []string{`{"decision":"allow","approval":{"id":"a"}}`, `{"decision":"allow","decision":"deny"}`,
		`{"Decision":"allow"}`, `{"decision":"allow","level":"bogus"}`} {
		if _, ok := fastAnswer([]byte(s)); ok {
			t.Errorf("fastAnswer took %s", s)
		}
	}
	var o Answer
	if err := decodeAnswer([]byte(`{"decision":"allow","decision":"deny"}`), &o); err != nil || o.Decision != "deny" {
		t.Errorf("a duplicate decision: %+v, %v (encoding/json keeps the last)", o, err)
	}
}

func FuzzFastOutput(f *testing.F) {
	f.Add("PreToolUse", "allow", "Overseer: allowed (auto)", uint8(0), "")
	f.Add("PermissionRequest", "deny", "Overseer: <b>&amp;</b> \u2028 \x80\"\\\n", uint8(5), "stop \x01")
	f.Add("", "", "", uint8(2), "")
	f.Fuzz(func(t *testing.T, name, decision, reason string, shape uint8, stop string) {
		var cont *bool
		if shape&4 != 0 {
			b := shape&8 != 0
			cont = &b
		}
		var vs []any
		switch shape % 4 {
		case 0:
			vs = append(vs, hookOutput{cont, stop, preToolUse{name, decision, reason}})
		case 1:
			vs = append(vs, hookOutput{cont, stop, permissionRequest{name, permissionDecision{decision, reason}}})
		case 2:
			vs = append(vs, geminiOutput{decision, reason, cont, stop})
		default:
			vs = append(vs, hookOutput{cont, stop, nil}, hookOutput{cont, stop, map[string]string{name: reason}})
		}
		for _, v := range vs {
			want, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if got := JSONResponse(v); string(got.Stdout) != string(want)+"\n" || got.Code != 0 {
				t.Fatalf("JSONResponse(%#v) = %q, json.Marshal: %q", v, got.Stdout, want)
			}
		}
	})
}
