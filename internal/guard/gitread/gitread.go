// Package gitread reads what a git repository holds — references, commits,
// trees and file contents — from its files, without running git: a git
// command run by Overseer on an agent's repository would read that
// repository's configuration, which may name programs to run
// (core.fsmonitor, diff.external, a textconv driver), and the reading of a
// guard must execute nothing the agent wrote.
//
// It reads loose objects and pack files (index version 2, offset and
// reference deltas), packed and loose references, symbolic references,
// worktrees (commondir), alternates, and the revision forms an agent
// names: a full or abbreviated object name, a branch, tag or remote
// branch, HEAD and the other *_HEAD files, stash@{N}, and the suffixes ~N
// and ^N. Every read is bounded — an object's size, a delta chain's depth,
// the number of objects read, and a deadline — and what cannot be read
// within them is an error, which the caller must treat as "not known",
// never as "unchanged". A reference store git does not keep as files
// (reftable) and a SHA-256 repository are not read (ErrUnsupported).
//
// Paths are absolute; the file system is an fs.FS rooted at "/" (nil: the
// operating system's), as in package tracked.
package gitread

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/guard"
)

// Bounds of a reading.
const (
	// MaxObjectBytes is the largest object (inflated) read.
	MaxObjectBytes = 4 << 20
	// MaxDeltaDepth bounds a chain of deltas.
	MaxDeltaDepth = 64
	// MaxObjects bounds the objects one Repo reads.
	MaxObjects = 4096
	// Budget is how long one Repo reads.
	Budget = 300 * time.Millisecond
	// maxSmallFile bounds references, packed-refs and other small files.
	maxSmallFile = 8 << 20
	// maxHops bounds symbolic references followed and ~N walked.
	maxHops = 10000
)

// Errors.
var (
	ErrNotFound    = errors.New("gitread: not found")
	ErrBound       = errors.New("gitread: reading reached its bound")
	ErrCorrupt     = errors.New("gitread: corrupt object or pack")
	ErrUnsupported = errors.New("gitread: repository format not read")
	ErrAmbiguous   = errors.New("gitread: ambiguous revision")
	ErrRevision    = errors.New("gitread: revision form not read")
)

// Object types.
const (
	TypeCommit = 1
	TypeTree   = 2
	TypeBlob   = 3
	TypeTag    = 4
)

// Repo is a repository being read. It is not safe for concurrent use.
type Repo struct {
	fsys     fs.FS
	GitDir   string // the repository's (or worktree's) git directory
	Common   string // where objects and shared references live
	objDirs  []string
	packs    []*pack
	packsErr error
	loaded   bool
	deadline time.Time
	objects  int
	cache    map[string]object
	packed   map[string]string // packed-refs, read once
	replace  map[string]string // refs/replace/*: an object's replacement, read once
	resolved map[string]string // revisions resolved
}

type object struct {
	typ  int
	data []byte
}

// Open prepares a reading of the repository whose git directory is gitdir.
func Open(fsys fs.FS, gitdir string) (*Repo, error) {
	r := &Repo{fsys: fsys, GitDir: path.Clean(gitdir), Common: path.Clean(gitdir),
		deadline: time.Now().Add(Budget), cache: map[string]object{}}
	if b, err := r.small(path.Join(gitdir, "commondir")); err == nil {
		d := strings.TrimSpace(string(b))
		if !path.IsAbs(d) {
			d = path.Join(gitdir, d)
		}
		r.Common = path.Clean(d)
	}
	if cfg, err := r.small(path.Join(r.Common, "config")); err == nil {
		lc := strings.ToLower(string(cfg))
		if strings.Contains(lc, "objectformat") && strings.Contains(lc, "sha256") ||
			strings.Contains(lc, "refstorage") && strings.Contains(lc, "reftable") {
			return nil, ErrUnsupported
		}
	}
	r.objDirs = []string{path.Join(r.Common, "objects")}
	if b, err := r.small(path.Join(r.Common, "objects", "info", "alternates")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			l = strings.TrimSpace(l)
			if l == "" || l[0] == '#' {
				continue
			}
			if !path.IsAbs(l) {
				l = path.Join(r.Common, "objects", l)
			}
			if len(r.objDirs) < 8 {
				r.objDirs = append(r.objDirs, path.Clean(l))
			}
		}
	}
	return r, nil
}

// name turns an absolute path into a name of the file system.
func name(abs string) string {
	n := strings.TrimPrefix(path.Clean(abs), "/")
	if n == "" {
		return "."
	}
	return n
}

// OpenRegular opens the regular file abs of fsys (nil: the operating
// system's) without blocking on what is not one (a named pipe put in the
// repository would hold the judgement): guard.OpenRegularIn.
func OpenRegular(fsys fs.FS, abs string) (fs.File, fs.FileInfo, error) {
	return guard.OpenRegularIn(fsys, abs)
}

