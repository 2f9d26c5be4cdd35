package undo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
)

type env struct {
	s   *Store
	db  *sqlite.DB
	clk *clock.Fake
	dir string // where the test's files live
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(base, "overseer.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	opts.Clock = clk
	if opts.GCGrace == 0 {
		opts.GCGrace = -time.Hour // tests collect blobs at once
	}
	s, err := New(filepath.Join(base, "undo"), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "work")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &env{s: s, db: db, clk: clk, dir: dir}
}

func (e *env) write(t *testing.T, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func blobCount(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	filepath.WalkDir(s.blobs, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

func TestKeepRestore(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, e *env)
	}{
		{"modified file gets its bytes and mode back", func(t *testing.T, e *env) {
			p := e.write(t, "a.txt", "original\n", 0o640)
			if _, err := e.s.Keep(ctx, "act_1", "s", p); err != nil {
				t.Fatal(err)
			}
			e.write(t, "a.txt", "changed by the agent\n", 0o600)
			got, err := e.s.Restore(ctx, "act_1")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].RestoredAt.IsZero() {
				t.Errorf("Restore returned %+v", got)
			}
			if s := readFile(t, p); s != "original\n" {
				t.Errorf("content = %q", s)
			}
			if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
				t.Errorf("mode = %v, want 0640", fi.Mode().Perm())
			}
		}},
		{"deleted file comes back", func(t *testing.T, e *env) {
			p := e.write(t, "gone.txt", "keep me", 0o644)
			if _, err := e.s.Keep(ctx, "act_1", "s", p); err != nil {
				t.Fatal(err)
			}
			os.Remove(p)
			if _, err := e.s.Restore(ctx, "act_1"); err != nil {
				t.Fatal(err)
			}
			if s := readFile(t, p); s != "keep me" {
				t.Errorf("content = %q", s)
			}
		}},
		{"created file is removed", func(t *testing.T, e *env) {
			p := filepath.Join(e.dir, "new.txt")
			en, err := e.s.Keep(ctx, "act_1", "s", p)
			if err != nil {
				t.Fatal(err)
			}
			if len(en.Files) != 1 || en.Files[0].Existed {
				t.Fatalf("entry = %+v, want one file that did not exist", en)
			}
			e.write(t, "new.txt", "made by the agent", 0o644)
			if _, err := e.s.Restore(ctx, "act_1"); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("new.txt still exists: %v", err)
			}
		}},
		{"first state wins for a path kept twice", func(t *testing.T, e *env) {
			p := e.write(t, "a.txt", "v0", 0o644)
			e.s.Keep(ctx, "act_1", "s", p)
			e.write(t, "a.txt", "v1", 0o644)
			en, err := e.s.Keep(ctx, "act_1", "s", p)
			if err != nil {
				t.Fatal(err)
			}
			if en.Files[0].Size != 2 || blobCount(t, e.s) != 1 {
				t.Errorf("second keep recorded a new state: %+v", en)
			}
			e.write(t, "a.txt", "v2", 0o644)
			e.s.Restore(ctx, "act_1")
			if s := readFile(t, p); s != "v0" {
				t.Errorf("content = %q, want v0", s)
			}
		}},
		{"identical content is stored once", func(t *testing.T, e *env) {
			a := e.write(t, "a.txt", "same bytes", 0o644)
			b := e.write(t, "b.txt", "same bytes", 0o644)
			ea, _ := e.s.Keep(ctx, "act_1", "s", a)
			eb, _ := e.s.Keep(ctx, "act_2", "s", b)
			if ea.Files[0].Blob != eb.Files[0].Blob || blobCount(t, e.s) != 1 {
				t.Errorf("blobs = %d (%s, %s), want one shared", blobCount(t, e.s), ea.Files[0].Blob, eb.Files[0].Blob)
			}
		}},
		{"directory tree comes back after rm -rf", func(t *testing.T, e *env) {
			e.write(t, "tree/a.txt", "A", 0o644)
			e.write(t, "tree/sub/b.txt", "B", 0o600)
			if err := os.Symlink("a.txt", filepath.Join(e.dir, "tree/link")); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(e.dir, "tree/empty"), 0o755); err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(e.dir, "tree")
			if _, err := e.s.Keep(ctx, "act_1", "s", root); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(root); err != nil {
				t.Fatal(err)
			}
			if _, err := e.s.Restore(ctx, "act_1"); err != nil {
				t.Fatal(err)
			}
			if readFile(t, filepath.Join(root, "a.txt")) != "A" || readFile(t, filepath.Join(root, "sub/b.txt")) != "B" {
				t.Error("files not restored")
			}
			if l, err := os.Readlink(filepath.Join(root, "link")); err != nil || l != "a.txt" {
				t.Errorf("link = %q, %v", l, err)
			}
			if fi, err := os.Stat(filepath.Join(root, "empty")); err != nil || !fi.IsDir() {
				t.Errorf("empty dir not restored: %v", err)
			}
		}},
		{"directory cap counts the rest", func(t *testing.T, e *env) {
			for i := range 5 {
				e.write(t, filepath.Join("many", string(rune('a'+i))+".txt"), "x", 0o644)
			}
			e.s.opts.MaxDirFiles = 3
			en, err := e.s.Keep(ctx, "act_1", "s", filepath.Join(e.dir, "many"))
			if err != nil {
				t.Fatal(err)
			}
			files := 0
			for _, f := range en.Files {
				if f.Type == "file" {
					files++
				}
			}
			if files != 3 || en.More != 2 || en.MoreNotCounted {
				t.Errorf("kept %d files, more %d; want 3 and 2", files, en.More)
			}
			e.s.opts.MaxDirFiles = 1
			for i := range 20 {
				e.write(t, filepath.Join("huge", fmt.Sprintf("%02d.txt", i)), "x", 0o644)
			}
			en, err = e.s.Keep(ctx, "act_2", "s", filepath.Join(e.dir, "huge"))
			if err != nil {
				t.Fatal(err)
			}
			if en.More != 10 || !en.MoreNotCounted {
				t.Errorf("huge: more %d, not counted %v; want the count to stop at 10", en.More, en.MoreNotCounted)
			}
		}},
		{"large file is noted, not kept", func(t *testing.T, e *env) {
			e.s.opts.MaxFileBytes = 10
			p := e.write(t, "big.bin", strings.Repeat("x", 11), 0o644)
			en, err := e.s.Keep(ctx, "act_1", "s", p)
			if err != nil {
				t.Fatal(err)
			}
			if en.Files[0].Skipped == "" || en.Files[0].Blob != "" || blobCount(t, e.s) != 0 {
				t.Fatalf("entry = %+v", en)
			}
			e.write(t, "big.bin", "small", 0o644)
			_, err = e.s.Restore(ctx, "act_1")
			if !errors.Is(err, ErrNotKept) {
				t.Errorf("Restore error = %v, want ErrNotKept", err)
			}
			if readFile(t, p) != "small" {
				t.Error("a file that could not be restored was changed")
			}
		}},
		{"undo twice is refused", func(t *testing.T, e *env) {
			p := e.write(t, "a.txt", "v0", 0o644)
			e.s.Keep(ctx, "act_1", "s", p)
			if _, err := e.s.Restore(ctx, "act_1"); err != nil {
				t.Fatal(err)
			}
			e.write(t, "a.txt", "v1", 0o644)
			if _, err := e.s.Restore(ctx, "act_1"); !errors.Is(err, ErrAlreadyRestored) {
				t.Errorf("second Restore error = %v, want ErrAlreadyRestored", err)
			}
			if readFile(t, p) != "v1" {
				t.Error("second Restore changed the file")
			}
		}},
		{"unknown action", func(t *testing.T, e *env) {
			if _, err := e.s.Restore(ctx, "act_nope"); !errors.Is(err, ErrNotFound) {
				t.Errorf("error = %v, want ErrNotFound", err)
			}
			if _, err := e.s.Diff(ctx, "act_nope"); !errors.Is(err, ErrNotFound) {
				t.Errorf("Diff error = %v, want ErrNotFound", err)
			}
		}},
		{"planted link is replaced, not followed", func(t *testing.T, e *env) {
			p := e.write(t, "a.txt", "v0", 0o644)
			victim := e.write(t, "victim.txt", "do not touch", 0o644)
			e.s.Keep(ctx, "act_1", "s", p)
			os.Remove(p)
			if err := os.Symlink(victim, p); err != nil {
				t.Fatal(err)
			}
			if _, err := e.s.Restore(ctx, "act_1"); err != nil {
				t.Fatal(err)
			}
			if readFile(t, victim) != "do not touch" {
				t.Error("restore wrote through a planted link")
			}
			if fi, _ := os.Lstat(p); fi.Mode()&os.ModeSymlink != 0 || readFile(t, p) != "v0" {
				t.Error("the link was not replaced by the kept file")
			}
		}},
		{"directory replaced by a link is refused", func(t *testing.T, e *env) {
			p := e.write(t, "d/a.txt", "v0", 0o644)
			e.s.Keep(ctx, "act_1", "s", p)
			elsewhere := filepath.Join(e.dir, "elsewhere")
			os.MkdirAll(elsewhere, 0o755)
			os.RemoveAll(filepath.Join(e.dir, "d"))
			if err := os.Symlink(elsewhere, filepath.Join(e.dir, "d")); err != nil {
				t.Fatal(err)
			}
			if _, err := e.s.Restore(ctx, "act_1"); !errors.Is(err, ErrMoved) {
				t.Errorf("error = %v, want ErrMoved", err)
			}
			if _, err := os.Stat(filepath.Join(elsewhere, "a.txt")); !errors.Is(err, os.ErrNotExist) {
				t.Error("restore wrote into the link's target")
			}
		}},
		{"relative path refused", func(t *testing.T, e *env) {
			if _, err := e.s.Keep(ctx, "act_1", "s", "rel/a.txt"); err == nil {
				t.Error("Keep accepted a relative path")
			}
			if _, err := e.s.Keep(ctx, "", "s", "/x"); err == nil {
				t.Error("Keep accepted an empty action id")
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newEnv(t, Options{}))
		})
	}
}

