package hookcore

import (
	"encoding/json"
	"strconv"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard/secrets"
)

// The daemon's documents on the lean hook's hot path, by hand (see
// fastjson.go): the action it submits, the daemon's answer and the
// address file.

// submitBody is what Submit sends: the action with the asker and the known
// secret values beside its fields.
type submitBody struct {
	*action.Action
	Asker       *Asker            `json:"asker,omitempty"`
	KnownValues []secrets.ValueFP `json:"known_values,omitempty"`
}

// encodeSubmit encodes b as json.Marshal does: through appendSubmit, else
// json.Marshal itself.
func encodeSubmit(b submitBody) ([]byte, error) {
	if out, ok := appendSubmit(nil, b); ok {
		return out, nil
	}
	return json.Marshal(b)
}

// appendSubmit writes what json.Marshal writes for b, or declines (ok
// false) for what it does not model: an action with a time, facts, a
// confidence or a cut (a hook's action has none before it is judged), or
// an argument of a type the event decoder does not make.
func appendSubmit(dst []byte, b submitBody) ([]byte, bool) {
	a := b.Action
	if a == nil || !a.Time.IsZero() || a.Confidence != nil || a.Cut != nil || !factsEmpty(&a.Facts) {
		return dst, false
	}
	dst = append(dst, '{')
	str := func(name, v string, omitEmpty bool) {
		if omitEmpty && v == "" {
			return
		}
		if len(dst) > 1 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, '"', ':')
		dst = appendJSONString(dst, v)
	}
	str("id", a.ID, true)
	str("client_id", a.ClientID, true)
	str("agent", a.Agent, true)
	str("session", a.Session, true)
	str("subagent_id", a.SubagentID, true)
	str("subagent_type", a.SubagentType, true)
	str("tool_use_id", a.ToolUseID, true)
	str("tool", a.Tool, false)
	str("kind", string(a.Kind), true)
	dst = append(dst, `,"args":`...)
	var ok bool
	if dst, ok = appendJSONMap(dst, a.Args, 0); !ok {
		return dst, false
	}
	str("cwd", a.Cwd, true)
	str("intent", a.Intent, true)
	if a.HumanRequested {
		dst = append(dst, `,"human_requested":true`...)
	}
	dst = append(dst, `,"time":"0001-01-01T00:00:00Z","facts":{}`...)
	if k := b.Asker; k != nil {
		dst = append(dst, `,"asker":{`...)
		n := len(dst)
		field := func(name string) {
			if len(dst) > n {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = append(dst, name...)
			dst = append(dst, '"', ':')
		}
		for _, f := range [...]struct{ name, v string }{{"kind", k.Kind}, {"pid", ""}, {"start", k.Start},
			{"host", k.Host}, {"wait", k.Wait}, {"hold", ""}, {"key", k.Key}} {
			switch {
			case f.name == "pid":
				if k.PID != 0 {
					field(f.name)
					dst = strconv.AppendInt(dst, int64(k.PID), 10)
				}
			case f.name == "hold":
				if k.Hold {
					field(f.name)
					dst = append(dst, "true"...)
				}
			case f.v != "":
				field(f.name)
				dst = appendJSONString(dst, f.v)
			}
		}
		dst = append(dst, '}')
	}
	if len(b.KnownValues) > 0 {
		dst = append(dst, `,"known_values":[`...)
		for i, v := range b.KnownValues {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"source":`...)
			dst = appendJSONString(dst, v.Source)
			dst = append(dst, `,"length":`...)
			dst = strconv.AppendInt(dst, int64(v.Length), 10)
			if v.Whole != 0 {
				dst = append(dst, `,"whole":`...)
				dst = strconv.AppendUint(dst, v.Whole, 10)
			}
			if v.Windows != "" {
				dst = append(dst, `,"windows":`...)
				dst = appendJSONString(dst, v.Windows)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), true
}

func factsEmpty(f *action.Facts) bool {
	return f.Commands == nil && f.Paths == nil && f.URLs == nil && f.SQLClass == "" && f.Notes == nil
}

// decodeAnswer decodes the daemon's answer into o as json.Unmarshal does:
// through fastAnswer, else json.Unmarshal itself.
func decodeAnswer(data []byte, o *Answer) error {
	if a, ok := fastAnswer(data); ok {
		*o = a
		return nil
	}
	return json.Unmarshal(data, o)
}

var answerFields = []string{"action_id", "decision", "level", "reason", "verdict", "approval", "facts"}

// fastAnswer decodes an answer as json.Unmarshal decodes it into a zero
// Answer, or declines: an answer with an approval (a person's decision,
// off the hot path) always.
func fastAnswer(data []byte) (o Answer, ok bool) {
	s := &scan{b: data}
	ok = s.fieldsOf(answerFields, func(i int) bool {
		switch i {
		case 0:
			return s.strField(&o.ActionID)
		case 1:
			return s.strField(&o.Decision)
		case 2:
			return s.levelField(&o.Level)
		case 3:
			return s.strField(&o.Reason)
		case 4:
			if s.isNull() {
				return true
			}
			o.Verdict = new(action.Verdict)
			return s.verdict(o.Verdict)
		case 5:
			return s.isNull()
		default:
			if s.isNull() {
				return true
			}
			o.Facts = new(action.Facts)
			return s.facts(o.Facts)
		}
	})
	if !ok || !s.end() {
		return Answer{}, false
	}
	return o, true
}

// levelField decodes a level from its name (action.Level.UnmarshalText);
// a null leaves it.
func (s *scan) levelField(l *action.Level) bool {
	if s.isNull() {
		return true
	}
	if s.peek() != '"' {
		return false
	}
	v, ok := s.str()
	return ok && l.UnmarshalText([]byte(v)) == nil
}

var verdictFields = []string{"action_id", "level", "reasons", "preview", "decider", "args_hash", "hints", "cut", "stop"}

func (s *scan) verdict(v *action.Verdict) bool {
	return s.fieldsOf(verdictFields, func(i int) bool {
		switch i {
		case 0:
			return s.strField(&v.ActionID)
		case 1:
			return s.levelField(&v.Level)
		case 2:
			if s.isNull() {
				return true
			}
			v.Reasons = []action.Reason{}
			return s.array(func() bool {
				v.Reasons = append(v.Reasons, action.Reason{})
				return s.reason(&v.Reasons[len(v.Reasons)-1])
			})
		case 3, 7: // preview, cut: null only
			return s.isNull()
		case 4:
			if s.isNull() {
				return true
			}
			v.Decider = new(action.Reason)
			return s.reason(v.Decider)
		case 5:
			return s.strField(&v.ArgsHash)
		case 6:
			return s.strings(&v.Hints)
		default:
			return s.boolField(&v.Stop)
		}
	})
}

var reasonFields = []string{"layer", "source", "name", "policy_layer", "level", "message"}

func (s *scan) reason(r *action.Reason) bool {
	return s.fieldsOf(reasonFields, func(i int) bool {
		switch i {
		case 0:
			return s.strField(&r.Layer)
		case 1:
			return s.strField((*string)(&r.Source))
		case 2:
			return s.strField(&r.Name)
		case 3:
			return s.strField(&r.PolicyLayer)
		case 4:
			return s.levelField(&r.Level)
		default:
			return s.strField(&r.Message)
		}
	})
}

// strings decodes a list of strings (null: nil; an element that is not a
// string declines).
func (s *scan) strings(dst *[]string) bool {
	if s.isNull() {
		*dst = nil
		return true
	}
	l := []string{}
	ok := s.array(func() bool {
		if s.peek() != '"' {
			return false
		}
		v, ok := s.str()
		l = append(l, v)
		return ok
	})
	*dst = l
	return ok
}

var factsFields = []string{"commands", "paths", "urls", "sql_class", "notes"}

func (s *scan) facts(f *action.Facts) bool {
	return s.fieldsOf(factsFields, func(i int) bool {
		switch i {
		case 0:
			if s.isNull() {
				return true
			}
			f.Commands = []action.Command{}
			return s.array(func() bool {
				f.Commands = append(f.Commands, action.Command{})
				return s.command(&f.Commands[len(f.Commands)-1])
			})
		case 1:
			if s.isNull() {
				return true
			}
			f.Paths = []action.PathFact{}
			return s.array(func() bool {
				f.Paths = append(f.Paths, action.PathFact{})
				return s.pathFact(&f.Paths[len(f.Paths)-1])
			})
		case 2:
			return s.strings(&f.URLs)
		case 3:
			return s.strField(&f.SQLClass)
		default:
			return s.strings(&f.Notes)
		}
	})
}

var commandFields = []string{"name", "args", "dynamic", "stdin", "piped_files"}

func (s *scan) command(c *action.Command) bool {
	return s.fieldsOf(commandFields, func(i int) bool {
		switch i {
		case 0:
			return s.strField(&c.Name)
		case 1:
			return s.strings(&c.Args)
		case 2:
			return s.boolField(&c.Dynamic)
		case 3:
			return s.strField(&c.Stdin)
		default:
			return s.strings(&c.PipedFiles)
		}
	})
}

var pathFactFields = []string{"path", "intent", "in_cwd", "created"}

func (s *scan) pathFact(p *action.PathFact) bool {
	return s.fieldsOf(pathFactFields, func(i int) bool {
		switch i {
		case 0:
			return s.strField(&p.Path)
		case 1:
			return s.strField((*string)(&p.Intent))
		case 2:
			return s.boolField(&p.InCwd)
		default:
			return s.boolField(&p.Created)
		}
	})
}

// addrInfo is the part of the address file the lean hook reads.
type addrInfo struct {
	Addr string `json:"addr"`
	TLS  bool   `json:"tls"`
}

// decodeAddr decodes the address file as json.Unmarshal does into
// addrInfo: by hand, else through json.Unmarshal.
func decodeAddr(data []byte) (addrInfo, error) {
	s := &scan{b: data}
	var info addrInfo
	ok := s.fieldsOf([]string{"addr", "tls"}, func(i int) bool {
		switch i {
		case 0:
			return s.strField(&info.Addr)
		default:
			return s.boolField(&info.TLS)
		}
	})
	if ok && s.end() {
		return info, nil
	}
	info = addrInfo{}
	err := json.Unmarshal(data, &info)
	return info, err
}
