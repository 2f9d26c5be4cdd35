package audit

// QueueLen reports how many appends wait for the writer (tests only).
func QueueLen(l *Log) int { return len(l.queue) }