func TestLast(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, Options{})
	for i, id := range []string{"act_a", "act_b", "act_c"} {
		p := e.write(t, id+".txt", id, 0o644)
		e.s.Keep(ctx, id, "s1", p)
		if i == 1 { // an action with two paths
			q := e.write(t, id+"-2.txt", id, 0o644)
			e.s.Keep(ctx, id, "s1", q)
		}
		e.clk.Advance(time.Second)
	}
	e.s.Keep(ctx, "act_other", "s2", e.write(t, "o.txt", "o", 0o644))

	ids := func(es []Entry) string {
		var out []string
		for _, en := range es {
			out = append(out, en.ActionID+":"+filepath.Base(en.Path))
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name    string
		session string
		n       int
		want    string
	}{
		{"last one", "s1", 1, "act_c:act_c.txt"},
		{"last two, action with two paths", "s1", 2, "act_c:act_c.txt,act_b:act_b.txt,act_b:act_b-2.txt"},
		{"all", "s1", 0, "act_c:act_c.txt,act_b:act_b.txt,act_b:act_b-2.txt,act_a:act_a.txt"},
		{"other session", "s2", 5, "act_other:o.txt"},
		{"unknown session", "s3", 5, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.s.Last(ctx, tc.session, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if ids(got) != tc.want {
				t.Errorf("Last = %s, want %s", ids(got), tc.want)
			}
		})
	}
	t.Run("undone actions are skipped", func(t *testing.T) {
		if _, err := e.s.Restore(ctx, "act_c"); err != nil {
			t.Fatal(err)
		}
		got, _ := e.s.Last(ctx, "s1", 1)
		if ids(got) != "act_b:act_b.txt,act_b:act_b-2.txt" {
			t.Errorf("Last = %s", ids(got))
		}
	})
}

