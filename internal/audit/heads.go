package audit

// Published heads: the daemon publishes the chain's head (sequence, hash,
// time) to places the agent cannot rewrite, and Verify checks the log
// against them (Options.Heads), so that a log cut short or rolled back to an
// older copy shows even when its sealing key file was rolled back with it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/store"
)

// HeadEvent names a published head in a webhook's payload and in the
// journal (SYSLOG_IDENTIFIER overseer-audit).
const HeadEvent = "audit_head"

// HeadOf returns the head that record r makes.
func HeadOf(r store.AuditRecord) Head {
	return Head{Seq: r.Seq, Hash: r.Hash, Time: r.Time, Epoch: r.Epoch}
}

// Line returns the head as one JSON line (without the newline), the form
// LoadHeads reads.
func (h Head) Line() string {
	b, _ := json.Marshal(struct {
		Event string `json:"event"`
		Head
	}{HeadEvent, h})
	return string(b)
}

// ParseHeads reads heads from r: one JSON value per line, either a head
// itself ({"seq":…,"hash":…,"time":…}), or an object carrying one in a
// "head" field (a webhook payload) or as the JSON text of a "message"
// field (an ntfy JSON stream, a journal export in JSON). Lines that carry
// no head are skipped.
func ParseHeads(r io.Reader) ([]Head, error) {
	var out []Head
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			if i := bytes.IndexByte(line, '{'); i > 0 {
				line = line[i:] // "journal prefix: {…}"
			} else {
				continue
			}
		}
		if h, ok := headIn(line, 0); ok {
			out = append(out, h)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func headIn(b []byte, depth int) (Head, bool) {
	if depth > 2 {
		return Head{}, false
	}
	var m struct {
		Seq     int64           `json:"seq"`
		Hash    string          `json:"hash"`
		Time    time.Time       `json:"time"`
		Epoch   int64           `json:"epoch"`
		Head    json.RawMessage `json:"head"`
		Message json.RawMessage `json:"message"`
		Msg     json.RawMessage `json:"MESSAGE"`
	}
	if json.Unmarshal(b, &m) != nil {
		return Head{}, false
	}
	if m.Seq > 0 && len(m.Hash) == 64 {
		return Head{Seq: m.Seq, Hash: m.Hash, Time: m.Time, Epoch: m.Epoch}, true
	}
	for _, inner := range []json.RawMessage{m.Head, m.Message, m.Msg} {
		if len(inner) == 0 {
			continue
		}
		var s string
		if json.Unmarshal(inner, &s) == nil {
			inner = []byte(s)
		}
		if i := bytes.IndexByte(inner, '{'); i >= 0 {
			if h, ok := headIn(inner[i:], depth+1); ok {
				return h, true
			}
		}
	}
	return Head{}, false
}

// LoadHeads reads heads from a file, or from an http(s) URL.
func LoadHeads(ctx context.Context, src string) ([]Head, error) {
	var r io.Reader
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		r = io.LimitReader(resp.Body, 256<<20)
	} else {
		f, err := os.Open(src)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	heads, err := ParseHeads(r)
	if err != nil {
		return nil, err
	}
	if len(heads) == 0 {
		return nil, fmt.Errorf("no published heads in it")
	}
	return heads, nil
}

// JournalSocket is where the system journal listens for native messages.
const JournalSocket = "/run/systemd/journal/socket"

// ErrNoJournal means the system journal is not there to publish to.
var ErrNoJournal = fmt.Errorf("audit: no system journal (%s)", JournalSocket)

// PublishJournal sends h to the system journal (SYSLOG_IDENTIFIER
// overseer-audit), where a user cannot rewrite it; read it back with
// 'journalctl -t overseer-audit -o cat'. It returns ErrNoJournal when
// there is no journal socket.
func PublishJournal(h Head) error {
	return publishJournal(JournalSocket, h)
}

func publishJournal(socket string, h Head) error {
	if _, err := os.Stat(socket); err != nil {
		return ErrNoJournal
	}
	c, err := net.DialTimeout("unixgram", socket, 2*time.Second)
	if err != nil {
		return fmt.Errorf("audit: journal: %w", err)
	}
	defer c.Close()
	_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	msg := "SYSLOG_IDENTIFIER=overseer-audit\nPRIORITY=6\nMESSAGE=" + h.Line() + "\n"
	if _, err := c.Write([]byte(msg)); err != nil {
		return fmt.Errorf("audit: journal: %w", err)
	}
	return nil
}

// CurrentHead returns the chain's current head (zero for an empty log).
func CurrentHead(ctx context.Context, st store.AuditStore) (Head, error) {
	recs, err := st.QueryAudit(ctx, store.AuditQuery{Desc: true, Limit: 1})
	if err != nil || len(recs) == 0 {
		return Head{}, err
	}
	return HeadOf(recs[0]), nil
}
