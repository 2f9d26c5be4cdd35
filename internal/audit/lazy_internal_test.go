package audit

import "time"

// Held is how many lazy requests wait in l's writer.
func Held(l *Log) int { return int(l.heldN.Load()) }

// SetLazyWait sets how long l's lazy requests wait, before l's first
// append.
func SetLazyWait(l *Log, d time.Duration) { l.lazyWait = d }