func TestDiff(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		before  string // "" with exists=false: did not exist
		exists  bool
		after   string // "" with gone=true: deleted
		gone    bool
		want    []string
		wantNil bool
	}{
		{name: "edit", before: "a\nb\nc\n", exists: true, after: "a\nB\nc\n",
			want: []string{"--- ", "(now)", "+++ ", "(after undo)", "@@ -1,3 +1,3 @@", "-B\n", "+b\n", " a\n"}},
		{name: "unchanged", before: "same\n", exists: true, after: "same\n", wantNil: true},
		{name: "created", after: "new\n", want: []string{"/dev/null (undo removes it)", "-new\n"}},
		{name: "deleted", before: "old\n", exists: true, gone: true, want: []string{"/dev/null (missing now)", "+old\n"}},
		{name: "binary", before: "a\x00b", exists: true, after: "a\x00c", want: []string{"binary or large content differs"}},
		{name: "no final newline", before: "x\ny", exists: true, after: "x\nz", want: []string{"\\ No newline at end of file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			p := filepath.Join(e.dir, "f.txt")
			if tc.exists {
				e.write(t, "f.txt", tc.before, 0o644)
			}
			if _, err := e.s.Keep(ctx, "act_1", "s", p); err != nil {
				t.Fatal(err)
			}
			if tc.gone {
				os.Remove(p)
			} else {
				e.write(t, "f.txt", tc.after, 0o644)
			}
			d, err := e.s.Diff(ctx, "act_1")
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantNil {
				if d != "" {
					t.Errorf("Diff = %q, want empty", d)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(d, w) {
					t.Errorf("Diff lacks %q:\n%s", w, d)
				}
			}
		})
	}
}