// ReadFile reads the regular file abs when it holds at most max bytes.
func ReadFile(fsys fs.FS, abs string, max int64) ([]byte, error) {
	f, st, err := OpenRegular(fsys, abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > max {
		return nil, fmt.Errorf("%w: %s is %d bytes", ErrBound, abs, st.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: %s", ErrBound, abs)
	}
	return b, nil
}

func (r *Repo) small(abs string) ([]byte, error) { return ReadFile(r.fsys, abs, maxSmallFile) }

func (r *Repo) readDir(abs string) ([]fs.DirEntry, error) {
	if r.fsys == nil {
		return os.ReadDir(abs)
	}
	return fs.ReadDir(r.fsys, name(abs))
}

func (r *Repo) tick() error {
	r.objects++
	if r.objects > MaxObjects || time.Now().After(r.deadline) {
		return ErrBound
	}
	return nil
}

// ---- references and revisions

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ref reads the reference refname (a path below the git directory:
// "HEAD", "refs/heads/main"), following symbolic references. It returns
// ErrNotFound when there is none.
func (r *Repo) ref(refname string) (string, error) {
	for hop := 0; hop < 8; hop++ {
		if strings.Contains(refname, "..") || strings.HasPrefix(refname, "/") {
			return "", ErrNotFound
		}
		dirs := []string{r.GitDir}
		if r.Common != r.GitDir && !isPerWorktree(refname) {
			dirs = []string{r.Common}
		}
		var b []byte
		var err error
		for _, d := range dirs {
			if b, err = r.small(path.Join(d, refname)); err == nil {
				break
			}
		}
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, guard.ErrNotRegular) {
				return "", err
			}
			if h, ok := r.packedRef(refname); ok {
				return h, nil
			}
			return "", ErrNotFound
		}
		line, _, _ := strings.Cut(string(b), "\n")
		line = strings.TrimSpace(line)
		if t, ok := strings.CutPrefix(line, "ref:"); ok {
			refname = strings.TrimSpace(t)
			continue
		}
		// FETCH_HEAD: "HASH<TAB>…"; the first line is what git merges.
		h, _, _ := strings.Cut(line, "\t")
		h = strings.TrimSpace(h)
		if len(h) == 40 && isHex(h) {
			return h, nil
		}
		return "", fmt.Errorf("%w: reference %s", ErrCorrupt, refname)
	}
	return "", fmt.Errorf("%w: symbolic references too deep", ErrBound)
}

func isPerWorktree(refname string) bool {
	return !strings.HasPrefix(refname, "refs/") || strings.HasPrefix(refname, "refs/bisect/") ||
		strings.HasPrefix(refname, "refs/worktree/") || strings.HasPrefix(refname, "refs/rewritten/")
}

func (r *Repo) packedRef(refname string) (string, bool) {
	if r.packed == nil {
		r.packed = map[string]string{}
		if b, err := r.small(path.Join(r.Common, "packed-refs")); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if l == "" || l[0] == '#' || l[0] == '^' {
					continue
				}
				h, n, ok := strings.Cut(l, " ")
				if ok && len(h) == 40 && isHex(h) {
					r.packed[strings.TrimSpace(n)] = h
				}
			}
		}
	}
	h, ok := r.packed[refname]
	return h, ok
}

// RemoteBranches returns the remote-tracking references named
// refs/remotes/REMOTE/name, loose or packed (git checkout name makes a
// branch from the one remote that has it).
func (r *Repo) RemoteBranches(name string) []string {
	if name == "" || strings.Contains(name, "..") {
		return nil
	}
	var out []string
	if es, err := r.readDir(path.Join(r.Common, "refs", "remotes")); err == nil {
		for _, e := range es {
			ref := "refs/remotes/" + e.Name() + "/" + name
			if _, err := r.ref(ref); err == nil {
				out = append(out, ref)
			}
		}
	}
	r.packedRef("") // loads packed-refs
	for ref := range r.packed {
		rest, ok := strings.CutPrefix(ref, "refs/remotes/")
		if !ok {
			continue
		}
		if _, n, ok := strings.Cut(rest, "/"); ok && n == name && !slices.Contains(out, ref) {
			out = append(out, ref)
		}
	}
	slices.Sort(out)
	return out
}

// Head returns the commit HEAD names.
func (r *Repo) Head() (string, error) { return r.Resolve("HEAD") }

// HeadBranch returns the branch HEAD points at ("main"), or "".
func (r *Repo) HeadBranch() string {
	b, err := r.small(path.Join(r.GitDir, "HEAD"))
	if err != nil {
		return ""
	}
	t, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: refs/heads/")
	if !ok {
		return ""
	}
	return t
}

// Resolve returns the object name of the commit (or tree) rev names. A
// tag is peeled to what it tags.
func (r *Repo) Resolve(rev string) (string, error) {
	if h, ok := r.resolved[rev]; ok {
		return h, nil
	}
	h, err := r.resolve(rev)
	if err == nil {
		if r.resolved == nil {
			r.resolved = map[string]string{}
		}
		r.resolved[rev] = h
	}
	return h, err
}

