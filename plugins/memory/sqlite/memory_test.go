package memsqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/plugin"
)

// openTemp opens a memory file in a new temporary directory, closed when the
// test ends.
func openTemp(t testing.TB) *Memory {
	t.Helper()
	m, err := Open(filepath.Join(t.TempDir(), "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// configCases are configurations and the path ParseConfig must find in
// them ("" when it must refuse them).
var configCases = []struct {
	name, raw string
	want      string // the path, when valid
}{
	{"valid", `{"path": "mem.db"}`, "mem.db"},
	{"padded", " \n{\"path\": \"mem.db\"}\n", "mem.db"},
	{"empty", ``, ""},
	{"blank", " \n\t", ""},
	{"null", `null`, ""},
	{"empty object", `{}`, ""},
	{"blank path", `{"path": "  "}`, ""},
	{"unknown field", `{"path": "mem.db", "paht": "x"}`, ""},
	{"wrong type", `{"path": 3}`, ""},
	{"trailing data", `{"path": "mem.db"} {}`, ""},
	{"not json", `path=mem.db`, ""},
	{"array", `["mem.db"]`, ""},
}

func TestParseConfig(t *testing.T) {
	for _, tc := range configCases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig(json.RawMessage(tc.raw))
			if tc.want == "" {
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("ParseConfig(%s) = %+v, %v; want ErrConfig", tc.raw, c, err)
				}
				return
			}
			if err != nil || c.Path != tc.want {
				t.Fatalf("ParseConfig(%s) = %+v, %v", tc.raw, c, err)
			}
		})
	}
}

// FuzzParseConfig checks that ParseConfig either refuses a configuration
// with ErrConfig or returns one with a path, which re-encodes to itself.
func FuzzParseConfig(f *testing.F) {
	for _, tc := range configCases {
		f.Add(tc.raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := ParseConfig(json.RawMessage(raw))
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("ParseConfig(%q): %v, not ErrConfig", raw, err)
			}
			return
		}
		if strings.TrimSpace(c.Path) == "" {
			t.Fatalf("ParseConfig(%q) accepted a blank path", raw)
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if c2, err := ParseConfig(again); err != nil || c2 != c {
			t.Fatalf("ParseConfig(%s) = %+v, %v; want %+v", again, c2, err, c)
		}
	})
}

func TestRegistered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "memory.db")
	raw, _ := json.Marshal(Config{Path: path})
	v, err := plugin.New(ID, raw)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := v.(*Memory)
	if !ok {
		t.Fatalf("plugin.New made %T", v)
	}
	defer m.Close()
	if m.Path() != path {
		t.Errorf("Path() = %s, want %s", m.Path(), path)
	}
	if _, err := plugin.New(ID, json.RawMessage(`{"path": "x", "extra": 1}`)); !errors.Is(err, ErrConfig) {
		t.Errorf("plugin.New with an unknown field: %v, want ErrConfig", err)
	}
}

func TestOpenModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "dir")
	m, err := Open(filepath.Join(dir, "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, c := range []struct {
		name string
		path string
		mode os.FileMode
	}{
		{"directory", dir, 0o700},
		{"file", m.Path(), 0o600},
	} {
		t.Run(c.name, func(t *testing.T) {
			fi, err := os.Stat(c.path)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != c.mode {
				t.Errorf("mode %v, want %v", got, c.mode)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	t.Run("empty path", func(t *testing.T) {
		if _, err := Open(""); !errors.Is(err, ErrConfig) {
			t.Errorf("Open(\"\") = %v, want ErrConfig", err)
		}
	})
	t.Run("parent is a file", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if m, err := Open(filepath.Join(f, "memory.db")); err == nil {
			m.Close()
			t.Error("Open under a file succeeded")
		}
	})
	t.Run("not a database", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "junk.db")
		if err := os.WriteFile(f, []byte(strings.Repeat("not sqlite ", 100)), 0o600); err != nil {
			t.Fatal(err)
		}
		if m, err := Open(f); err == nil {
			m.Close()
			t.Error("Open of a junk file succeeded")
		}
	})
	t.Run("schema too new", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "memory.db")
		m, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.w.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', '')`); err != nil {
			t.Fatal(err)
		}
		m.Close()
		m, err = Open(path)
		if err == nil {
			m.Close()
		}
		if !errors.Is(err, ErrSchemaTooNew) {
			t.Fatalf("Open = %v, want ErrSchemaTooNew", err)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "memsqlite: ") || !strings.Contains(msg, "upgrade") {
			t.Errorf("error %q does not say whose file it is and what to do", msg)
		}
	})
}

