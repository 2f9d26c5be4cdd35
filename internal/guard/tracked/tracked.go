// Package tracked tells whether deleting a path would remove files people
// keep: the files git tracks at or below it, read from the repository's
// index file (.git/index), or — outside any repository — the source files
// below it, by extension. Untracked build outputs and ignored files are
// neither.
//
// It never runs git. The index is read by a small reader of git's
// documented index format (versions 2, 3 and 4, SHA-1 and SHA-256
// repositories, split indexes, sparse directory entries, worktrees and
// submodules whose .git is a file); a library such as go-git would bring a
// whole object store for one file format. Every read is bounded: the index
// is at most MaxIndexBytes and is parsed within a time budget, the source
// scan stops after MaxScanEntries entries or its time budget, and a parsed
// index is cached by its size and modification time. What cannot be told
// within the bounds is reported as incomplete, never as "nothing tracked".
//
// Paths are absolute and clean; the file system is an fs.FS rooted at "/"
// (absolute paths are looked up without their leading slash), so tests can
// use an in-memory tree.
package tracked

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Bounds of a lookup.
const (
	// MaxIndexBytes is the largest index file read.
	MaxIndexBytes = 64 << 20
	// IndexBudget is how long parsing one index may take.
	IndexBudget = 500 * time.Millisecond
	// MaxScanEntries is how many directory entries a source scan looks at.
	MaxScanEntries = 20000
	// ScanBudget is how long a source scan may take.
	ScanBudget = 200 * time.Millisecond
	// maxDepth bounds the walk up to a repository's root.
	maxDepth = 128
)

// Errors of the index reader.
var (
	ErrNotIndex = errors.New("tracked: not a git index")
	ErrTooLarge = errors.New("tracked: the index is too large to read")
	ErrTooSlow  = errors.New("tracked: reading the index took too long")
)

// Result is what a lookup found below one path.
type Result struct {
	// Repo is the root of the git working tree that holds the path; empty
	// outside any repository.
	Repo string
	// Files lists up to the asked number of files found (absolute paths):
	// tracked files inside a repository, source files outside one.
	Files []string
	// Total counts every file found.
	Total int
	// Complete is false when the lookup stopped at a bound (or failed), so
	// that Total is a lower bound.
	Complete bool
	// Err says why the lookup is incomplete, if it failed.
	Err error
}

// Any reports whether something was found, or could not be ruled out.
func (r Result) Any() bool { return r.Total > 0 || !r.Complete }

// Find looks below p: in a git working tree, the files the index tracks at
// or below p; elsewhere, the source files below p (SourceExtensions),
// skipping dependency and build directories (SkipDirs). It lists at most
// limit files.
func Find(fsys fs.FS, p string, limit int) Result {
	p = path.Clean(p)
	if root, gitdir, ok := repoOf(fsys, p); ok {
		r := Result{Repo: root, Complete: true}
		names, err := loadIndex(fsys, gitdir)
		if err != nil {
			r.Complete, r.Err = false, err
			return r
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		r.Files, r.Total = below(names, rel, limit)
		for i, f := range r.Files {
			r.Files[i] = path.Join(root, f)
		}
		return r
	}
	return scanSource(fsys, p, limit)
}

// name turns an absolute path into a name of fsys.
func name(abs string) string {
	n := strings.TrimPrefix(path.Clean(abs), "/")
	if n == "" {
		return "."
	}
	return n
}

// repoOf finds the git working tree holding p: the nearest directory at or
// above p that has a .git directory or a .git file ("gitdir: …"). It
// returns the tree's root and its git directory.
func repoOf(fsys fs.FS, p string) (root, gitdir string, ok bool) {
	dir := p
	// Removing a symbolic link removes the link, not what it points to.
	if fi, err := fs.Lstat(fsys, name(p)); err != nil || !fi.IsDir() {
		dir = path.Dir(p)
	}
	for i := 0; i < maxDepth; i++ {
		g := path.Join(dir, ".git")
		if fi, err := fs.Stat(fsys, name(g)); err == nil {
			if fi.IsDir() {
				return dir, g, true
			}
			if d, ok := gitdirFile(fsys, g, dir); ok {
				return dir, d, true
			}
		}
		if dir == "/" {
			break
		}
		dir = path.Dir(dir)
	}
	return "", "", false
}

// gitdirFile reads a .git file ("gitdir: PATH", PATH relative to dir).
func gitdirFile(fsys fs.FS, file, dir string) (string, bool) {
	b, err := readBounded(fsys, file, 4096)
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", false
	}
	d := strings.TrimSpace(rest)
	if d == "" {
		return "", false
	}
	if !path.IsAbs(d) {
		d = path.Join(dir, d)
	}
	return path.Clean(d), true
}