func (r *Repo) resolve(rev string) (string, error) {
	if rev == "" {
		return "", ErrRevision
	}
	if rev == "@{-1}" || rev == "-" {
		h, err := r.previousBranch()
		if err != nil {
			return "", err
		}
		rev = h
	}
	// REV^{} and REV^{commit}: the commit a tag peels to, as every
	// revision read here is.
	for _, suf := range []string{"^{}", "^{commit}"} {
		if b, ok := strings.CutSuffix(rev, suf); ok && b != "" {
			rev = b
			break
		}
	}
	if strings.ContainsAny(rev, ":{} \t\n") && !stashForm(rev) || strings.Contains(rev, "..") {
		return "", fmt.Errorf("%w: %q", ErrRevision, rev)
	}
	// Suffixes ~N and ^N, read from the right.
	i := len(rev)
	for i > 0 {
		c := rev[i-1]
		if c == '~' || c == '^' || '0' <= c && c <= '9' {
			i--
			continue
		}
		break
	}
	baseRev, suffix := rev[:i], rev[i:]
	if baseRev == "" {
		return "", fmt.Errorf("%w: %q", ErrRevision, rev)
	}
	if suffix != "" && suffix[0] != '~' && suffix[0] != '^' {
		// Digits that belong to the name (release-2): no suffix.
		j := strings.IndexAny(suffix, "~^")
		if j < 0 {
			baseRev, suffix = rev, ""
		} else {
			baseRev, suffix = rev[:i+j], suffix[j:]
		}
	}
	h, err := r.resolveName(baseRev)
	if err != nil {
		return "", err
	}
	if h, err = r.peel(h); err != nil {
		return "", err
	}
	for suffix != "" {
		op := suffix[0]
		suffix = suffix[1:]
		j := 0
		for j < len(suffix) && '0' <= suffix[j] && suffix[j] <= '9' {
			j++
		}
		n := 1
		if j > 0 {
			if n, err = strconv.Atoi(suffix[:j]); err != nil || n > maxHops {
				return "", fmt.Errorf("%w: %q", ErrRevision, rev)
			}
		}
		suffix = suffix[j:]
		if op == '^' {
			if n == 0 {
				continue
			}
			c, err := r.Commit(h)
			if err != nil {
				return "", err
			}
			if n > len(c.Parents) {
				return "", fmt.Errorf("%w: %s has no parent %d", ErrNotFound, h, n)
			}
			h = c.Parents[n-1]
			continue
		}
		for k := 0; k < n; k++ {
			c, err := r.Commit(h)
			if err != nil {
				return "", err
			}
			if len(c.Parents) == 0 {
				return "", fmt.Errorf("%w: %s has no parent", ErrNotFound, h)
			}
			h = c.Parents[0]
		}
	}
	return h, nil
}

// previousBranch returns what HEAD was before the last checkout (git
// checkout -, @{-1}): the "from" of the last "checkout: moving from A to
// B" line of HEAD's reflog.
func (r *Repo) previousBranch() (string, error) {
	b, err := r.small(path.Join(r.GitDir, "logs", "HEAD"))
	if err != nil {
		return "", fmt.Errorf("%w: no previous branch", ErrNotFound)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		_, msg, ok := strings.Cut(lines[i], "\tcheckout: moving from ")
		if !ok {
			continue
		}
		from, _, ok := strings.Cut(msg, " to ")
		if !ok || from == "" || strings.ContainsAny(from, "{}:") {
			break
		}
		return from, nil
	}
	return "", fmt.Errorf("%w: no previous branch", ErrNotFound)
}

// stashForm reports whether rev is stash@{N} (or refs/stash@{N}).
func stashForm(rev string) bool {
	b, n, ok := strings.Cut(rev, "@{")
	if !ok || (b != "stash" && b != "refs/stash") {
		return false
	}
	n, ok = strings.CutSuffix(n, "}")
	if !ok {
		return false
	}
	k := 0
	for k < len(n) && '0' <= n[k] && n[k] <= '9' {
		k++
	}
	return k > 0 && (k == len(n) || n[k] == '~' || n[k] == '^')
}

// resolveName resolves a name without suffixes.
func (r *Repo) resolveName(rev string) (string, error) {
	if b, n, ok := strings.Cut(rev, "@{"); ok && (b == "stash" || b == "refs/stash") {
		k, err := strconv.Atoi(strings.TrimSuffix(n, "}"))
		if err != nil || k < 0 {
			return "", fmt.Errorf("%w: %q", ErrRevision, rev)
		}
		return r.stashEntry(k)
	}
	if len(rev) == 40 && isHex(rev) {
		return rev, nil
	}
	if rev == "@" {
		rev = "HEAD"
	}
	for _, cand := range []string{rev, "refs/" + rev, "refs/tags/" + rev, "refs/heads/" + rev, "refs/remotes/" + rev, "refs/remotes/" + rev + "/HEAD"} {
		if cand == rev && !strings.HasPrefix(rev, "refs/") && !allCapsHead(rev) {
			continue
		}
		h, err := r.ref(cand)
		if err == nil {
			return h, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return "", err
		}
	}
	if len(rev) >= 4 && len(rev) < 40 && isHex(rev) {
		return r.abbrev(rev)
	}
	return "", fmt.Errorf("%w: %q", ErrNotFound, rev)
}

