// Command hookfloor is the least a hook without a daemon must do to keep
// Overseer's promise that a call is on disk before it is answered: read
// the event, open an SQLite file (WAL, fully synced commits), append one
// record and commit it, print a decision. It judges nothing, seals
// nothing and loads no policy: bench/hook times it beside the bare Go hook
// to show what the durable record alone costs a process, the floor under
// any hook that records its calls itself.
//
// Usage: hookfloor DB < event.json
package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"

	_ "modernc.org/sqlite"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: hookfloor DB < event.json")
		os.Exit(2)
	}
	b, err := io.ReadAll(os.Stdin)
	var ev map[string]any
	if err == nil {
		err = json.Unmarshal(b, &ev)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hookfloor:", err)
		os.Exit(2)
	}
	if err := record(os.Args[1], b); err != nil {
		fmt.Fprintln(os.Stderr, "hookfloor:", err)
		os.Exit(2)
	}
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "floor"}})
	fmt.Println(string(out))
}

// record appends the event to the file's log table in one synced commit.
// The database is not closed: the commit is on disk (the WAL synced), and
// closing would checkpoint it, which a hook need not wait for.
func record(path string, event []byte) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS log (seq INTEGER PRIMARY KEY, data TEXT NOT NULL)`); err != nil {
		return err
	}
	_, err = db.Exec(`INSERT INTO log (data) VALUES (?)`, string(event))
	return err
}
