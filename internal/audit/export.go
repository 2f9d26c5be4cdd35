package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store"
)

// exportPage is how many records Export reads per query.
const exportPage = 1000

// Export writes the records matching q to w as JSON lines, one
// store.AuditRecord per line, reading the store a page at a time. The data
// of each record is written byte for byte as stored, so that an export of
// the whole chain in ascending order can be checked with VerifyJSONL (data
// that was altered to contain line breaks spans lines; the output is still
// a valid stream of JSON values). A record whose data is not JSON at all
// (or has space around it, which JSON readers drop) cannot be written:
// Export fails naming it. A descending query (q.Desc) is
// read in one piece.
func Export(ctx context.Context, st store.AuditStore, q store.AuditQuery, w io.Writer) error {
	bw := bufio.NewWriter(w)
	var line []byte
	write := func(recs []store.AuditRecord) error {
		for i := range recs {
			var err error
			if line, err = appendRecord(line[:0], &recs[i]); err != nil {
				return fmt.Errorf("audit: export record %d: %w", recs[i].Seq, err)
			}
			if _, err := bw.Write(line); err != nil {
				return fmt.Errorf("audit: export: %w", err)
			}
		}
		return nil
	}

	if q.Desc {
		recs, err := st.QueryAudit(ctx, q)
		if err != nil {
			return fmt.Errorf("audit: export: %w", err)
		}
		if err := write(recs); err != nil {
			return err
		}
		return flush(bw)
	}

	remaining := q.Limit // 0: no limit
	for {
		pq := q
		pq.Limit = exportPage
		if q.Limit > 0 {
			pq.Limit = min(exportPage, remaining)
		}
		recs, err := st.QueryAudit(ctx, pq)
		if err != nil {
			return fmt.Errorf("audit: export: %w", err)
		}
		if err := write(recs); err != nil {
			return err
		}
		if q.Limit > 0 {
			remaining -= len(recs)
		}
		if len(recs) < pq.Limit || (q.Limit > 0 && remaining == 0) {
			return flush(bw)
		}
		q.AfterSeq = recs[len(recs)-1].Seq
	}
}

// recordHead and recordTail are the fields of store.AuditRecord before and
// after Data, with the same JSON names.
type recordHead struct {
	Seq      int64     `json:"seq"`
	Time     time.Time `json:"time"`
	Type     string    `json:"type"`
	ActionID string    `json:"action_id,omitempty"`
	Agent    string    `json:"agent,omitempty"`
	Session  string    `json:"session,omitempty"`
	Tool     string    `json:"tool,omitempty"`
}

type recordTail struct {
	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`
	Epoch    int64  `json:"epoch,omitempty"`
	Tag      string `json:"tag,omitempty"`
}

// appendRecord appends r as one JSON object and a newline, with r.Data
// copied verbatim (encoding/json would compact it).
func appendRecord(b []byte, r *store.AuditRecord) ([]byte, error) {
	if !json.Valid(r.Data) {
		return b, errors.New("data is not JSON (the record was altered; run verify)")
	}
	if len(bytes.TrimSpace(r.Data)) != len(r.Data) {
		// A JSON reader drops space around a value, so the export could not
		// show it; the log never writes it.
		return b, errors.New("data has space around it (the record was altered; run verify)")
	}
	head, err := marshalNoEscape(recordHead{r.Seq, r.Time, r.Type, r.ActionID, r.Agent, r.Session, r.Tool})
	if err != nil {
		return b, err
	}
	tail, err := marshalNoEscape(recordTail{r.PrevHash, r.Hash, r.Epoch, r.Tag})
	if err != nil {
		return b, err
	}
	b = append(b, head[:len(head)-1]...) // without '}'
	b = append(b, `,"data":`...)
	b = append(b, r.Data...)
	b = append(b, ',')
	b = append(b, tail[1:]...) // without '{'
	return append(b, '\n'), nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func flush(bw *bufio.Writer) error {
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("audit: export: %w", err)
	}
	return nil
}

// DefaultPoll is Tail's polling interval when it is given none.
const DefaultPoll = time.Second

// Tail calls fn for every record with Seq > afterSeq, in order, then keeps
// polling the store every poll (DefaultPoll if poll <= 0, timed by clk) for
// new records until ctx ends, when it returns ctx's error. An error from fn
// stops Tail and is returned as is.
func Tail(ctx context.Context, st store.AuditStore, afterSeq int64, poll time.Duration, clk clock.Clock,
	fn func(store.AuditRecord) error) error {
	if poll <= 0 {
		poll = DefaultPoll
	}
	var fnErr error
	for {
		err := st.ScanAudit(ctx, afterSeq, func(r store.AuditRecord) error {
			if err := fn(r); err != nil {
				fnErr = err
				return err
			}
			afterSeq = r.Seq
			return nil
		})
		if fnErr != nil {
			return fnErr
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("audit: tail: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clk.After(poll):
		}
	}
}