func TestPrune(t *testing.T) {
	ctx := context.Background()
	t.Run("by age", func(t *testing.T) {
		e := newEnv(t, Options{})
		old := e.write(t, "old.txt", "old content", 0o644)
		e.s.Keep(ctx, "act_old", "s", old)
		e.clk.Advance(48 * time.Hour)
		fresh := e.write(t, "fresh.txt", "fresh content", 0o644)
		e.s.Keep(ctx, "act_fresh", "s", fresh)
		st, err := e.s.Prune(ctx, 24*time.Hour, 0)
		if err != nil {
			t.Fatal(err)
		}
		if st.Actions != 1 || st.Blobs != 1 || st.BytesFreed != int64(len("old content")) {
			t.Errorf("stats = %+v", st)
		}
		if _, err := e.s.Restore(ctx, "act_old"); !errors.Is(err, ErrNotFound) {
			t.Errorf("old action still restorable: %v", err)
		}
		e.write(t, "fresh.txt", "changed", 0o644)
		if _, err := e.s.Restore(ctx, "act_fresh"); err != nil || readFile(t, fresh) != "fresh content" {
			t.Errorf("fresh action lost: %v", err)
		}
	})
	t.Run("by size, shared blobs survive", func(t *testing.T) {
		e := newEnv(t, Options{})
		a := e.write(t, "a.txt", strings.Repeat("a", 100), 0o644)
		b := e.write(t, "b.txt", strings.Repeat("b", 100), 0o644)
		c := e.write(t, "c.txt", strings.Repeat("a", 100), 0o644) // same as a
		e.s.Keep(ctx, "act_1", "s", a)
		e.s.Keep(ctx, "act_2", "s", b)
		e.s.Keep(ctx, "act_3", "s", c)
		st, err := e.s.Prune(ctx, 0, 150)
		if err != nil {
			t.Fatal(err)
		}
		// Dropping act_1 frees nothing (act_3 shares its blob); dropping
		// act_2 brings the total to 100.
		if st.Actions != 2 || st.Blobs != 1 || st.BytesKept != 100 {
			t.Errorf("stats = %+v", st)
		}
		if blobCount(t, e.s) != 1 {
			t.Errorf("%d blobs left, want 1", blobCount(t, e.s))
		}
		os.Remove(c)
		if _, err := e.s.Restore(ctx, "act_3"); err != nil || readFile(t, c) != strings.Repeat("a", 100) {
			t.Errorf("act_3 lost its content: %v", err)
		}
	})
	t.Run("grace protects fresh blobs", func(t *testing.T) {
		e := newEnv(t, Options{GCGrace: time.Hour})
		a := e.write(t, "a.txt", "x", 0o644)
		e.s.Keep(ctx, "act_1", "s", a)
		st, err := e.s.Prune(ctx, 0, 0)
		if err != nil || st.Blobs != 0 {
			t.Errorf("Prune = %+v, %v", st, err)
		}
		e.clk.Advance(time.Hour)
		st, _ = e.s.Prune(ctx, time.Minute, 0)
		if st.Actions != 1 || st.Blobs != 0 {
			t.Errorf("a blob younger than the grace was removed: %+v", st)
		}
	})
}

