package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/overseer-dev/overseer/internal/store"
)

// The live stream (server-sent events) sends:
//
//	event: queue   data: the pending queue (queueSnapshot), whenever it changes
//	event: audit   data: {"records": [...]}, new audit records, oldest first
//	event: pins    data: {"version": "…", "pending": n}, when the MCP pins change
//	               (n definitions wait for a person)
//	: ping         a comment every Heartbeat, to keep proxies from closing it
//
// Changes made in this process arrive at once through the gate's events;
// changes made by other processes sharing the database (a hook answering,
// the CLI without a daemon) are found by re-reading every Poll.

// maxStreamAudit caps the audit records sent in one event.
const maxStreamAudit = 200

func (c *Console) events(w http.ResponseWriter, r *http.Request, _ *session) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeErr(w, http.StatusInternalServerError, "stream", "streaming is not supported here")
		return
	}
	ctx := r.Context()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	// The subscription ends, and its channel closes, when the request does.
	evs := c.k.Gate.Subscribe(ctx)
	st := &streamState{c: c, w: w, fl: fl}
	if v := r.URL.Query().Get("after"); v != "" {
		st.lastSeq, _ = strconv.ParseInt(v, 10, 64)
	} else if v := r.Header.Get("Last-Event-ID"); v != "" {
		st.lastSeq, _ = strconv.ParseInt(v, 10, 64)
	} else {
		st.lastSeq = c.tailSeq(ctx)
	}
	if err := st.sendQueue(ctx, true); err != nil {
		return
	}
	if err := st.sendAudit(ctx); err != nil {
		return
	}
	if err := st.sendPins(ctx); err != nil {
		return
	}
	if _, err := fmt.Fprintf(w, "event: ready\ndata: {}\n\n"); err != nil {
		return
	}
	fl.Flush()

	poll := c.clk.After(c.opts.Poll)
	beat := c.clk.After(c.opts.Heartbeat)
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-evs:
			if !ok {
				return
			}
			// Drain what else is waiting, then send one snapshot.
			for drained := false; !drained; {
				select {
				case _, ok := <-evs:
					if !ok {
						return
					}
				default:
					drained = true
				}
			}
			if st.sendQueue(ctx, true) != nil || st.sendAudit(ctx) != nil {
				return
			}
		case <-poll:
			poll = c.clk.After(c.opts.Poll)
			if st.sendQueue(ctx, false) != nil || st.sendAudit(ctx) != nil || st.sendPins(ctx) != nil {
				return
			}
		case <-beat:
			beat = c.clk.After(c.opts.Heartbeat)
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// tailSeq returns the sequence number of the newest audit record (0 if
// none or unreadable: the stream then starts from the beginning, capped).
func (c *Console) tailSeq(ctx context.Context) int64 {
	recs, err := c.k.Store.QueryAudit(ctx, store.AuditQuery{Desc: true, Limit: 1})
	if err != nil || len(recs) == 0 {
		return 0
	}
	return recs[0].Seq
}

// streamState is one live stream's position.
type streamState struct {
	c       *Console
	w       http.ResponseWriter
	fl      http.Flusher
	lastSeq int64
	lastFP  string
	pinsVer string
}

func (s *streamState) send(event string, id string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var sb strings.Builder
	if id != "" {
		sb.WriteString("id: " + id + "\n")
	}
	sb.WriteString("event: " + event + "\ndata: ")
	sb.Write(b)
	sb.WriteString("\n\n")
	if _, err := fmt.Fprint(s.w, sb.String()); err != nil {
		return err
	}
	s.fl.Flush()
	return nil
}

// sendQueue sends the pending queue when it changed (or always, with force).
func (s *streamState) sendQueue(ctx context.Context, force bool) error {
	snap, err := s.c.snapshot(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return s.send("problem", "", map[string]string{"message": "reading the queue: " + err.Error()})
	}
	var fp strings.Builder
	fmt.Fprintf(&fp, "%t;", snap.More)
	for _, it := range snap.Pending {
		fp.WriteString(it.ID + ":" + string(it.Status) + ";")
	}
	if !force && fp.String() == s.lastFP {
		return nil
	}
	s.lastFP = fp.String()
	return s.send("queue", "", snap)
}

// sendAudit sends the audit records newer than the last one sent.
func (s *streamState) sendAudit(ctx context.Context) error {
	items, err := s.c.queryAudit(ctx, store.AuditQuery{AfterSeq: s.lastSeq, Limit: maxStreamAudit}, auditFilter{})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return s.send("problem", "", map[string]string{"message": "reading the audit log: " + err.Error()})
	}
	if len(items) == 0 {
		return nil
	}
	s.lastSeq = items[len(items)-1].Seq
	return s.send("audit", strconv.FormatInt(s.lastSeq, 10), map[string]any{"records": items})
}

// sendPins sends the MCP pins' version and the number of definitions
// waiting for a person, when the pins changed (the gateway, another
// process, writes them).
func (s *streamState) sendPins(ctx context.Context) error {
	ver, err := s.c.k.Pins.Version(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if s.pinsVer == "error" {
			return nil
		}
		s.pinsVer = "error"
		return s.send("problem", "", map[string]string{"message": "reading the MCP pins: " + err.Error()})
	}
	if ver == s.pinsVer {
		return nil
	}
	pins, err := s.c.k.Pins.List(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return s.send("problem", "", map[string]string{"message": "reading the MCP pins: " + err.Error()})
	}
	n := 0
	for _, p := range pins {
		if p.Pending != nil {
			n++
		}
	}
	s.pinsVer = ver
	return s.send("pins", "", map[string]any{"version": ver, "pending": n})
}
