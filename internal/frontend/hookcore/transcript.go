package hookcore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/overseer-dev/overseer/internal/guard"
)

// Budget caps apply to agents Overseer does not drive by what they report
// of their model use: their transcripts. At each call the hook reads the
// session's transcript (transcript_path of the hook input) and reports
// the session's cumulative token counts; the kernel counts only what is
// new since the last report.
//
//   - Claude Code writes one JSON line per message part; an assistant
//     line carries message.id, message.model and message.usage
//     (input_tokens, cache_creation_input_tokens, cache_read_input_tokens,
//     output_tokens). Parts of one message repeat its usage: each message
//     counts once (its last line). Cached input counts as input (an
//     estimate that errs high).
//   - Codex writes event_msg lines whose payload of type token_count has
//     info.total_token_usage (input_tokens, output_tokens): the last one is
//     the session's total. turn_context lines name the model.
//
// A transcript that cannot be read reports nothing (the call is judged as
// usual; the budget counts less). A report a person cannot trust is not
// possible to forge downwards: the kernel never lowers a session's total.

// MaxTranscript bounds the transcript read at each call.
const MaxTranscript = 64 << 20

// OpenTranscript opens the transcript at p for reading, without blocking
// and only when it is a regular file (guard.OpenRegular): a transcript is
// a file the agent's own user can write, and a named pipe put in its place
// would hold the hook, which reads it before the call is judged, until a
// writer came.
func OpenTranscript(p string) (*os.File, error) { return guard.OpenRegular(p) }

// TranscriptUse is what a transcript says of its session's model use.
type TranscriptUse struct {
	Model  string
	Input  int64
	Output int64
}

// ReadTranscriptUse reads the cumulative use from agent's transcript r.
func ReadTranscriptUse(agent string, r io.Reader) (TranscriptUse, error) {
	sc := bufio.NewScanner(io.LimitReader(r, MaxTranscript))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var u TranscriptUse
	type msgUse struct{ in, out int64 }
	byMsg := map[string]msgUse{}
	var order []string
	for sc.Scan() {
		line := sc.Bytes()
		switch agent {
		case ClaudeCode:
			if !bytes.Contains(line, []byte(`"usage"`)) {
				continue
			}
			var l struct {
				Type    string `json:"type"`
				Message struct {
					ID    string `json:"id"`
					Model string `json:"model"`
					Usage *struct {
						Input         int64 `json:"input_tokens"`
						CacheCreation int64 `json:"cache_creation_input_tokens"`
						CacheRead     int64 `json:"cache_read_input_tokens"`
						Output        int64 `json:"output_tokens"`
					} `json:"usage"`
				} `json:"message"`
			}
			if json.Unmarshal(line, &l) != nil || l.Type != "assistant" || l.Message.Usage == nil {
				continue
			}
			mu := l.Message.Usage
			if !sane(mu.Input) || !sane(mu.CacheCreation) || !sane(mu.CacheRead) || !sane(mu.Output) {
				continue
			}
			id := l.Message.ID
			if id == "" {
				id = fmt.Sprintf("#%d", len(order))
			}
			if _, seen := byMsg[id]; !seen {
				order = append(order, id)
			}
			byMsg[id] = msgUse{in: mu.Input + mu.CacheCreation + mu.CacheRead, out: mu.Output}
			if l.Message.Model != "" {
				u.Model = l.Message.Model
			}
		case Codex:
			if !bytes.Contains(line, []byte(`"token_count"`)) && !bytes.Contains(line, []byte(`"turn_context"`)) {
				continue
			}
			var l struct {
				Type    string `json:"type"`
				Payload struct {
					Type  string `json:"type"`
					Model string `json:"model"`
					Info  *struct {
						Total struct {
							Input  int64 `json:"input_tokens"`
							Output int64 `json:"output_tokens"`
						} `json:"total_token_usage"`
					} `json:"info"`
				} `json:"payload"`
			}
			if json.Unmarshal(line, &l) != nil {
				continue
			}
			if l.Type == "turn_context" && l.Payload.Model != "" {
				u.Model = l.Payload.Model
			}
			if l.Type == "event_msg" && l.Payload.Type == "token_count" && l.Payload.Info != nil &&
				sane(l.Payload.Info.Total.Input) && sane(l.Payload.Info.Total.Output) {
				u.Input, u.Output = l.Payload.Info.Total.Input, l.Payload.Info.Total.Output
			}
		default:
			return u, errors.New("no transcript format for " + agent)
		}
	}
	for _, id := range order {
		u.Input = min(u.Input+byMsg[id].in, maxTokens)
		u.Output = min(u.Output+byMsg[id].out, maxTokens)
	}
	return u, sc.Err()
}

// maxTokens bounds a token count read from a transcript.
const maxTokens = 1e12

func sane(n int64) bool { return n >= 0 && n <= maxTokens }
