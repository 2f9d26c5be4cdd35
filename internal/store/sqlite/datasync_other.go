//go:build !linux

package sqlite

import "os"

// dataSync writes f's data to disk (fsync).
func dataSync(f *os.File) error { return f.Sync() }
