package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
	st     store.AuditStore
	clk    clock.Clock
	sealer *Sealer // nil: records are not sealed

	mu     sync.RWMutex // guards closed and sends on queue
	closed bool
	queue  chan *request
	synq   chan *synced  // committed batches waiting for their sync
	done   chan struct{} // closed when the writer and the syncer have exited

	syncErr  error         // a sync failed: every later batch fails (syncer only)
	inflight atomic.Int32  // committed batches not yet answered
	synced   chan struct{} // a sync returned (capacity 1)

	held  []*request   // lazy requests waiting for a batch to join (writer only)
	heldN atomic.Int32 // len(held), for tests
	// lazyWait is LazyWait (tests wait longer, before the first append).
	lazyWait time.Duration
}

// LazyWait is how long a lazy record (AppendLazy) may wait for a durable
// append to share its commit with.
const LazyWait = 100 * time.Millisecond

// gatherWait is how long the writer lets a batch gather while the last
// one's sync runs, before committing it beside that sync: batches stay as
// large as without the overlap when the disk is fast (each costs the
// writer a fixed share besides its records), and a slow disk does not
// hold the writer idle.
const gatherWait = time.Millisecond

// synced is a committed batch whose callers are answered once it is on
// disk (see store.AuditBatch.DeferSync).
type synced struct {
	live []*request
	sync func() error
}

type request struct {
	ctx   context.Context
	w     store.AuditWrite
	seal  bool        // close the epoch after this record
	lazy  bool        // may wait for the next durable batch (AppendLazy)
	reply chan result // buffered: the writer never blocks on it
}

type result struct {
	rec store.AuditRecord
	err error
}

// New returns a Log writing to st, stamping records with clk's time. It
// starts the Log's writer goroutine; Close stops it.
func New(st store.AuditStore, clk clock.Clock) *Log {
	return NewSealed(st, clk, nil)
}

// NewSealed is New with records sealed by s (see Sealer); a nil s appends
// unsealed records, and refuses to append to a sealed log.
func NewSealed(st store.AuditStore, clk clock.Clock, s *Sealer) *Log {
	l := &Log{
		st:     st,
		clk:    clk,
		sealer: s,
		queue:  make(chan *request, MaxBatch),
		synq:   make(chan *synced, 64),
		done:   make(chan struct{}),
		synced: make(chan struct{}, 1),

		lazyWait: LazyWait,
	}
	go l.run()
	go l.syncer()
	return l
}

// Sealer returns the log's sealer (nil when it does not seal).
func (l *Log) Sealer() *Sealer { return l.sealer }

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
	req := &request{ctx: ctx, w: store.AuditWrite{Rec: rec, Effect: e.Effect}, seal: e.Seal, reply: make(chan result, 1)}

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
	return l.appendAll(ctx, false, entries)
}

// AppendLazy is AppendAll for records nothing waits for: what an action
// returned, recorded after the answer went back. The records wait, for
// up to LazyWait, for the next durable append (Append, AppendAll) and are
// committed and synced in its batch, so that they cost no commit and no
// sync of their own; with none in that time they are written alone. Like
// AppendAll it returns once they are durable, or with an error. Records
// that must be on disk before anything proceeds are never lazy: a lazy
// record waits in memory, and the process's end (not Close) loses it.
func (l *Log) AppendLazy(ctx context.Context, entries ...Entry) ([]store.AuditRecord, error) {
	return l.appendAll(ctx, true, entries)
}