func TestSchema(t *testing.T) {
	m := openTemp(t)
	var v int
	if err := m.r.QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != SchemaVersion() {
		t.Errorf("schema version %d, want %d", v, SchemaVersion())
	}
	var mode string
	if err := m.w.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
}

func TestSaveValidation(t *testing.T) {
	m := openTemp(t)
	tags := make([]string, MaxTags+1)
	for i := range tags {
		tags[i] = strconv.Itoa(i)
	}
	tests := []struct {
		name    string
		it      plugin.MemoryItem
		wantErr error
	}{
		{"empty content", plugin.MemoryItem{}, ErrInvalid},
		{"blank content", plugin.MemoryItem{Content: " \n\t"}, ErrInvalid},
		{"content too large", plugin.MemoryItem{Content: strings.Repeat("x", MaxContent+1)}, ErrTooLarge},
		{"content at the cap", plugin.MemoryItem{Content: strings.Repeat("测", MaxContent/3)}, nil},
		{"long category", plugin.MemoryItem{Content: "x", Category: strings.Repeat("c", MaxField+1)}, ErrInvalid},
		{"control in key", plugin.MemoryItem{Content: "x", Key: "a\nb"}, ErrInvalid},
		{"invalid utf8 source", plugin.MemoryItem{Content: "x", Source: "a\xffb"}, ErrInvalid},
		{"long tag", plugin.MemoryItem{Content: "x", Tags: []string{strings.Repeat("t", MaxField+1)}}, ErrInvalid},
		{"too many tags", plugin.MemoryItem{Content: "x", Tags: tags}, ErrInvalid},
		{"minimal", plugin.MemoryItem{Content: "x"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := m.Save(context.Background(), tc.it)
			if tc.wantErr == nil {
				if err != nil || id <= 0 {
					t.Fatalf("Save = %d, %v", id, err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Save = %d, %v; want %v", id, err, tc.wantErr)
			}
		})
	}
	if items, err := m.List(context.Background(), "", 0); err != nil || len(items) != 2 {
		t.Errorf("List after the rejections: %d items, %v; want the 2 valid ones", len(items), err)
	}
}

func TestSaveNormalizes(t *testing.T) {
	m := openTemp(t)
	clk := clock.NewFake(time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC))
	m.clock = clk
	ctx := context.Background()
	given := time.Date(2024, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	tests := []struct {
		name string
		in   plugin.MemoryItem
		want plugin.MemoryItem
	}{
		{"defaults",
			plugin.MemoryItem{Content: "  keep my spaces  "},
			plugin.MemoryItem{Category: DefaultCategory, Content: "  keep my spaces  ", CreatedAt: clk.Now()}},
		{"trimmed fields, unique tags",
			plugin.MemoryItem{Category: " preference ", Content: "c", Key: " k ", Source: " task-1 ", Tags: []string{" a ", "", "a", "<b>&"}},
			plugin.MemoryItem{Category: "preference", Content: "c", Key: "k", Source: "task-1", Tags: []string{"a", "<b>&"}, CreatedAt: clk.Now()}},
		{"given time",
			plugin.MemoryItem{Content: "d", CreatedAt: given},
			plugin.MemoryItem{Category: DefaultCategory, Content: "d", CreatedAt: given.UTC()}},
		{"invalid utf8 content replaced",
			plugin.MemoryItem{Content: "a\xffb"},
			plugin.MemoryItem{Category: DefaultCategory, Content: "a\uFFFDb", CreatedAt: clk.Now()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := m.Save(ctx, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got := getItem(t, m, id)
			tc.want.ID = id
			if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", tc.want); g != w {
				t.Errorf("stored\n %s\nwant\n %s", g, w)
			}
		})
	}
}

// getItem reads the item id through List.
func getItem(t *testing.T, m *Memory, id int64) plugin.MemoryItem {
	t.Helper()
	items, err := m.List(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.ID == id {
			return it
		}
	}
	t.Fatalf("item %d not listed", id)
	return plugin.MemoryItem{}
}

func TestSaveUpsertByKey(t *testing.T) {
	m := openTemp(t)
	clk := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	m.clock = clk
	ctx := context.Background()
	first, err := m.Save(ctx, plugin.MemoryItem{Key: "test-runner", Category: "preference", Content: "用户偏好使用 unittest", Tags: []string{"old"}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := m.Save(ctx, plugin.MemoryItem{Content: "unrelated, no key"})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	second, err := m.Save(ctx, plugin.MemoryItem{Key: "test-runner", Category: "preference", Content: "用户偏好使用 pytest 运行测试", Tags: []string{"new"}, Source: "task-2"})
	if err != nil {
		t.Fatal(err)
	}
	if second != first {
		t.Errorf("upsert returned ID %d, want the same %d", second, first)
	}
	if other == first {
		t.Fatal("items without key share an ID")
	}
	got := getItem(t, m, first)
	if got.Content != "用户偏好使用 pytest 运行测试" || got.Tags[0] != "new" || got.Source != "task-2" || !got.CreatedAt.Equal(clk.Now()) {
		t.Errorf("after upsert: %+v", got)
	}
	for _, tc := range []struct {
		name, query string
		ids         []int64
	}{
		{"old text gone from the index", "unittest", nil},
		{"old tag gone", "old", nil},
		{"new text indexed", "pytest", []int64{first}},
		{"new tag indexed", "new", []int64{first}},
		{"no-key items are not merged", "unrelated", []int64{other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, err := m.Search(ctx, tc.query, 10)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, it := range items {
				ids = append(ids, it.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tc.ids) {
				t.Errorf("Search(%q) = %v, want %v", tc.query, ids, tc.ids)
			}
		})
	}
	// Items without a key never replace each other.
	for range 2 {
		if _, err := m.Save(ctx, plugin.MemoryItem{Content: "same"}); err != nil {
			t.Fatal(err)
		}
	}
	if items, _ := m.List(ctx, "", 0); len(items) != 4 {
		t.Errorf("%d items, want 4", len(items))
	}
}

func TestListAndDelete(t *testing.T) {
	m := openTemp(t)
	clk := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	m.clock = clk
	ctx := context.Background()
	ids := map[string]int64{}
	for _, it := range []struct{ name, cat string }{
		{"f1", "fact"}, {"p1", "preference"}, {"f2", ""}, {"l1", "lesson"}, {"f3", "fact"},
	} {
		clk.Advance(time.Second)
		id, err := m.Save(ctx, plugin.MemoryItem{Category: it.cat, Content: "content of " + it.name})
		if err != nil {
			t.Fatal(err)
		}
		ids[it.name] = id
	}
	names := func(items []plugin.MemoryItem) string {
		var s []string
		for _, it := range items {
			s = append(s, strings.TrimPrefix(it.Content, "content of "))
		}
		return strings.Join(s, ",")
	}
	tests := []struct {
		name     string
		category string
		limit    int
		want     string
	}{
		{"all newest first", "", 0, "f3,l1,f2,p1,f1"},
		{"limit", "", 2, "f3,l1"},
		{"category", "fact", 0, "f3,f2,f1"},
		{"category trimmed", " fact ", 1, "f3"},
		{"empty category", "nothing", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			items, err := m.List(ctx, tc.category, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(items); got != tc.want {
				t.Errorf("List(%q, %d) = %s, want %s", tc.category, tc.limit, got, tc.want)
			}
		})
	}
	t.Run("delete", func(t *testing.T) {
		if err := m.Delete(ctx, ids["f2"]); err != nil {
			t.Fatal(err)
		}
		if items, _ := m.List(ctx, "", 0); names(items) != "f3,l1,p1,f1" {
			t.Errorf("after delete: %s", names(items))
		}
		if items, _ := m.Search(ctx, "content of f2", 10); strings.Contains(names(items), "f2") {
			t.Errorf("deleted item still found: %s", names(items))
		}
	})
	t.Run("delete missing", func(t *testing.T) {
		for _, id := range []int64{ids["f2"], 0, -1, 1 << 40} {
			if err := m.Delete(ctx, id); !errors.Is(err, ErrNotFound) {
				t.Errorf("Delete(%d) = %v, want ErrNotFound", id, err)
			}
		}
	})
}

func TestPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.db")
	ctx := context.Background()
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	id, err := m.Save(ctx, plugin.MemoryItem{Content: "用户偏好使用 pytest 运行测试", Key: "runner", Tags: []string{"测试"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, q := range []string{"pytest", "运行测试", "偏好", "测试"} {
		t.Run(q, func(t *testing.T) {
			items, err := m.Search(ctx, q, 0)
			if err != nil || len(items) != 1 || items[0].ID != id || items[0].Key != "runner" {
				t.Errorf("Search(%q) after reopening = %+v, %v", q, items, err)
			}
		})
	}
	again, err := m.Save(ctx, plugin.MemoryItem{Content: "replaced", Key: "runner"})
	if err != nil || again != id {
		t.Errorf("upsert after reopening = %d, %v; want %d", again, err, id)
	}
}

func TestClosed(t *testing.T) {
	m := openTemp(t)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	ctx := context.Background()
	_, saveErr := m.Save(ctx, plugin.MemoryItem{Content: "x"})
	_, searchErr := m.Search(ctx, "x", 1)
	_, listErr := m.List(ctx, "", 0)
	deleteErr := m.Delete(ctx, 1)
	for name, err := range map[string]error{"Save": saveErr, "Search": searchErr, "List": listErr, "Delete": deleteErr} {
		t.Run(name, func(t *testing.T) {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("%s after Close = %v, want ErrClosed", name, err)
			}
		})
	}
}

func TestCanceledContext(t *testing.T) {
	m := openTemp(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, saveErr := m.Save(ctx, plugin.MemoryItem{Content: "x"})
	_, searchErr := m.Search(ctx, "xyz", 1)
	for name, err := range map[string]error{"Save": saveErr, "Search": searchErr} {
		t.Run(name, func(t *testing.T) {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s with a canceled context = %v", name, err)
			}
		})
	}
}

func TestTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.db")
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()

	t.Run("one sees the other's writes", func(t *testing.T) {
		id, err := a.Save(ctx, plugin.MemoryItem{Content: "部署前需要人工审批"})
		if err != nil {
			t.Fatal(err)
		}
		items, err := b.Search(ctx, "审批", 1)
		if err != nil || len(items) != 1 || items[0].ID != id {
			t.Fatalf("b.Search = %+v, %v", items, err)
		}
	})
	t.Run("concurrent writes serialise", func(t *testing.T) {
		const n = 40
		var wg sync.WaitGroup
		errs := make(chan error, 4*n)
		for h, m := range []*Memory{a, b} {
			wg.Go(func() {
				for i := range n {
					if _, err := m.Save(ctx, plugin.MemoryItem{Content: fmt.Sprintf("handle %d item %d", h, i)}); err != nil {
						errs <- err
					}
					if _, err := m.Save(ctx, plugin.MemoryItem{Key: "shared", Content: fmt.Sprintf("handle %d version %d", h, i)}); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		checkCounts(t, a, 1+2*n+1)
	})
}

// checkCounts checks that m holds want items, one of them with the key
// "shared", and that the index agrees with the table.
func checkCounts(t *testing.T, m *Memory, want int) {
	t.Helper()
	var items, shared, indexed int
	if err := m.r.QueryRow(`SELECT count(*), count(key) FROM memories`).Scan(&items, &shared); err != nil {
		t.Fatal(err)
	}
	if err := m.r.QueryRow(`SELECT count(*) FROM memories_fts WHERE memories_fts MATCH '"item" OR "version" OR "人工审批"'`).Scan(&indexed); err != nil {
		t.Fatal(err)
	}
	if items != want || shared != 1 || indexed != want {
		t.Errorf("%d items (%d keyed, %d found in the index), want %d (1 keyed, all indexed)", items, shared, indexed, want)
	}
	if _, err := m.w.Exec(`INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		t.Errorf("index integrity check: %v", err)
	}
}

// TestTwoProcesses runs writers in two processes on one file, as a task run
// and a later one in another process would.
func TestTwoProcesses(t *testing.T) {
	if path := os.Getenv("MEMSQLITE_CHILD_PATH"); path != "" {
		childWrites(t, path, os.Getenv("MEMSQLITE_CHILD_NAME"))
		return
	}
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "sub", "memory.db")
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for _, name := range []string{"p1", "p2"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTwoProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MEMSQLITE_CHILD_PATH="+path, "MEMSQLITE_CHILD_NAME="+name)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i])
		}
	}
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	checkCounts(t, m, 2*childItems+1)
}

const childItems = 30

// childWrites is the work of one process of TestTwoProcesses: it opens the
// (maybe new) file at the same time as the other and writes to it.
func childWrites(t *testing.T, path, name string) {
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	for i := range childItems {
		if _, err := m.Save(ctx, plugin.MemoryItem{Source: name, Content: fmt.Sprintf("%s item %d", name, i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Save(ctx, plugin.MemoryItem{Key: "shared", Content: fmt.Sprintf("%s version %d", name, i)}); err != nil {
			t.Fatal(err)
		}
	}
}
