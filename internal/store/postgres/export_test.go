package postgres

import "time"

// GuessMisses is how many of d's one-round-trip appends found that
// another instance had appended since d's last append.
func (d *DB) GuessMisses() int64 { return d.misses.Load() }

// SetReadTimeout sets the bound of a read until the returned function
// restores it.
func SetReadTimeout(d time.Duration) func() {
	old := readTimeout
	readTimeout = d
	return func() { readTimeout = old }
}

// SetWriteTimeout sets the bound of a write until the returned function
// restores it.
func SetWriteTimeout(d time.Duration) func() {
	old := writeTimeout
	writeTimeout = d
	return func() { writeTimeout = old }
}
