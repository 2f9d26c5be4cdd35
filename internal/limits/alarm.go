package limits

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"time"
)

// Alarm is a condition a person must know about.
type Alarm struct {
	// Name identifies the alarm ("database_size").
	Name    string    `json:"name"`
	Message string    `json:"message"`
	Since   time.Time `json:"since"`
	// Value and Threshold are the measured figure and the alarm's
	// threshold, where the alarm has them (bytes for database_size).
	Value     int64 `json:"value,omitempty"`
	Threshold int64 `json:"threshold,omitempty"`
}

// Alarms is the set of raised alarms. Safe for concurrent use.
type Alarms struct {
	mu     sync.Mutex
	active map[string]Alarm
	subs   []func(Alarm)
}

// NewAlarms returns an empty set.
func NewAlarms() *Alarms { return &Alarms{active: map[string]Alarm{}} }

// OnRaise calls fn (on its own goroutine) each time an alarm is raised
// that was not already raised.
func (a *Alarms) OnRaise(fn func(Alarm)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.subs = append(a.subs, fn)
}

// Raise raises al (updating it if it is already raised) and reports whether
// it is new; subscribers are told of new ones only.
func (a *Alarms) Raise(al Alarm) bool {
	a.mu.Lock()
	old, ok := a.active[al.Name]
	if ok {
		al.Since = old.Since
	}
	a.active[al.Name] = al
	subs := append([]func(Alarm){}, a.subs...)
	a.mu.Unlock()
	if !ok {
		for _, fn := range subs {
			go fn(al) // owned by the subscriber, which must return
		}
	}
	return !ok
}

// Clear lowers the alarm name and reports whether it was raised.
func (a *Alarms) Clear(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.active[name]
	delete(a.active, name)
	return ok
}

// Active returns the raised alarms, by name.
func (a *Alarms) Active() []Alarm {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Alarm, 0, len(a.active))
	for _, al := range a.active {
		out = append(out, al)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AlarmDatabaseSize names the database size alarm.
const AlarmDatabaseSize = "database_size"

// DatabaseSize is the size of the SQLite database at path with its
// write-ahead log and shared-memory file.
func DatabaseSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	n := fi.Size()
	for _, ext := range []string{"-wal", "-shm"} {
		if fi, err := os.Stat(path + ext); err == nil {
			n += fi.Size()
		}
	}
	return n, nil
}

// CheckDatabase measures the database at path against threshold (bytes;
// 0 or less: no alarm) and raises or clears AlarmDatabaseSize. The alarm
// is cleared only once the size is back under 90% of the threshold, so
// that it does not flap. It returns the size measured.
func (a *Alarms) CheckDatabase(path string, threshold int64, now time.Time) (int64, error) {
	size, err := DatabaseSize(path)
	if err != nil {
		return size, err
	}
	a.CheckSize(size, threshold, now)
	return size, nil
}

// CheckSize raises or clears AlarmDatabaseSize for a database of size
// bytes (however measured: a SQLite file, PostgreSQL's tables), as
// CheckDatabase does.
func (a *Alarms) CheckSize(size, threshold int64, now time.Time) {
	if threshold <= 0 {
		return
	}
	switch {
	case size >= threshold:
		a.Raise(Alarm{Name: AlarmDatabaseSize, Since: now, Value: size, Threshold: threshold,
			Message: fmt.Sprintf("Overseer's database is %s, over its alarm threshold of %s (settings.limits.database_alarm_bytes). "+
				"An agent may be flooding it: see which agents and sessions write most in the audit log.", Bytes(size), Bytes(threshold))})
	case size < threshold/10*9:
		a.Clear(AlarmDatabaseSize)
	}
}

// Bytes formats n as a size for people ("1.5 GiB").
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