// allCapsHead: HEAD, FETCH_HEAD, ORIG_HEAD, MERGE_HEAD … (files in the git
// directory itself).
func allCapsHead(s string) bool {
	if !strings.HasSuffix(s, "HEAD") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}

// stashEntry returns stash@{k}: the reflog of refs/stash, newest last.
func (r *Repo) stashEntry(k int) (string, error) {
	if k == 0 {
		return r.ref("refs/stash")
	}
	b, err := r.small(path.Join(r.Common, "logs", "refs", "stash"))
	if err != nil {
		return "", fmt.Errorf("%w: stash@{%d}", ErrNotFound, k)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if k >= len(lines) {
		return "", fmt.Errorf("%w: stash@{%d}", ErrNotFound, k)
	}
	f := strings.Fields(lines[len(lines)-1-k])
	if len(f) < 2 || len(f[1]) != 40 || !isHex(f[1]) {
		return "", fmt.Errorf("%w: stash reflog", ErrCorrupt)
	}
	return f[1], nil
}

// abbrev finds the one object whose name starts with prefix.
func (r *Repo) abbrev(prefix string) (string, error) {
	var found []string
	for _, d := range r.objDirs {
		es, err := r.readDir(path.Join(d, prefix[:2]))
		if err == nil {
			for _, e := range es {
				if strings.HasPrefix(prefix[:2]+e.Name(), prefix) && len(e.Name()) == 38 {
					found = append(found, prefix[:2]+e.Name())
				}
			}
		}
	}
	if err := r.loadPacks(); err != nil {
		return "", err
	}
	for _, p := range r.packs {
		if err := p.open(r.fsys); err != nil {
			return "", err
		}
		hs, err := p.withPrefix(prefix)
		if err != nil {
			return "", err
		}
		found = append(found, hs...)
	}
	slices.Sort(found)
	found = slices.Compact(found)
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w: %q", ErrNotFound, prefix)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%w: %q", ErrAmbiguous, prefix)
}

// peel follows annotated tags to what they tag.
func (r *Repo) peel(h string) (string, error) {
	for i := 0; i < 8; i++ {
		o, err := r.Object(h)
		if err != nil {
			return "", err
		}
		if o.typ != TypeTag {
			return h, nil
		}
		t, _, _ := strings.Cut(string(o.data), "\n")
		t, ok := strings.CutPrefix(t, "object ")
		if !ok || len(t) != 40 || !isHex(t) {
			return "", fmt.Errorf("%w: tag %s", ErrCorrupt, h)
		}
		h = t
	}
	return "", fmt.Errorf("%w: tags too deep", ErrBound)
}

// ---- commits and trees

// Commit is what is read of a commit.
type Commit struct {
	Tree    string
	Parents []string
}

// Commit reads the commit h.
func (r *Repo) Commit(h string) (Commit, error) {
	var c Commit
	o, err := r.Object(h)
	if err != nil {
		return c, err
	}
	if o.typ != TypeCommit {
		return c, fmt.Errorf("%w: %s is not a commit", ErrNotFound, h)
	}
	for _, l := range strings.Split(string(o.data), "\n") {
		if l == "" {
			break
		}
		k, v, _ := strings.Cut(l, " ")
		switch k {
		case "tree":
			c.Tree = v
		case "parent":
			c.Parents = append(c.Parents, v)
		}
	}
	if len(c.Tree) != 40 || !isHex(c.Tree) {
		return c, fmt.Errorf("%w: commit %s has no tree", ErrCorrupt, h)
	}
	return c, nil
}

// TreeOf returns the tree of h, a commit or a tree.
func (r *Repo) TreeOf(h string) (string, error) {
	o, err := r.Object(h)
	if err != nil {
		return "", err
	}
	switch o.typ {
	case TypeTree:
		return h, nil
	case TypeCommit:
		c, err := r.Commit(h)
		return c.Tree, err
	}
	return "", fmt.Errorf("%w: %s is not a commit or a tree", ErrNotFound, h)
}

// Entry is one entry of a tree.
type Entry struct {
	Name string
	Mode uint32 // 0o40000 tree, 0o100644/0o100755 blob, 0o120000 link, 0o160000 submodule
	Hash string
}

// IsTree reports whether the entry is a directory.
func (e Entry) IsTree() bool { return e.Mode == 0o40000 }

