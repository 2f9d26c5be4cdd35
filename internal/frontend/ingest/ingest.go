// Package ingest reads what agents did without Overseer in the path — Claude
// Code transcripts, Codex rollouts and a documented generic JSONL — and turns
// every recorded tool call into the canonical Action, for the audited mode
// (`overseer audit ingest`): the kernel judges each one after the fact and
// records it as ingested.
//
// The parsers only read. Nothing in a transcript is executed, and a line that
// cannot be read is reported as a Problem, never dropped in silence.
package ingest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

// Formats of the files ingest reads.
const (
	FormatClaudeCode = "claude-code" // ~/.claude/projects/*/*.jsonl (and */subagents/*.jsonl)
	FormatCodex      = "codex"       // ~/.codex/sessions/YYYY/MM/DD/*.jsonl
	FormatGeneric    = "jsonl"       // one call per line, see Generic
)

// Formats lists the formats.
var Formats = []string{FormatClaudeCode, FormatCodex, FormatGeneric}

// MaxLine caps one line of a transcript. A longer line is reported as a
// Problem (and skipped past).
const MaxLine = 64 << 20

// MaxResultText caps the result text an Event keeps.
const MaxResultText = 4 << 10

// MaxChange caps the file contents a FileChange keeps: a change of a larger
// file cannot be rolled back.
const MaxChange = 1 << 20

// Event is what one line of a transcript says: a tool call, the result of
// one, or both (the generic format).
type Event struct {
	Call   *Call
	Result *Result
}

// Origin says where a call was read: its file, line and format, and the
// agent's own ids for it.
type Origin struct {
	Format string `json:"format"`
	File   string `json:"file"`
	Line   int    `json:"line"`
	// SubAgent is the id of the sub-agent (Claude Code sidechain) that made
	// the call, when it was one.
	SubAgent  string    `json:"sub_agent,omitempty"`
	ToolUseID string    `json:"tool_use_id,omitempty"`
	Time      time.Time `json:"time,omitzero"` // when the agent recorded it
	// LineHash is the SHA-256 of the line, for calls without a tool-use id.
	LineHash string `json:"line_hash,omitempty"`
}

// Call is one tool call as an agent recorded it.
type Call struct {
	Origin  Origin
	Agent   string
	Session string
	Tool    string
	// Kind is the canonical kind the recording declared (generic format
	// only); empty: inferred from the tool as for a hooked call.
	Kind  string
	Input map[string]any
	Cwd   string
}

// Key identifies a call across files and ingests: the agent's own ids for
// it where it has them (so a copy of a transcript is not a second call),
// else the file, line and content.
func (c *Call) Key() string {
	return callKey(c.Origin, c.Agent, c.Session)
}

func callKey(o Origin, agent, session string) string {
	var parts []string
	if o.ToolUseID != "" {
		parts = []string{o.Format, agent, session, o.SubAgent, o.ToolUseID}
	} else {
		parts = []string{o.Format, agent, session, o.File, fmt.Sprint(o.Line), o.LineHash}
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:16])
}

// Result is what a call returned, as recorded.
type Result struct {
	Origin Origin // the result's own line; ToolUseID names the call
	// Key, when set, is the key of the call (a call without a tool-use id,
	// recorded on the same line).
	Key     string
	Agent   string
	Session string
	IsError bool
	Text    string // cut to MaxResultText
	// Change is the file write the call made, when the transcript holds
	// enough to undo it: the previous content and the content written.
	Change *FileChange
}

// CallKey is the Key of the call the result belongs to.
func (r *Result) CallKey() string {
	if r.Key != "" {
		return r.Key
	}
	o := r.Origin
	o.File, o.Line, o.LineHash = "", 0, ""
	return callKey(o, r.Agent, r.Session)
}

// FileChange is a file write the transcript describes fully, or (Patch)
// by the patch that made it.
type FileChange struct {
	Path string `json:"path"`
	// Before is the content before the call; nil: the call created the file.
	Before *string `json:"before"`
	After  string  `json:"after"`
	// Patch, when set, is the body of an apply_patch update of Path (Codex):
	// the content before it is what reversing the patch gives, where the
	// file is what the patch made it. Before and After are then unset.
	Patch string `json:"patch,omitempty"`
}