func readBounded(fsys fs.FS, abs string, max int64) ([]byte, error) {
	f, err := fsys.Open(name(abs))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%w: %s is %d bytes", ErrTooLarge, abs, fi.Size())
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > max {
		return nil, fmt.Errorf("%w: %s", ErrTooLarge, abs)
	}
	return buf.Bytes(), nil
}

// below returns up to limit names at or below rel ("" is everything) in
// the sorted list names, and how many there are.
func below(names []string, rel string, limit int) ([]string, int) {
	if rel == "" {
		n := min(limit, len(names))
		return slices.Clone(names[:n]), len(names)
	}
	var out []string
	total := 0
	// The file itself.
	if i := sort.SearchStrings(names, rel); i < len(names) && names[i] == rel {
		total++
		out = append(out, rel)
	}
	// Everything under rel/: a contiguous run of the sorted names.
	prefix := rel + "/"
	for i := sort.SearchStrings(names, prefix); i < len(names) && strings.HasPrefix(names[i], prefix); i++ {
		total++
		if len(out) < limit {
			out = append(out, names[i])
		}
	}
	return out, total
}

// cache keeps parsed indexes, by git directory, while their files are
// unchanged.
var cache = struct {
	sync.Mutex
	m map[string]cached
}{m: map[string]cached{}}

type cached struct {
	key   string // size and modification time of the index (and the shared one)
	names []string
}

const maxCached = 16

// loadIndex returns the sorted names of gitdir's index (with its shared
// index, for a split index).
func loadIndex(fsys fs.FS, gitdir string) ([]string, error) {
	idx := path.Join(gitdir, "index")
	fi, err := fs.Stat(fsys, name(idx))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // a repository with nothing added yet
	}
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
	cache.Lock()
	c, ok := cache.m[gitdir]
	cache.Unlock()
	if ok && c.key == key {
		return c.names, nil
	}
	if fi.Size() > MaxIndexBytes {
		return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, fi.Size())
	}
	data, err := readBounded(fsys, idx, MaxIndexBytes)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(IndexBudget)
	hashLen := hashLenOf(fsys, gitdir)
	ix, err := parseIndex(data, hashLen, deadline)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", idx, err)
	}
	names := ix.names
	if ix.shared != "" {
		// A split index: the entries live in the shared index too. Their
		// union is read (a deletion recorded in the split part is
		// ignored: more files count as tracked, never fewer).
		sp := path.Join(gitdir, "sharedindex."+ix.shared)
		sdata, err := readBounded(fsys, sp, MaxIndexBytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sp, err)
		}
		six, err := parseIndex(sdata, hashLen, deadline)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sp, err)
		}
		names = append(names, six.names...)
		slices.Sort(names)
		names = slices.Compact(names)
	}
	cache.Lock()
	if len(cache.m) >= maxCached {
		clear(cache.m)
	}
	cache.m[gitdir] = cached{key: key, names: names}
	cache.Unlock()
	return names, nil
}

// hashLenOf returns the object name length of the repository of gitdir: 32
// for SHA-256 repositories (extensions.objectFormat), else 20.
func hashLenOf(fsys fs.FS, gitdir string) int {
	common := gitdir
	if b, err := readBounded(fsys, path.Join(gitdir, "commondir"), 4096); err == nil {
		d := strings.TrimSpace(string(b))
		if !path.IsAbs(d) {
			d = path.Join(gitdir, d)
		}
		common = path.Clean(d)
	}
	b, err := readBounded(fsys, path.Join(common, "config"), maxConfigBytes)
	if err != nil {
		return sha1.Size
	}
	if strings.EqualFold(ConfigValue(string(b), "extensions", "objectformat"), "sha256") {
		return 32
	}
	return sha1.Size
}

// index is what is read from one index file.
type index struct {
	names  []string // sorted, without duplicates (conflict stages)
	shared string   // the shared index's hash, for a split index
}

// parseIndex reads an index file of version 2, 3 or 4.
func parseIndex(data []byte, hashLen int, deadline time.Time) (index, error) {
	return parseIndexEach(data, hashLen, deadline, nil)
}

