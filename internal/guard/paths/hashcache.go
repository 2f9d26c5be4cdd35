package paths

import (
	"os"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/guard"
)

// HashCache remembers the content hashes of files it hashed, by the file's
// identity as stat tells it (device, inode, size, modification and change
// times), so that recording a read of a file that has not changed since
// it was last hashed costs a stat instead of an open, a read and a hash:
// an agent reads the same files again and again, and every auto read is
// recorded with its file's hash. Any change of the file's content changes
// its change time (ctime, which no user can set) to the current time, so a
// file whose stat matches an entry still has the hashed content, provided
// the entry was not made within guard.RacyWindow of the file's last change: a
// write in the same tick of the file system's clock could leave both times
// as they were (git's "racily clean" entries). Such a file is hashed every
// time until its last change is older than guard.RacyWindow.
//
// The cache only ever answers for the same path with an unchanged stat; it
// is safe for concurrent use. On systems where stat does not give the
// change time and inode it hashes every time.
type HashCache struct {
	mu sync.Mutex
	m  map[string]hashEntry
}

// maxHashEntries bounds the cache; when it is full it starts over.
const maxHashEntries = 4096

type hashEntry struct {
	id    guard.Stamp
	hash  string
	mtime time.Time
}

// NewHashCache returns an empty cache.
func NewHashCache() *HashCache { return &HashCache{m: map[string]hashEntry{}} }

// Hash returns the hex SHA-256 of the regular file at p and its
// modification time, as HashFile does; fi is p's stat, taken by the caller
// just before. A nil cache hashes every time.
func (c *HashCache) Hash(p string, fi os.FileInfo) (hash string, mtime time.Time, err error) {
	id, ok := guard.StampOf(fi)
	if c == nil || !ok {
		return HashFile(p)
	}
	c.mu.Lock()
	e, hit := c.m[p]
	c.mu.Unlock()
	if hit && e.id == id {
		return e.hash, e.mtime, nil
	}
	start := time.Now()
	hash, got, err := hashFileID(p)
	if err != nil {
		return "", time.Time{}, err
	}
	mtime = time.Unix(0, got.Mtime)
	// Remembered only when the file hashed is the one stat saw, and its
	// last change is well before the hash began.
	if got == id && got.Settled(start) {
		c.mu.Lock()
		if len(c.m) >= maxHashEntries {
			clear(c.m)
		}
		c.m[p] = hashEntry{id: got, hash: hash, mtime: mtime}
		c.mu.Unlock()
	}
	return hash, mtime, nil
}
