// Package memsqlite is the long-term Memory plugin of Overseer's own agent
// loop: remembered items live in one SQLite file (modernc.org/sqlite, no cgo)
// and are found again by full-text search that works for Chinese as well as
// for space-separated languages. It registers as "memory.sqlite" with the
// configuration {"path": "<file>"}.
//
// Items are kept in a memories table; an FTS5 index with the trigram
// tokenizer covers their content and tags and is kept in step by triggers.
// The trigram tokenizer matches any run of three or more characters, so it
// needs no word segmentation: "运行测试" finds "用户偏好使用 pytest 运行测试".
// Shorter terms, which a trigram index cannot match, are looked for as
// substrings instead (see Search).
//
// The file may be shared by several processes (one task run and a later
// one, for example). Writes run in BEGIN IMMEDIATE transactions on a
// single-connection pool, so they are serialised within a process by the pool
// and across processes by SQLite's write lock, waiting up to BusyTimeout.
// The schema is versioned; Open applies missing migrations and refuses a file
// written by a newer program (ErrSchemaTooNew).
package memsqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
	"github.com/overseer-dev/overseer/plugin"
)

// ID is the plugin's registry ID.
const ID = "memory.sqlite"

func init() {
	plugin.Register(plugin.Info{ID: ID, New: func(raw json.RawMessage) (any, error) {
		cfg, err := ParseConfig(raw)
		if err != nil {
			return nil, err
		}
		return Open(cfg.Path)
	}})
}

// Limits on what Save accepts.
const (
	// MaxContent is the largest content Save accepts, in bytes.
	MaxContent = 64 << 10
	// MaxField is the largest category, key, source or tag, in bytes.
	MaxField = 256
	// MaxTags is the most tags one item may have.
	MaxTags = 32
	// DefaultCategory is the category of an item saved without one.
	DefaultCategory = "fact"
	// DefaultLimit is the number of items Search returns when asked for
	// limit <= 0.
	DefaultLimit = 5
	// MaxLimit caps the limit of Search.
	MaxLimit = 100
)

// BusyTimeout is how long a write waits for another connection or process
// holding the file's write lock before it fails.
const BusyTimeout = sqlite.BusyTimeout

// Errors callers may branch on (all are wrapped with more detail).
var (
	// ErrConfig wraps every configuration error.
	ErrConfig = errors.New("memsqlite: bad configuration")
	// ErrInvalid wraps every rejection of an item by Save.
	ErrInvalid = errors.New("memsqlite: invalid item")
	// ErrTooLarge is returned (wrapping ErrInvalid) for content over
	// MaxContent bytes.
	ErrTooLarge = fmt.Errorf("%w: content larger than %d bytes", ErrInvalid, MaxContent)
	// ErrNotFound is returned by Delete for an ID that is not stored.
	ErrNotFound = errors.New("memsqlite: no such item")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("memsqlite: closed")
	// ErrSchemaTooNew is returned (wrapped) by Open for a file whose schema
	// was written by a newer version of the program. It is the store's
	// sentinel, as the store's migration runner keeps the schema of both.
	ErrSchemaTooNew = sqlite.ErrSchemaTooNew
)

// Config configures the plugin.
type Config struct {
	// Path is the SQLite file; it is created, with its parent directories,
	// when missing. Required.
	Path string `json:"path"`
}