func TestNewErrors(t *testing.T) {
	if _, err := New("relative", nil, Options{}); err == nil {
		t.Error("New accepted no store")
	}
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := New("relative", db, Options{}); err == nil {
		t.Error("New accepted a relative directory")
	}
}

// TestStoreFailure: when the index cannot be written, Keep reports it (the
// kernel then refuses to run the action).
func TestStoreFailure(t *testing.T) {
	e := newEnv(t, Options{})
	p := e.write(t, "a.txt", "x", 0o644)
	e.db.Close()
	if _, err := e.s.Keep(context.Background(), "act_1", "s", p); err == nil {
		t.Error("Keep succeeded with a closed store")
	}
}

func TestBlobPermissions(t *testing.T) {
	e := newEnv(t, Options{})
	p := e.write(t, "secret.txt", "s3cret", 0o600)
	en, _ := e.s.Keep(context.Background(), "act_1", "s", p)
	fi, err := os.Stat(e.s.blobPath(en.Files[0].Blob))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("blob mode %v is readable by others", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(e.s.blobPath(en.Files[0].Blob))
	if !bytes.Equal(b, []byte("s3cret")) {
		t.Errorf("blob = %q", b)
	}
}

// Two stores sharing one index (a fleet's instances on one database), each
// with its own directory: each restores and prunes only what it kept.
func TestSharedIndexInstances(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, Options{Instance: "a"})
	b, err := New(filepath.Join(t.TempDir(), "undo"), e.db, Options{Instance: "b", Clock: e.clk, GCGrace: -time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p := e.write(t, "f.txt", "before", 0o644)
	if _, err := e.s.Keep(ctx, "act_a", "s", p); err != nil {
		t.Fatal(err)
	}
	q := e.write(t, "g.txt", "other", 0o644)
	if _, err := b.Keep(ctx, "act_b", "s", q); err != nil {
		t.Fatal(err)
	}
	e.write(t, "f.txt", "after", 0o644)
	if _, err := b.Restore(ctx, "act_a"); !errors.Is(err, ErrElsewhere) {
		t.Fatalf("restore through the other instance: %v", err)
	}
	if readFile(t, p) != "after" {
		t.Fatal("the other instance changed the file")
	}
	// b prunes everything it may: its own action only (a's is not twice
	// the age yet).
	e.clk.Advance(time.Hour)
	if st, err := b.Prune(ctx, 40*time.Minute, 0); err != nil || st.Actions != 1 {
		t.Fatalf("b's prune: %+v %v", st, err)
	}
	if _, err := e.s.Restore(ctx, "act_a"); err != nil || readFile(t, p) != "before" {
		t.Fatalf("restore through the instance that kept it: %v", err)
	}
}

// What an instance that no longer runs kept, or what was kept before the
// instances had names, is pruned from the shared index by the others once
// it is twice the age limit, and its blobs (another machine's) are left.
func TestSharedIndexForgottenInstance(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, Options{Instance: "a"})
	for _, name := range []string{"gone", ""} {
		dir := filepath.Join(t.TempDir(), "undo")
		o, err := New(dir, e.db, Options{Instance: name, Clock: e.clk, GCGrace: -time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		q := e.write(t, "g.txt", "kept by "+name, 0o644)
		if _, err := o.Keep(ctx, "act_"+name, "s", q); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if n := countFiles(t, filepath.Join(dir, "blobs")); n != 1 {
				t.Errorf("the blobs of instance %q: %d files, want its one left alone", name, n)
			}
		})
	}
	e.clk.Advance(90 * time.Minute)
	if st, err := e.s.Prune(ctx, time.Hour, 0); err != nil || st.Actions != 0 {
		t.Fatalf("prune before twice the age: %+v %v", st, err)
	}
	e.clk.Advance(31 * time.Minute)
	if st, err := e.s.Prune(ctx, time.Hour, 0); err != nil || st.Actions != 2 {
		t.Fatalf("prune after twice the age: %+v %v", st, err)
	}
	for _, id := range []string{"act_gone", "act_"} {
		if _, err := e.s.Entries(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s still in the index: %v", id, err)
		}
	}
}

// countFiles counts the regular files below dir.
func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
