package postgres

import (
	"context"
	"time"

	"github.com/overseer-dev/overseer/internal/store"
)

// LeadCheck is how often a leader shows it still holds its lock, and how
// often a process waiting for a lead tries to take it.
var LeadCheck = time.Second

// Lead implements store.Locker with a session-level advisory lock held on
// a connection of its own: the server releases it when that connection
// ends, whether the process stopped, died (kill -9 closes its sockets) or
// lost the network. The leader asks the server every LeadCheck whether its
// connection still holds the lock; when it cannot tell (the connection or
// the server is gone), it gives the lead up at once, so that two leaders
// overlap at most for about LeadCheck. The lock's key is the hash of the
// connection's schema and name: stores in other schemas lead apart.
func (d *DB) Lead(ctx context.Context, name string) (<-chan struct{}, error) {
	for {
		conn, err := connect(ctx, d.cfg)
		if err == nil {
			var got bool
			err = conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext(current_schema() || '/' || $2))`, leadClass, name).Scan(&got)
			if err == nil && got {
				d.leadMu.Lock()
				if d.closed.Load() {
					d.leadMu.Unlock()
					conn.Close(context.Background())
					return nil, store.ErrClosed
				}
				d.leads.Add(1)
				d.leadMu.Unlock()
				lost := make(chan struct{})
				go d.hold(ctx, conn, name, lost)
				return lost, nil
			}
			conn.Close(context.Background())
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-d.ctx.Done():
			return nil, d.ctx.Err()
		case <-time.After(LeadCheck):
		}
	}
}

// hold keeps the lead on conn until ctx ends, the store closes or the
// connection cannot show it holds the lock, then closes lost.
func (d *DB) hold(ctx context.Context, conn *conn, name string, lost chan struct{}) {
	defer d.leads.Done()
	defer close(lost)
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(cctx) // the server releases the lock with the connection
	}()
	t := time.NewTicker(LeadCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, LeadCheck)
		var held bool
		err := conn.QueryRow(cctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()
			AND classid = $1 AND objid = hashtext(current_schema() || '/' || $2)::oid AND objsubid = 2 AND granted)`, leadClass, name).Scan(&held)
		cancel()
		if err != nil || !held {
			return
		}
	}
}