// parseIndexEach is parseIndex, calling each (when not nil) with every
// entry's name, object name and stage.
func parseIndexEach(data []byte, hashLen int, deadline time.Time, each func(name string, hash []byte, stage int)) (index, error) {
	var ix index
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return ix, ErrNotIndex
	}
	ver := binary.BigEndian.Uint32(data[4:8])
	if ver < 2 || ver > 4 {
		return ix, fmt.Errorf("%w: version %d", ErrNotIndex, ver)
	}
	n := binary.BigEndian.Uint32(data[8:12])
	// The smallest entry is 40 bytes of stat data, the name, 2 bytes of
	// flags and a NUL; a count the file cannot hold is a corrupt file.
	if uint64(n) > uint64(len(data))/uint64(40+hashLen+3) {
		return ix, fmt.Errorf("%w: %d entries in %d bytes", ErrNotIndex, n, len(data))
	}
	ix.names = make([]string, 0, n)
	off := 12
	prev := ""
	fixed := 40 + hashLen + 2
	for i := uint32(0); i < n; i++ {
		if i%4096 == 0 && time.Now().After(deadline) {
			return ix, ErrTooSlow
		}
		start := off
		if off+fixed > len(data) {
			return ix, fmt.Errorf("%w: entry %d is cut short", ErrNotIndex, i)
		}
		flags := binary.BigEndian.Uint16(data[off+40+hashLen:])
		hash := data[off+40 : off+40+hashLen]
		off += fixed
		if ver >= 3 && flags&0x4000 != 0 {
			off += 2 // extended flags
		}
		if off >= len(data) {
			return ix, fmt.Errorf("%w: entry %d is cut short", ErrNotIndex, i)
		}
		var nm string
		if ver == 4 {
			strip, k := varint(data[off:])
			if k <= 0 || strip > uint64(len(prev)) {
				return ix, fmt.Errorf("%w: entry %d has a bad name prefix", ErrNotIndex, i)
			}
			off += k
			if off >= len(data) {
				return ix, fmt.Errorf("%w: entry %d is cut short", ErrNotIndex, i)
			}
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return ix, fmt.Errorf("%w: entry %d has no name end", ErrNotIndex, i)
			}
			nm = prev[:len(prev)-int(strip)] + string(data[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return ix, fmt.Errorf("%w: entry %d has no name end", ErrNotIndex, i)
			}
			nm = string(data[off : off+end])
			// Entries are padded with 1 to 8 NULs to a multiple of 8.
			off = start + ((off-start)+end+8)/8*8
		}
		if off > len(data) {
			return ix, fmt.Errorf("%w: entry %d is cut short", ErrNotIndex, i)
		}
		prev = nm
		if each != nil {
			each(nm, hash, int(flags>>12)&3)
		}
		// A sparse directory entry names a directory ("dir/"): everything
		// below it is tracked.
		nm = strings.TrimSuffix(nm, "/")
		if strings.HasPrefix(nm, "/") {
			return ix, fmt.Errorf("%w: entry %d has a bad name", ErrNotIndex, i)
		}
		// In a split index, an entry that replaces one of the shared index
		// has no name: the shared index names it.
		if nm != "" && (len(ix.names) == 0 || ix.names[len(ix.names)-1] != nm) {
			ix.names = append(ix.names, nm)
		}
	}
	// Extensions: a 4-byte signature, a 4-byte size, the data; the file
	// ends with the checksum.
	for off+8 <= len(data)-hashLen {
		sig := string(data[off : off+4])
		size := int(binary.BigEndian.Uint32(data[off+4 : off+8]))
		off += 8
		if size < 0 || off+size > len(data) {
			break
		}
		if sig == "link" && size >= hashLen {
			ix.shared = fmt.Sprintf("%x", data[off:off+hashLen])
		}
		off += size
	}
	if !sort.StringsAreSorted(ix.names) {
		// Git keeps its index sorted; a foreign writer may not have.
		slices.Sort(ix.names)
		ix.names = slices.Compact(ix.names)
	}
	return ix, nil
}

// RepoOf finds the git working tree holding p (see Find): its root and
// its git directory.
func RepoOf(fsys fs.FS, p string) (root, gitdir string, ok bool) {
	return repoOf(fsys, path.Clean(p))
}

// IndexBlobs returns the object names (hex) of the stage-0 entries of
// gitdir's index whose names want accepts, and the names of every entry.
// A split index is refused (ErrNotIndex): its shared part may replace
// entries, and a wrong object name would be taken for the index's.
func IndexBlobs(fsys fs.FS, gitdir string, want func(name string) bool) (map[string]string, []string, error) {
	names, err := loadIndex(fsys, gitdir)
	if err != nil {
		return nil, nil, err
	}
	idx := path.Join(gitdir, "index")
	data, err := readBounded(fsys, idx, MaxIndexBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, names, nil
	}
	if err != nil {
		return nil, nil, err
	}
	out := map[string]string{}
	ix, err := parseIndexEach(data, hashLenOf(fsys, gitdir), time.Now().Add(IndexBudget), func(n string, h []byte, stage int) {
		if stage == 0 && want(n) {
			out[n] = fmt.Sprintf("%x", h)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if ix.shared != "" {
		return nil, nil, fmt.Errorf("%w: a split index", ErrNotIndex)
	}
	return out, names, nil
}

// varint decodes git's offset varint (index version 4's name prefix).
func varint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, -1
	}
	c := b[0]
	v := uint64(c & 0x7f)
	i := 1
	for c&0x80 != 0 {
		if i >= len(b) || i > 9 {
			return 0, -1
		}
		c = b[i]
		i++
		v = ((v + 1) << 7) | uint64(c&0x7f)
	}
	return v, i
}
