package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

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
	// The connection hands the notifications it reads to the config's
	// handler, on the goroutine reading (this one): heard queues them.
	var heard []*pgconn.Notification
	cfg := d.cfg.Copy()
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) { heard = append(heard, n) }
	for ctx.Err() == nil {
		heard = heard[:0]
		conn, err := connect(ctx, cfg)
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
		d.heard.Add(1)
		d.listening.Add(1)
		fn(store.Change{Kind: store.ChangeResync})
		for {
			if len(heard) == 0 {
				if err := conn.WaitForNotification(ctx); err != nil {
					break
				}
				continue
			}
			n := heard[0]
			heard = heard[1:]
			d.heard.Add(1)
			kind, id, _ := strings.Cut(n.Payload, ":")
			fn(store.Change{Kind: kind, ID: id})
		}
		d.listening.Add(-1)
		conn.Close(context.Background())
	}
}

// errNotListening: OthersVersion without a Watch listening.
var errNotListening = errors.New("postgres: no watch is listening")

// OthersVersion returns a number that changes whenever a Watch of this DB
// hears a notification (of any kind, from any instance, this one's
// included) or starts listening again, and an error when none is
// listening now (then nothing tells the changes of others). A caller that
// remembers it can tell, without a query, that no instance announced a
// change since (as the SQLite store's OthersVersion tells that no one else
// committed): the daemon's check for rule changes before each call; the
// changes it looks for are announced (see kernel's controlChanged).
func (d *DB) OthersVersion(ctx context.Context) (int64, error) {
	if err := d.check(ctx); err != nil {
		return 0, d.wrap(ctx, "others version", err)
	}
	if d.listening.Load() == 0 {
		return 0, errNotListening
	}
	return d.heard.Load(), nil
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

// Publish implements store.Publisher with NOTIFY: the payloads in one
// statement, so one transaction and one round trip for all of them (a
// transaction that only notifies writes no WAL of its own, so its commit
// does not wait for the disk either way). As with any NOTIFY, identical
// payloads sent together are delivered once.
func (d *DB) Publish(ctx context.Context, kind string, payloads ...string) error {
	for _, p := range payloads {
		if len(p) > store.MaxPublish {
			return fmt.Errorf("postgres: publish: a payload of %d bytes is over %d", len(p), store.MaxPublish)
		}
	}
	if len(payloads) == 0 {
		return d.check(ctx)
	}
	msgs := make([]string, len(payloads))
	for i, p := range payloads {
		msgs[i] = kind + ":" + p
	}
	return d.readOne(ctx, "publish", func(q querier) error {
		_, err := q.Exec(ctx, publishSQL, Channel, msgs)
		return err
	})
}

// publishSQL sends $2's messages on channel $1, in order.
const publishSQL = `SELECT pg_notify($1, m) FROM unnest($2::text[]) AS m`
