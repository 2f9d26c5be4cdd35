package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store"
)

// MaxBatch is the most entries one durable commit carries.
const MaxBatch = 512

// Log appends to the audit chain of a store. It is safe for concurrent use.
// Several Logs (in one or several processes) may append to the same store:
// each batch is sealed against the true tail inside the store's write
// transaction.
type Log struct {
	st  store.AuditStore
	clk clock.Clock

	mu     sync.RWMutex // guards closed and sends on queue
	closed bool
	queue  chan *request
	done   chan struct{} // closed when the writer has exited
}

type request struct {
	ctx   context.Context
	rec   store.AuditRecord
	reply chan result // buffered: the writer never blocks on it
}

type result struct {
	rec store.AuditRecord
	err error
}

// New returns a Log writing to st, stamping records with clk's time. It
// starts the Log's writer goroutine; Close stops it.
func New(st store.AuditStore, clk clock.Clock) *Log {
	l := &Log{
		st:    st,
		clk:   clk,
		queue: make(chan *request, MaxBatch),
		done:  make(chan struct{}),
	}
	go l.run()
	return l
}

// Append records e and returns the record as committed, with its sequence
// number, time and hashes. It returns only after the record is durably in
// the store, or with an error: callers must then treat the action the
// record describes as not allowed. If ctx ends first Append returns ctx's
// error, and the record may or may not have been written.
func (l *Log) Append(ctx context.Context, e Entry) (store.AuditRecord, error) {
	rec, err := l.prepare(e)
	if err != nil {
		return store.AuditRecord{}, err
	}
	req := &request{ctx: ctx, rec: rec, reply: make(chan result, 1)}

	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return store.AuditRecord{}, ErrClosed
	}
	select {
	case l.queue <- req:
		l.mu.RUnlock()
	case <-ctx.Done():
		l.mu.RUnlock()
		return store.AuditRecord{}, fmt.Errorf("audit: append: %w", ctx.Err())
	}

	select {
	case res := <-req.reply:
		return res.rec, res.err
	case <-ctx.Done():
		return store.AuditRecord{}, fmt.Errorf("audit: append: %w", ctx.Err())
	}
}

// AppendAll records entries in order and returns their records. The
// entries are queued together so that they usually share one durable
// commit: a caller recording an action and its verdict waits for one fsync,
// not two. It returns only after every record is durable, or with the first
// error (then treat the action as not allowed).
func (l *Log) AppendAll(ctx context.Context, entries ...Entry) ([]store.AuditRecord, error) {
	reqs := make([]*request, 0, len(entries))
	for _, e := range entries {
		rec, err := l.prepare(e)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, &request{ctx: ctx, rec: rec, reply: make(chan result, 1)})
	}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, ErrClosed
	}
	for _, req := range reqs {
		select {
		case l.queue <- req:
		case <-ctx.Done():
			l.mu.RUnlock()
			return nil, fmt.Errorf("audit: append: %w", ctx.Err())
		}
	}
	l.mu.RUnlock()
	out := make([]store.AuditRecord, 0, len(reqs))
	for _, req := range reqs {
		select {
		case res := <-req.reply:
			if res.err != nil {
				return nil, res.err
			}
			out = append(out, res.rec)
		case <-ctx.Done():
			return nil, fmt.Errorf("audit: append: %w", ctx.Err())
		}
	}
	return out, nil
}

// prepare validates e and encodes its data; this work runs on the caller's
// goroutine, in parallel with other appenders.
func (l *Log) prepare(e Entry) (store.AuditRecord, error) {
	if e.Type == "" {
		return store.AuditRecord{}, fmt.Errorf("%w: empty type", ErrInvalid)
	}
	data, err := json.Marshal(e.Data)
	if err != nil {
		return store.AuditRecord{}, fmt.Errorf("%w: data: %v", ErrInvalid, err)
	}
	return store.AuditRecord{
		Type:     validUTF8(e.Type),
		ActionID: validUTF8(e.ActionID),
		Agent:    validUTF8(e.Agent),
		Session:  validUTF8(e.Session),
		Tool:     validUTF8(e.Tool),
		Data:     data,
	}, nil
}

// validUTF8 keeps every stored string valid UTF-8, so that an exported
// record (JSON) hashes as the stored one does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// Close stops accepting entries, waits until every entry already accepted is
// committed (or has failed) and stops the writer goroutine. Append after
// Close returns ErrClosed. Closing twice is not an error.
// The store is not closed: it belongs to the caller.
func (l *Log) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.queue)
	}
	l.mu.Unlock()
	<-l.done
	return nil
}

// run is the writer goroutine: it takes the first waiting request, adds
// whatever else is already waiting (up to MaxBatch) and commits them
// together. It exits when the queue is closed and drained.
func (l *Log) run() {
	defer close(l.done)
	batch := make([]*request, 0, MaxBatch)
	for req := range l.queue {
		batch = append(batch[:0], req)
	fill:
		for len(batch) < MaxBatch {
			select {
			case r, ok := <-l.queue:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		l.commit(batch)
	}
}

// commit writes one batch and answers every request in it. Requests whose
// caller has already gone (context ended) are left out.
func (l *Log) commit(batch []*request) {
	live := batch[:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.reply <- result{err: fmt.Errorf("audit: append: %w", err)}
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	recs := make([]store.AuditRecord, len(live))
	for i, r := range live {
		recs[i] = r.rec
	}
	// The batch is not bound to one caller's context: it is written for all
	// of them, and Close waits for it.
	err := l.st.AppendAudit(context.Background(), recs, l.seal)
	for i, r := range live {
		if err != nil {
			r.reply <- result{err: fmt.Errorf("audit: append: %w", err)}
		} else {
			r.reply <- result{rec: recs[i]}
		}
	}
}

// seal numbers, stamps and hashes a batch after the chain's tail.
func (l *Log) seal(tailSeq int64, tailHash string, recs []store.AuditRecord) error {
	prev := tailHash
	if tailSeq == 0 {
		if tailHash != "" {
			return fmt.Errorf("audit: empty chain with tail hash %q", tailHash)
		}
		prev = Genesis
	}
	now := l.clk.Now().Round(0).UTC() // no monotonic reading: the time as stored
	for i := range recs {
		r := &recs[i]
		r.Seq = tailSeq + int64(i) + 1
		r.Time = now
		r.PrevHash = prev
		r.Hash = Hash(prev, *r)
		prev = r.Hash
	}
	return nil
}
