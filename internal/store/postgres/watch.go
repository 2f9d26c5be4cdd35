package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/overseer-dev/overseer/internal/store"
)

// Watch implements store.Watcher with LISTEN on a connection of its own.
// It reports a resync each time it starts listening: first, and after the
// connection dropped and it reconnected (waiting up to a second between
// tries), since changes committed meanwhile were not heard. It returns
// when ctx ends or the store is closed.
func (d *DB) Watch(ctx context.Context, fn func(store.Change)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-d.ctx.Done(): // the store was closed
			cancel()
		case <-ctx.Done():
		}
	}()
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, d.cfg)
		if err == nil {
			_, err = conn.Exec(ctx, `LISTEN `+Channel)
		}
		if err != nil {
			if conn != nil {
				conn.Close(context.Background())
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		fn(store.Change{Kind: store.ChangeResync})
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				break
			}
			kind, id, _ := strings.Cut(n.Payload, ":")
			fn(store.Change{Kind: kind, ID: id})
		}
		conn.Close(context.Background())
	}
}

// Size implements store.Sizer: the bytes Overseer's tables take in the
// database, with their indexes and out-of-line values (the schema the
// connection works in; other schemas and databases on the server are
// not counted).
func (d *DB) Size(ctx context.Context) (int64, error) {
	var n int64
	err := d.readOne(ctx, "size", func(q querier) error {
		return q.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
			FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
			WHERE ns.nspname = current_schema() AND c.relkind IN ('r', 'm', 'p')`).Scan(&n)
	})
	return n, err
}

// Publish implements store.Publisher with NOTIFY.
func (d *DB) Publish(ctx context.Context, kind, payload string) error {
	if len(payload) > store.MaxPublish {
		return fmt.Errorf("postgres: publish: a payload of %d bytes is over %d", len(payload), store.MaxPublish)
	}
	return d.readOne(ctx, "publish", func(q querier) error { return notify(ctx, q, kind, payload) })
}