// Problem is a line that could not be read.
type Problem struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Err  string `json:"error"`
}

func (p Problem) Error() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Err) }

// Parser reads one file's lines in order. It keeps what later lines need
// (the session a Codex rollout declared at its start, say), so a file
// followed live is parsed line by line as it grows.
type Parser interface {
	// Line parses line n (1-based) of the file, without its newline.
	Line(n int, line []byte) ([]Event, error)
}

// NewParser returns the parser of format for file.
func NewParser(format, file string) (Parser, error) {
	switch format {
	case FormatClaudeCode:
		return &claudeParser{file: file}, nil
	case FormatCodex:
		return &codexParser{file: file}, nil
	case FormatGeneric:
		return &genericParser{file: file}, nil
	}
	return nil, fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

// Parsed is everything read from a file.
type Parsed struct {
	Events   []Event
	Problems []Problem
	// Lines is the number of complete lines read; Offset the bytes they
	// span (where a follower resumes).
	Lines  int
	Offset int64
}

// ReadAll parses r from line first+1 on (first lines already read). With
// partial set, a last line without its newline is left for later (a file
// being written); else it is parsed too.
func ReadAll(p Parser, file string, r io.Reader, first int, partial bool) (*Parsed, error) {
	out := &Parsed{Lines: first}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if errors.Is(err, errLong) {
			out.Lines++
			out.Offset += int64(len(line))
			out.Problems = append(out.Problems, Problem{File: file, Line: out.Lines, Err: fmt.Sprintf("line longer than %d bytes", MaxLine)})
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return out, err
		}
		complete := bytes.HasSuffix(line, []byte("\n"))
		if len(line) == 0 || (!complete && partial) {
			return out, nil
		}
		out.Lines++
		out.Offset += int64(len(line))
		body := bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(body)) > 0 {
			evs, perr := p.Line(out.Lines, body)
			if perr != nil {
				out.Problems = append(out.Problems, Problem{File: file, Line: out.Lines, Err: perr.Error()})
			}
			out.Events = append(out.Events, evs...)
		}
		if !complete {
			return out, nil
		}
	}
}

var errLong = errors.New("line too long")

// readLine reads one line with its newline. A line over MaxLine is read to
// its end and discarded: it returns errLong with the bytes it spanned (as
// a slice of that length, for the offset).
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	long := false
	n := 0
	for {
		chunk, err := br.ReadSlice('\n')
		n += len(chunk)
		if !long {
			if len(buf)+len(chunk) > MaxLine {
				long, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if long {
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return make([]byte, n), errLong
		}
		return buf, err
	}
}

// decode parses one JSON value with numbers kept as json.Number.
func decode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func lineHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// objectOf returns raw as an argument map: an object as is, a JSON string
// holding an object decoded (Codex's arguments), anything else under
// "input".
func objectOf(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	var v any
	if err := decode(raw, &v); err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case map[string]any:
		return v, nil
	case string:
		var m map[string]any
		if strings.HasPrefix(strings.TrimSpace(v), "{") && decode([]byte(v), &m) == nil {
			return m, nil
		}
	}
	return map[string]any{"input": v}, nil
}

// Detect names the format of a file from where it lies and its first
// line: Claude Code's projects directory or a line with "sessionId";
// Codex's sessions directory or a session_meta line; else the generic
// format.
func Detect(path string, first []byte) string {
	p := filepath.ToSlash(path)
	switch {
	case strings.Contains(p, "/.claude/projects/"):
		return FormatClaudeCode
	case strings.Contains(p, "/.codex/sessions/"):
		return FormatCodex
	}
	var probe struct {
		Type      string          `json:"type"`
		SessionID string          `json:"sessionId"`
		Payload   json.RawMessage `json:"payload"`
		Agent     string          `json:"agent"`
	}
	if json.Unmarshal(first, &probe) == nil {
		switch {
		case probe.Type == "session_meta" || (probe.Payload != nil && probe.Agent == ""):
			return FormatCodex
		case probe.SessionID != "" || probe.Type == "queue-operation" || probe.Type == "summary":
			return FormatClaudeCode
		}
	}
	return FormatGeneric
}