// ParseConfig decodes raw strictly (unknown fields and trailing data are
// errors) and validates it.
func ParseConfig(raw json.RawMessage) (Config, error) {
	var c Config
	if err := plugin.DecodeConfig(raw, &c); err != nil {
		return c, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if strings.TrimSpace(c.Path) == "" {
		return c, fmt.Errorf("%w: path is required", ErrConfig)
	}
	return c, nil
}

// Memory is a plugin.Memory on one SQLite file. It is safe for concurrent
// use, and several Memories (in one or several processes) may share a file.
type Memory struct {
	path   string
	w      *sql.DB // exactly one connection; every transaction is BEGIN IMMEDIATE
	r      *sql.DB // readers; query_only
	clock  clock.Clock
	closed atomic.Bool
}

var _ plugin.Memory = (*Memory)(nil)

// Open opens (creating if needed) the memory file at path and brings its
// schema up to date. Parent directories are created with mode 0700 and a new
// file with mode 0600.
func Open(path string) (*Memory, error) {
	return OpenContext(context.Background(), path)
}

// OpenContext is Open with a context bounding the wait for the file's write
// lock while migrations run.
func OpenContext(ctx context.Context, path string) (*Memory, error) {
	if strings.TrimSpace(path) == "" {
		return nil, fmt.Errorf("%w: empty path", ErrConfig)
	}
	p, err := sqlite.OpenPools(ctx, path, sqlite.PoolOptions{
		// A memory lost to a power cut is not worth a sync per save.
		SyncNormal: true,
		MinReaders: 2,
		Migrations: migrations,
	})
	if err != nil {
		return nil, fmt.Errorf("memsqlite: %w", err)
	}
	return &Memory{path: p.Path, w: p.Write, r: p.Read, clock: clock.Real{}}, nil
}

// Path returns the memory file's absolute path.
func (m *Memory) Path() string { return m.path }

// Close closes the file. Further calls of any method return ErrClosed.
// Closing twice is not an error.
func (m *Memory) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	return errors.Join(m.w.Close(), m.r.Close())
}

// check reports whether an operation may start.
func (m *Memory) check(ctx context.Context) error {
	if m.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// wrap adds context to err and turns errors caused by a concurrent Close
// into ErrClosed.
func (m *Memory) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if m.closed.Load() && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("memsqlite: %s: %w (%v)", op, ErrClosed, err)
	}
	return fmt.Errorf("memsqlite: %s: %w", op, err)
}

// timeFormat is fixed-width, so that stored times sort as text.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

func fmtTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTime(s string) time.Time {
	t, err := time.Parse(timeFormat, s)
	if err != nil {
		// Written by this package only; a foreign value reads as unknown.
		return time.Time{}
	}
	return t
}

// normalized is a validated item ready to be stored.
type normalized struct {
	category, content, tags, source string
	key                             sql.NullString
	created                         string
}

// normalize validates it and fills the defaults.
func (m *Memory) normalize(it plugin.MemoryItem) (normalized, error) {
	var n normalized
	if len(it.Content) > MaxContent {
		return n, fmt.Errorf("%w (got %d bytes); save a summary instead", ErrTooLarge, len(it.Content))
	}
	n.content = strings.ToValidUTF8(it.Content, "\uFFFD")
	if strings.TrimSpace(n.content) == "" {
		return n, fmt.Errorf("%w: empty content", ErrInvalid)
	}
	var err error
	if n.category, err = field("category", it.Category); err != nil {
		return n, err
	}
	if n.category == "" {
		n.category = DefaultCategory
	}
	if n.source, err = field("source", it.Source); err != nil {
		return n, err
	}
	key, err := field("key", it.Key)
	if err != nil {
		return n, err
	}
	n.key = sql.NullString{String: key, Valid: key != ""}

	tags := make([]string, 0, len(it.Tags))
	seen := map[string]bool{}
	for _, t := range it.Tags {
		t, err := field("tag", t)
		if err != nil {
			return n, err
		}
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		tags = append(tags, t)
	}
	if len(tags) > MaxTags {
		return n, fmt.Errorf("%w: %d tags (at most %d)", ErrInvalid, len(tags), MaxTags)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep the text searchable as written
	if err := enc.Encode(tags); err != nil {
		return n, fmt.Errorf("%w: tags: %v", ErrInvalid, err)
	}
	n.tags = strings.TrimSpace(buf.String())

	created := it.CreatedAt
	if created.IsZero() {
		created = m.clock.Now()
	}
	n.created = fmtTime(created)
	return n, nil
}

// field trims a short text field and checks its size and characters.
func field(name, s string) (string, error) {
	s = strings.TrimSpace(s)
	if len(s) > MaxField {
		return "", fmt.Errorf("%w: %s longer than %d bytes", ErrInvalid, name, MaxField)
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, name)
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return "", fmt.Errorf("%w: %s contains control characters", ErrInvalid, name)
	}
	return s, nil
}

