package postgres

// GuessMisses is how many of d's one-round-trip appends found that
// another instance had appended since d's last append.
func (d *DB) GuessMisses() int64 { return d.misses.Load() }