// Tree reads the tree h.
func (r *Repo) Tree(h string) ([]Entry, error) {
	o, err := r.Object(h)
	if err != nil {
		return nil, err
	}
	if o.typ != TypeTree {
		return nil, fmt.Errorf("%w: %s is not a tree", ErrNotFound, h)
	}
	return ParseTree(o.data)
}

// ParseTree parses a tree object's data.
func ParseTree(b []byte) ([]Entry, error) {
	var out []Entry
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		if sp <= 0 || sp > 7 {
			return nil, fmt.Errorf("%w: tree entry mode", ErrCorrupt)
		}
		m, err := strconv.ParseUint(string(b[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: tree entry mode", ErrCorrupt)
		}
		b = b[sp+1:]
		nul := bytes.IndexByte(b, 0)
		if nul <= 0 || nul+1+20 > len(b) {
			return nil, fmt.Errorf("%w: tree entry", ErrCorrupt)
		}
		nm := string(b[:nul])
		if nm == "." || nm == ".." || strings.Contains(nm, "/") {
			return nil, fmt.Errorf("%w: tree entry name %q", ErrCorrupt, nm)
		}
		out = append(out, Entry{Name: nm, Mode: uint32(m), Hash: hex.EncodeToString(b[nul+1 : nul+21])})
		b = b[nul+21:]
	}
	return out, nil
}

// Lookup finds the entry at rel (a slash-separated path) in the tree of
// the commit or tree h. ok is false when there is none.
func (r *Repo) Lookup(h, rel string) (Entry, bool, error) {
	t, err := r.TreeOf(h)
	if err != nil {
		return Entry{}, false, err
	}
	parts := strings.Split(strings.Trim(rel, "/"), "/")
	cur := Entry{Mode: 0o40000, Hash: t}
	for _, p := range parts {
		if !cur.IsTree() {
			return Entry{}, false, nil
		}
		es, err := r.Tree(cur.Hash)
		if err != nil {
			return Entry{}, false, err
		}
		i := slices.IndexFunc(es, func(e Entry) bool { return e.Name == p })
		if i < 0 {
			return Entry{}, false, nil
		}
		cur = es[i]
	}
	return cur, true, nil
}

// Blob reads the blob h.
func (r *Repo) Blob(h string) ([]byte, error) {
	o, err := r.Object(h)
	if err != nil {
		return nil, err
	}
	if o.typ != TypeBlob {
		return nil, fmt.Errorf("%w: %s is not a blob", ErrNotFound, h)
	}
	return o.data, nil
}

// MergeBase returns a common ancestor of a and b, found by walking both
// histories breadth first, a step of each in turn, within the
// repository's bounds: the walk stops as soon as one side reaches a commit
// the other has seen, so a branch a few commits ahead or behind is found in
// a few steps however long the history. In a history where two branches
// merged each other (criss-cross) it may find an older common ancestor
// than git's merge base.
func (r *Repo) MergeBase(a, b string) (string, error) {
	if a == b {
		return a, nil
	}
	seen := [2]map[string]bool{{a: true}, {b: true}}
	q := [2][]string{{a}, {b}}
	for steps := 0; len(q[0]) > 0 || len(q[1]) > 0; steps++ {
		if steps > MaxObjects/2 {
			return "", ErrBound
		}
		for side := 0; side < 2; side++ {
			if len(q[side]) == 0 {
				continue
			}
			h := q[side][0]
			q[side] = q[side][1:]
			c, err := r.Commit(h)
			if err != nil {
				return "", err
			}
			for _, p := range c.Parents {
				if seen[1-side][p] {
					return p, nil
				}
				if !seen[side][p] {
					seen[side][p] = true
					q[side] = append(q[side], p)
				}
			}
		}
	}
	return "", ErrNotFound
}

// ---- objects

// Object reads the object h: its type and data.
func (r *Repo) Object(h string) (object, error) {
	if o, ok := r.cache[h]; ok {
		return o, nil
	}
	if len(h) != 40 || !isHex(h) {
		return object{}, fmt.Errorf("%w: object name %q", ErrNotFound, h)
	}
	if err := r.tick(); err != nil {
		return object{}, err
	}
	// git reads an object's replacement (git replace) in its place.
	rh, err := r.replaced(h)
	if err != nil {
		return object{}, err
	}
	o, err := r.object(rh, 0)
	if err != nil {
		return object{}, err
	}
	if len(r.cache) < 512 {
		r.cache[h] = o
	}
	return o, nil
}

// replaced returns the object git reads for h: the one refs/replace/h
// names (followed as git follows them, five deep), or h.
func (r *Repo) replaced(h string) (string, error) {
	if r.replace == nil {
		r.replace = map[string]string{}
		if es, err := r.readDir(path.Join(r.Common, "refs", "replace")); err == nil {
			for _, e := range es {
				if n := e.Name(); len(n) == 40 && isHex(n) {
					t, err := r.ref("refs/replace/" + n)
					if err != nil {
						return "", err
					}
					r.replace[n] = t
				}
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		r.packedRef("")
		for n, t := range r.packed {
			if k, ok := strings.CutPrefix(n, "refs/replace/"); ok && len(k) == 40 && isHex(k) {
				if _, loose := r.replace[k]; !loose {
					r.replace[k] = t
				}
			}
		}
	}
	for i := 0; i < 5; i++ {
		t, ok := r.replace[h]
		if !ok {
			return h, nil
		}
		h = t
	}
	return "", fmt.Errorf("%w: replacement objects too deep", ErrBound)
}

func (r *Repo) object(h string, depth int) (object, error) {
	// Packs first (a lookup in an index read whole costs no system
	// call), then loose objects.
	if err := r.loadPacks(); err != nil {
		return object{}, err
	}
	for _, p := range r.packs {
		if err := p.open(r.fsys); err != nil {
			return object{}, err
		}
		off, ok, err := p.find(h)
		if err != nil {
			return object{}, err
		}
		if ok {
			return r.packed1(p, off, depth)
		}
	}
	for _, d := range r.objDirs {
		f, _, err := OpenRegular(r.fsys, path.Join(d, h[:2], h[2:]))
		if err != nil {
			continue
		}
		o, err := readLoose(f)
		f.Close()
		return o, err
	}
	return object{}, fmt.Errorf("%w: object %s", ErrNotFound, h)
}

// readLoose reads a loose object: zlib of "TYPE SIZE\0DATA".
func readLoose(f io.Reader) (object, error) {
	z, err := zlib.NewReader(bufio.NewReader(io.LimitReader(f, MaxObjectBytes*2)))
	if err != nil {
		return object{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	defer z.Close()
	br := bufio.NewReader(z)
	hdr, err := br.ReadString(0)
	if err != nil || len(hdr) > 32 {
		return object{}, fmt.Errorf("%w: loose object header", ErrCorrupt)
	}
	t, s, ok := strings.Cut(strings.TrimSuffix(hdr, "\x00"), " ")
	size, err := strconv.ParseInt(s, 10, 64)
	if !ok || err != nil || size < 0 {
		return object{}, fmt.Errorf("%w: loose object header", ErrCorrupt)
	}
	if size > MaxObjectBytes {
		return object{}, fmt.Errorf("%w: an object of %d bytes", ErrBound, size)
	}
	typ := map[string]int{"commit": TypeCommit, "tree": TypeTree, "blob": TypeBlob, "tag": TypeTag}[t]
	if typ == 0 {
		return object{}, fmt.Errorf("%w: object type %q", ErrCorrupt, t)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(br, data); err != nil {
		return object{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return object{typ: typ, data: data}, nil
}

// ---- packs

type pack struct {
	idx, pack string // paths
	ra        io.ReaderAt
	size      int64
	ira       io.ReaderAt // the index, read where a lookup needs it
	closers   []io.Closer
	fanout    [256]uint32
	n         int
	opened    bool
	openErr   error
}

func (r *Repo) loadPacks() error {
	if r.loaded {
		return r.packsErr
	}
	r.loaded = true
	for _, d := range r.objDirs {
		pd := path.Join(d, "pack")
		es, err := r.readDir(pd)
		if err != nil {
			continue
		}
		for _, e := range es {
			n, ok := strings.CutSuffix(e.Name(), ".idx")
			if !ok {
				continue
			}
			if len(r.packs) >= 64 {
				r.packsErr = fmt.Errorf("%w: too many packs", ErrBound)
				return r.packsErr
			}
			r.packs = append(r.packs, &pack{idx: path.Join(pd, e.Name()), pack: path.Join(pd, n+".pack")})
		}
	}
	return nil
}

// open opens the pack and its index, and reads the index's header and
// fan-out; names and offsets are read from the index where a lookup needs
// them (an index of millions of objects is not read whole).
func (p *pack) open(fsys fs.FS) error {
	if p.opened {
		return p.openErr
	}
	p.opened = true
	p.openErr = p.open1(fsys)
	return p.openErr
}

func (p *pack) open1(fsys fs.FS) error {
	f, st, err := OpenRegular(fsys, p.idx)
	if err != nil {
		return err
	}
	p.closers = append(p.closers, f)
	ira, ok := f.(io.ReaderAt)
	if !ok {
		return fmt.Errorf("%w: index not seekable", ErrUnsupported)
	}
	if st.Size() <= maxIdxInMemory {
		// A small index is read whole: a lookup then costs no system call.
		b, err := io.ReadAll(io.LimitReader(f, maxIdxInMemory+1))
		if err != nil {
			return fmt.Errorf("%w: pack index: %v", ErrCorrupt, err)
		}
		ira = bytes.NewReader(b)
	}
	head := make([]byte, 8+256*4)
	if _, err := ira.ReadAt(head, 0); err != nil {
		return fmt.Errorf("%w: pack index: %v", ErrCorrupt, err)
	}
	fan, n, err := checkIdx(head, st.Size())
	if err != nil {
		return err
	}
	p.ira, p.fanout, p.n = ira, fan, n
	pf, pst, err := OpenRegular(fsys, p.pack)
	if err != nil {
		return err
	}
	p.closers = append(p.closers, pf)
	ra, ok := pf.(io.ReaderAt)
	if !ok {
		return fmt.Errorf("%w: pack not seekable", ErrUnsupported)
	}
	p.ra, p.size = ra, pst.Size()
	return nil
}

// maxIdxInMemory is the largest pack index read whole (about 290000
// objects); a larger one is read where a lookup needs it.
const maxIdxInMemory = 8 << 20

// checkIdx checks a version 2 pack index's header and fan-out (head, its
// first 1032 bytes) against the file's size, and returns the fan-out and
// the number of objects.
func checkIdx(head []byte, size int64) ([256]uint32, int, error) {
	var fan [256]uint32
	if len(head) < 8+256*4 || string(head[:4]) != "\xfftOc" || binary.BigEndian.Uint32(head[4:8]) != 2 {
		return fan, 0, fmt.Errorf("%w: pack index", ErrCorrupt)
	}
	prev := uint32(0)
	for i := 0; i < 256; i++ {
		v := binary.BigEndian.Uint32(head[8+i*4:])
		if v < prev {
			return fan, 0, fmt.Errorf("%w: pack index fan-out", ErrCorrupt)
		}
		fan[i], prev = v, v
	}
	n := int64(fan[255])
	if size < 8+256*4+n*(20+4+4)+40 {
		return fan, 0, fmt.Errorf("%w: pack index too short", ErrCorrupt)
	}
	return fan, int(n), nil
}

func (p *pack) hashAt(i int) ([]byte, error) {
	b := make([]byte, 20)
	if _, err := p.ira.ReadAt(b, int64(8+256*4+i*20)); err != nil {
		return nil, fmt.Errorf("%w: pack index: %v", ErrCorrupt, err)
	}
	return b, nil
}

func (p *pack) offsetAt(i int) (int64, error) {
	var b [8]byte
	base := int64(8 + 256*4 + p.n*24)
	if _, err := p.ira.ReadAt(b[:4], base+int64(i)*4); err != nil {
		return 0, fmt.Errorf("%w: pack index: %v", ErrCorrupt, err)
	}
	v := binary.BigEndian.Uint32(b[:4])
	if v&0x80000000 == 0 {
		return int64(v), nil
	}
	k := int64(v & 0x7fffffff)
	if _, err := p.ira.ReadAt(b[:], int64(8+256*4+p.n*28)+k*8); err != nil {
		return 0, fmt.Errorf("%w: pack index offset: %v", ErrCorrupt, err)
	}
	return int64(binary.BigEndian.Uint64(b[:])), nil
}

// rng returns the index range of names starting with byte b.
func (p *pack) rng(b byte) (int, int) {
	lo := 0
	if b > 0 {
		lo = int(p.fanout[b-1])
	}
	return min(lo, p.n), min(int(p.fanout[b]), p.n)
}

func (p *pack) find(h string) (int64, bool, error) {
	want, err := hex.DecodeString(h)
	if err != nil {
		return 0, false, ErrNotFound
	}
	lo, hi := p.rng(want[0])
	for lo < hi {
		m := (lo + hi) / 2
		got, err := p.hashAt(m)
		if err != nil {
			return 0, false, err
		}
		switch c := bytes.Compare(got, want); {
		case c == 0:
			off, err := p.offsetAt(m)
			return off, err == nil, err
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return 0, false, nil
}

func (p *pack) withPrefix(prefix string) ([]string, error) {
	b, err := hex.DecodeString(prefix[:2])
	if err != nil {
		return nil, nil
	}
	lo, hi := p.rng(b[0])
	var out []string
	for i := lo; i < hi && len(out) < 2 && i-lo < 1<<16; i++ {
		got, err := p.hashAt(i)
		if err != nil {
			return nil, err
		}
		if h := hex.EncodeToString(got); strings.HasPrefix(h, prefix) {
			out = append(out, h)
		}
	}
	if hi-lo >= 1<<16 && len(out) < 2 {
		return nil, fmt.Errorf("%w: an abbreviated name in a large pack", ErrBound)
	}
	return out, nil
}

// packed1 reads the object at off of p, applying deltas.
func (r *Repo) packed1(p *pack, off int64, depth int) (object, error) {
	if err := p.open(r.fsys); err != nil {
		return object{}, err
	}
	if depth > MaxDeltaDepth {
		return object{}, fmt.Errorf("%w: delta chain too deep", ErrBound)
	}
	if off < 12 || off >= p.size {
		return object{}, fmt.Errorf("%w: pack offset", ErrCorrupt)
	}
	br := bufio.NewReader(io.NewSectionReader(p.ra, off, p.size-off))
	c, err := br.ReadByte()
	if err != nil {
		return object{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	typ := int(c>>4) & 7
	size := int64(c & 15)
	shift := uint(4)
	for c&0x80 != 0 {
		if c, err = br.ReadByte(); err != nil || shift > 56 {
			return object{}, fmt.Errorf("%w: pack object header", ErrCorrupt)
		}
		size |= int64(c&0x7f) << shift
		shift += 7
	}
	if size > MaxObjectBytes {
		return object{}, fmt.Errorf("%w: an object of %d bytes", ErrBound, size)
	}
	var base object
	switch typ {
	case TypeCommit, TypeTree, TypeBlob, TypeTag:
	case 6: // offset delta
		c, err := br.ReadByte()
		if err != nil {
			return object{}, fmt.Errorf("%w: delta offset", ErrCorrupt)
		}
		rel := int64(c & 0x7f)
		for n := 0; c&0x80 != 0; n++ {
			if c, err = br.ReadByte(); err != nil || n > 8 {
				return object{}, fmt.Errorf("%w: delta offset", ErrCorrupt)
			}
			rel = ((rel + 1) << 7) | int64(c&0x7f)
		}
		if rel <= 0 || rel > off {
			return object{}, fmt.Errorf("%w: delta offset", ErrCorrupt)
		}
		if err := r.tick(); err != nil {
			return object{}, err
		}
		if base, err = r.packed1(p, off-rel, depth+1); err != nil {
			return object{}, err
		}
	case 7: // reference delta
		var hb [20]byte
		if _, err := io.ReadFull(br, hb[:]); err != nil {
			return object{}, fmt.Errorf("%w: delta base", ErrCorrupt)
		}
		if err := r.tick(); err != nil {
			return object{}, err
		}
		if base, err = r.object(hex.EncodeToString(hb[:]), depth+1); err != nil {
			return object{}, err
		}
	default:
		return object{}, fmt.Errorf("%w: pack object type %d", ErrCorrupt, typ)
	}
	z, err := zlib.NewReader(br)
	if err != nil {
		return object{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	defer z.Close()
	data := make([]byte, size)
	if _, err := io.ReadFull(z, data); err != nil {
		return object{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if typ < 6 {
		return object{typ: typ, data: data}, nil
	}
	out, err := ApplyDelta(base.data, data)
	if err != nil {
		return object{}, err
	}
	return object{typ: base.typ, data: out}, nil
}

// ApplyDelta applies a git delta to base.
func ApplyDelta(base, delta []byte) ([]byte, error) {
	vint := func() (int64, bool) {
		var v int64
		shift := uint(0)
		for {
			if len(delta) == 0 || shift > 56 {
				return 0, false
			}
			c := delta[0]
			delta = delta[1:]
			v |= int64(c&0x7f) << shift
			shift += 7
			if c&0x80 == 0 {
				return v, true
			}
		}
	}
	src, ok1 := vint()
	dst, ok2 := vint()
	if !ok1 || !ok2 || src != int64(len(base)) || dst > MaxObjectBytes || dst < 0 {
		return nil, fmt.Errorf("%w: delta header", ErrCorrupt)
	}
	out := make([]byte, 0, dst)
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		if op&0x80 != 0 {
			var off, n int64
			for i := uint(0); i < 4; i++ {
				if op&(1<<i) != 0 {
					if len(delta) == 0 {
						return nil, fmt.Errorf("%w: delta copy", ErrCorrupt)
					}
					off |= int64(delta[0]) << (8 * i)
					delta = delta[1:]
				}
			}
			for i := uint(0); i < 3; i++ {
				if op&(0x10<<i) != 0 {
					if len(delta) == 0 {
						return nil, fmt.Errorf("%w: delta copy", ErrCorrupt)
					}
					n |= int64(delta[0]) << (8 * i)
					delta = delta[1:]
				}
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > int64(len(base)) || int64(len(out))+n > dst {
				return nil, fmt.Errorf("%w: delta copy out of range", ErrCorrupt)
			}
			out = append(out, base[off:off+n]...)
		} else if op != 0 {
			n := int(op)
			if n > len(delta) || int64(len(out)+n) > dst {
				return nil, fmt.Errorf("%w: delta insert", ErrCorrupt)
			}
			out = append(out, delta[:n]...)
			delta = delta[n:]
		} else {
			return nil, fmt.Errorf("%w: delta op 0", ErrCorrupt)
		}
	}
	if int64(len(out)) != dst {
		return nil, fmt.Errorf("%w: delta size", ErrCorrupt)
	}
	return out, nil
}

// Close releases the pack files opened.
func (r *Repo) Close() {
	for _, p := range r.packs {
		for _, c := range p.closers {
			c.Close()
		}
	}
}