// Save stores it and returns its ID. Content is required and at most
// MaxContent bytes (invalid UTF-8 in it is replaced); the category defaults
// to DefaultCategory; empty and repeated tags are dropped. When it.Key is
// not empty and an item with that key exists, that item is replaced in place
// (category, content, tags, source and time) and keeps its ID. CreatedAt
// defaults to now.
func (m *Memory) Save(ctx context.Context, it plugin.MemoryItem) (int64, error) {
	n, err := m.normalize(it)
	if err != nil {
		return 0, err
	}
	if err := m.check(ctx); err != nil {
		return 0, m.wrap("save", err)
	}
	tx, err := m.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, m.wrap("save", err)
	}
	var id int64
	err = tx.QueryRowContext(ctx, `INSERT INTO memories (category, content, tags, key, source, created_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET
			category = excluded.category, content = excluded.content, tags = excluded.tags,
			source = excluded.source, created_at = excluded.created_at
		RETURNING id`,
		n.category, n.content, n.tags, n.key, n.source, n.created).Scan(&id)
	if err != nil {
		_ = tx.Rollback()
		return 0, m.wrap("save", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, m.wrap("save", err)
	}
	return id, nil
}

// Delete removes the item with the given ID; ErrNotFound when there is none.
func (m *Memory) Delete(ctx context.Context, id int64) error {
	if err := m.check(ctx); err != nil {
		return m.wrap("delete", err)
	}
	tx, err := m.w.BeginTx(ctx, nil)
	if err != nil {
		return m.wrap("delete", err)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM memories WHERE id = ?`, id)
	if err != nil {
		_ = tx.Rollback()
		return m.wrap("delete", err)
	}
	if k, err := res.RowsAffected(); err != nil || k == 0 {
		_ = tx.Rollback()
		if err == nil {
			err = fmt.Errorf("%w: %d", ErrNotFound, id)
		}
		return m.wrap("delete", err)
	}
	if err := tx.Commit(); err != nil {
		return m.wrap("delete", err)
	}
	return nil
}

// List returns the items of category (every category when empty), newest
// first, at most limit of them (all when limit <= 0).
func (m *Memory) List(ctx context.Context, category string, limit int) ([]plugin.MemoryItem, error) {
	if err := m.check(ctx); err != nil {
		return nil, m.wrap("list", err)
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	q := `SELECT ` + itemColumns + `, 0 FROM memories m`
	args := []any{}
	if c := strings.TrimSpace(category); c != "" {
		q += ` WHERE category = ?`
		args = append(args, c)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	items, err := m.query(ctx, q, args...)
	if err != nil {
		return nil, m.wrap("list", err)
	}
	return items, nil
}

// itemColumns are the columns scanItems reads, before the score.
const itemColumns = `m.id, m.category, m.content, m.tags, m.key, m.source, m.created_at`

// query runs q on the read pool and scans items with a trailing score
// column.
func (m *Memory) query(ctx context.Context, q string, args ...any) ([]plugin.MemoryItem, error) {
	rows, err := m.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var items []plugin.MemoryItem
	for rows.Next() {
		var (
			it            plugin.MemoryItem
			tags, created string
			key           sql.NullString
		)
		if err := rows.Scan(&it.ID, &it.Category, &it.Content, &tags, &key, &it.Source, &created, &it.Score); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(tags), &it.Tags); err != nil {
			return nil, fmt.Errorf("item %d: tags: %w", it.ID, err)
		}
		if len(it.Tags) == 0 {
			it.Tags = nil
		}
		it.Key = key.String
		it.CreatedAt = parseTime(created)
		items = append(items, it)
	}
	return items, rows.Err()
}
