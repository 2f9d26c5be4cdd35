package action

import "strings"

// What a tool's name says it does: the reading of a name that the file
// facts (a path's intent, see DeriveFileFacts) and the MCP guard (a call
// the server gave no annotations) share. A name is the word of whoever
// named the tool; it lowers nothing that its arguments raise, which the
// guards judge all the same.

// readVerbs are the first words of the names of tools that only read.
// Not fetch, query or browse: what those do is in their arguments (a URL,
// a statement), which a name does not vouch for; not open (open_file,
// open_pull_request).
var readVerbs = map[string]bool{
	"get": true, "list": true, "search": true, "read": true, "find": true, "describe": true, "show": true,
	"view": true, "lookup": true, "resolve": true, "inspect": true, "count": true, "explain": true,
	"retrieve": true, "peek": true, "whoami": true, "stat": true, "glob": true, "grep": true, "ls": true,
	"cat": true, "info": true, "tree": true,
}

// writeWords are words that make a name not only read, wherever they stand
// (get_or_create_issue, list_and_delete).
var writeWords = map[string]bool{
	"add": true, "apply": true, "approve": true, "archive": true, "assign": true, "buy": true, "call": true,
	"cancel": true, "change": true, "clear": true, "click": true, "close": true, "comment": true, "commit": true,
	"create": true, "delete": true, "deploy": true, "destroy": true, "disable": true, "dispatch": true,
	"drop": true, "edit": true, "enable": true, "eval": true, "evaluate": true, "exec": true, "execute": true,
	"fill": true, "fork": true, "grant": true, "import": true, "insert": true, "install": true, "invite": true,
	"kill": true, "label": true, "lock": true, "mark": true, "merge": true, "modify": true, "move": true,
	"open": true, "or": true, "pay": true, "post": true, "press": true, "publish": true, "purge": true,
	"push": true, "put": true, "react": true, "reboot": true, "remove": true, "rename": true, "reply": true,
	"request": true, "reset": true, "restart": true, "revoke": true, "run": true, "save": true, "schedule": true,
	"select": true, "send": true, "set": true, "share": true, "start": true, "stop": true, "submit": true,
	"sync": true, "terminate": true, "transfer": true, "trigger": true, "type": true, "unlock": true,
	"update": true, "upload": true, "upsert": true, "write": true, "and": true, "then": true,
	"truncate": true, "overwrite": true, "replace": true, "patch": true, "append": true, "erase": true,
	"wipe": true, "unlink": true, "rm": true, "mv": true, "cp": true, "copy": true, "chmod": true, "chown": true,
}

// ToolName is the tool's own part of a full name: what follows the last
// "__" of mcp__server__tool, or the name itself.
func ToolName(full string) string {
	if i := strings.LastIndex(full, "__"); i >= 0 {
		return full[i+2:]
	}
	return full
}

// NameWords splits a tool's name into the lower-case words it is judged
// by: split at _, - and . and at lower-to-upper case changes (searchCode:
// search, code), then each part between the separators whole as well
// ("list.deletE" holds "delete"). The first word is the name's first. A
// name with any other character than ASCII letters, digits and those
// three gives none.
func NameWords(tool string) []string {
	var words []string
	start := -1 // the current word's first byte
	prevLower := false
	for i := 0; i < len(tool); i++ {
		c := tool[i]
		switch {
		case c == '_' || c == '-' || c == '.':
			if start >= 0 {
				words = append(words, strings.ToLower(tool[start:i]))
			}
			start, prevLower = -1, false
		case c >= 'A' && c <= 'Z':
			// A word starts at a change from lower to upper case, and at
			// the last capital of a run that a lower-case letter follows
			// (getFileDELETEAll: get, file, delete, all).
			acronymEnd := !prevLower && start >= 0 && i > start && i+1 < len(tool) && tool[i+1] >= 'a' && tool[i+1] <= 'z'
			if prevLower || acronymEnd {
				words = append(words, strings.ToLower(tool[start:i]))
				start = -1
			}
			if start < 0 {
				start = i
			}
			prevLower = false
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			if start < 0 {
				start = i
			}
			prevLower = true
		default:
			return nil
		}
	}
	if start >= 0 {
		words = append(words, strings.ToLower(tool[start:]))
	}
	for _, p := range strings.FieldsFunc(strings.ToLower(tool), func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		words = append(words, p)
	}
	return words
}

// ReadsByName reports whether a tool's name (mcp__server__tool, or the
// tool alone) says it only reads: its first word is a reading verb and no
// word of it writes (read_file, mcp__fs__list_directory, getFileInfo;
// not get_or_create_file, read_and_truncate).
func ReadsByName(full string) bool {
	words := NameWords(ToolName(full))
	if len(words) == 0 || !readVerbs[words[0]] {
		return false
	}
	for _, w := range words[1:] {
		// A write word run into "all" (get_deleteall, list_purgeall)
		// writes as well.
		if writeWords[w] || len(w) > 3 && writeWords[strings.TrimSuffix(w, "all")] {
			return false
		}
	}
	return true
}
