package postgres

import (
	"context"
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
