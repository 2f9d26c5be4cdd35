package action

import (
	"fmt"
	"sort"
	"strings"
)

// Subject is the argument a person most needs to see of an action: its
// command, path, URL or query (the first of "command", "cmd", "file_path",
// "path", "url", "sql" and "query" that is a string). The frontends show
// it where an action is put to a person.
func (a *Action) Subject() (string, bool) {
	return a.StringArg("command", "cmd", "file_path", "path", "url", "sql", "query")
}

// ArgsLine is the action's arguments as key=value pairs sorted by key and
// separated by spaces ("" without arguments): what the frontends show of
// an action without a Subject.
func (a *Action) ArgsLine() string {
	keys := make([]string, 0, len(a.Args))
	for k := range a.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%v", k, a.Args[k]))
	}
	return strings.Join(parts, " ")
}

// Origin names where a reason came from: its source, then the rule's or
// guard's name when it has one ("rule no-force-push", "loop").
func (r Reason) Origin() string {
	if r.Name == "" {
		return string(r.Source)
	}
	return string(r.Source) + " " + r.Name
}