func (l *Log) appendAll(ctx context.Context, lazy bool, entries []Entry) ([]store.AuditRecord, error) {
	reqs := make([]*request, 0, len(entries))
	for _, e := range entries {
		rec, err := l.prepare(e)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, &request{ctx: ctx, w: store.AuditWrite{Rec: rec, Effect: e.Effect}, seal: e.Seal, lazy: lazy,
			reply: make(chan result, 1)})
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
	var data []byte
	if enc, ok := e.Data.(Encoded); ok && len(enc) > 0 {
		data = enc
	} else {
		var err error
		if data, err = json.Marshal(e.Data); err != nil {
			return store.AuditRecord{}, fmt.Errorf("%w: data: %v", ErrInvalid, err)
		}
	}
	if e.Type == TypeSeal || e.Type == TypeSealStart {
		return store.AuditRecord{}, fmt.Errorf("%w: type %q is the log's own", ErrInvalid, e.Type)
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
// together. It exits when the queue is closed and drained; a sealing log
// then closes the epoch it wrote in. While idle, a sealing log closes an
// epoch that has been open for the interval.
func (l *Log) run() {
	defer close(l.synq)
	var tick <-chan time.Time
	if l.sealer != nil {
		t := time.NewTicker(min(l.sealer.interval/4, time.Second))
		defer t.Stop()
		tick = t.C
	}
	// lazy runs while lazy requests are held (see AppendLazy).
	lazy := time.NewTimer(LazyWait)
	lazy.Stop()
	defer lazy.Stop()
	lazyOn := false
	batch := make([]*request, 0, MaxBatch)
	for {
		if len(l.held) > 0 && !lazyOn {
			lazy.Reset(l.lazyWait)
			lazyOn = true
		}
		var req *request
		select {
		case r, ok := <-l.queue:
			if !ok {
				l.flushHeld()
				if l.sealer != nil && l.sealer.wrote() {
					l.commit(nil, "stop")
				}
				return
			}
			req = r
		case <-tick:
			if l.sealer.due(l.clk.Now()) {
				l.commit(nil, "interval")
			}
			continue
		case <-lazy.C:
			lazyOn = false
			l.flushHeld()
			continue
		}
		l.gather()
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
		if allLazy(batch) && len(l.held)+len(batch) <= MaxBatch {
			l.held = append(l.held, batch...)
			l.heldN.Store(int32(len(l.held)))
			continue
		}
		if len(l.held) > 0 {
			// The lazy requests ride with this batch (first: they came
			// first), as many as fit; the rest wait on.
			n := min(len(l.held), MaxBatch-len(batch))
			batch = append(append(make([]*request, 0, n+len(batch)), l.held[:n]...), batch...)
			l.held = append(l.held[:0], l.held[n:]...)
			l.heldN.Store(int32(len(l.held)))
		}
		l.commit(batch, "")
	}
}

// flushHeld commits the lazy requests held.
func (l *Log) flushHeld() {
	for len(l.held) > 0 {
		n := min(len(l.held), MaxBatch)
		batch := append([]*request(nil), l.held[:n]...)
		l.held = append(l.held[:0], l.held[n:]...)
		l.heldN.Store(int32(len(l.held)))
		l.commit(batch, "")
	}
}

// gather waits, while a committed batch waits for its sync, until the
// sync returns or gatherWait has passed, so that more requests join the
// next batch.
func (l *Log) gather() {
	if l.inflight.Load() == 0 {
		return
	}
	t := time.NewTimer(gatherWait)
	defer t.Stop()
	for l.inflight.Load() > 0 {
		select {
		case <-l.synced:
		case <-t.C:
			return
		}
	}
}

// commit writes one batch and answers every request in it. Requests whose
// caller has already gone (context ended) are left out. reason, when set,
// closes the sealing epoch after the batch (see Sealer.sealBatch).
func (l *Log) commit(batch []*request, reason string) {
	live := batch[:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.reply <- result{err: fmt.Errorf("audit: append: %w", err)}
			continue
		}
		if r.seal {
			reason = "answer"
		}
		live = append(live, r)
	}
	if len(live) == 0 && reason == "" {
		return
	}
	// The store may commit without waiting for the disk (DeferSync): the
	// syncer then answers the callers once the batch is on disk, while
	// this goroutine commits the next batch.
	b := &store.AuditBatch{Writes: make([]*store.AuditWrite, len(live)), DeferSync: true}
	for i, r := range live {
		b.Writes[i] = &r.w
	}
	b.Seal = func(tail store.AuditTail, recs []*store.AuditRecord) ([]store.AuditRecord, error) {
		now := l.clk.Now().Round(0).UTC() // no monotonic reading: the time as stored
		if l.sealer != nil {
			return l.sealer.sealBatch(tail, recs, now, reason)
		}
		return nil, plainSeal(tail, recs, now)
	}
	// The batch is not bound to one caller's context: it is written for all
	// of them, and Close waits for it.
	err := l.st.AppendAuditBatch(context.Background(), b)
	if l.sealer != nil && err == nil && len(b.Extra) > 0 && b.Sync != nil {
		// The marker must be on disk before its key is erased: a key
		// evolved past a marker the disk lost would seal nothing again.
		err = b.Sync()
		b.Sync = nil
	}
	if l.sealer != nil {
		if err == nil && len(b.Extra) > 0 {
			// An epoch closed: evolve the key now, under the write lock, so
			// that the key that sealed it is gone before anyone is told.
			eb := &store.AuditBatch{Seal: func(tail store.AuditTail, _ []*store.AuditRecord) ([]store.AuditRecord, error) {
				return nil, l.sealer.evolve(tail)
			}}
			if eerr := l.st.AppendAuditBatch(context.Background(), eb); eerr != nil {
				l.sealer.abandon() // tried again by the next append (Sealer.sync)
			}
		} else {
			l.sealer.abandon()
		}
	}
	if err == nil && b.Sync != nil {
		l.inflight.Add(1)
		l.synq <- &synced{live: append([]*request(nil), live...), sync: b.Sync}
		return
	}
	answer(live, err)
}

// allLazy reports whether a batch holds only lazy requests.
func allLazy(batch []*request) bool {
	for _, r := range batch {
		if !r.lazy {
			return false
		}
	}
	return true
}

// answer tells the callers of a batch its outcome.
func answer(live []*request, err error) {
	for _, r := range live {
		switch {
		case err != nil:
			r.reply <- result{err: fmt.Errorf("audit: append: %w", err)}
		case r.w.Err != nil:
			r.reply <- result{err: fmt.Errorf("audit: append: %w", r.w.Err)}
		default:
			r.reply <- result{rec: r.w.Rec}
		}
	}
}

// syncer answers the callers of committed batches once they are on disk:
// one sync for every batch committed by then. After a failed sync nothing
// is answered as written any more (a later sync could succeed without the
// pages the failed one lost): the log fails closed until it is reopened.
func (l *Log) syncer() {
	defer close(l.done)
	var ready []*synced
	for s := range l.synq {
		ready = append(ready[:0], s)
	more:
		for {
			select {
			case s, ok := <-l.synq:
				if !ok {
					break more
				}
				ready = append(ready, s)
			default:
				break more
			}
		}
		if l.syncErr == nil {
			l.syncErr = ready[len(ready)-1].sync()
		}
		for _, s := range ready {
			answer(s.live, l.syncErr)
		}
		l.inflight.Add(-int32(len(ready)))
		select {
		case l.synced <- struct{}{}:
		default:
		}
	}
}

// plainSeal numbers, stamps and hashes a batch after the chain's tail,
// without sealing: it refuses a log whose tail is sealed.
func plainSeal(tail store.AuditTail, recs []*store.AuditRecord, now time.Time) error {
	if tail.Tag != "" {
		return fmt.Errorf("%w: the audit log is sealed and this process has no sealing key", ErrSeal)
	}
	prev := tail.Hash
	if tail.Seq == 0 {
		if tail.Hash != "" {
			return fmt.Errorf("audit: empty chain with tail hash %q", tail.Hash)
		}
		prev = Genesis
	}
	for i, r := range recs {
		r.Seq = tail.Seq + int64(i) + 1
		r.Time = now
		r.PrevHash = prev
		r.Hash = Hash(prev, *r)
		prev = r.Hash
	}
	return nil
}
