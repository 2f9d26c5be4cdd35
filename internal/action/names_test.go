package action

import (
	"slices"
	"testing"
)

func TestNameWords(t *testing.T) {
	for _, c := range []struct {
		name string
		want []string
	}{
		{"read_file", []string{"read", "file", "read", "file"}},
		{"getFileInfo", []string{"get", "file", "info", "getfileinfo"}},
		{"list.deletE", []string{"list", "delet", "e", "list", "delete"}},
		{"HTTPServer", []string{"http", "server", "httpserver"}},
		{"getFileDELETEAll", []string{"get", "file", "delete", "all", "getfiledeleteall"}},
		{"get2fa", []string{"get2fa", "get2fa"}},
		{"__get", []string{"get", "get"}},
		{"read file", nil},
		{"read:file", nil},
		{"", nil},
	} {
		if got := NameWords(c.name); !slices.Equal(got, c.want) {
			t.Errorf("NameWords(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestReadsByName(t *testing.T) {
	for name, want := range map[string]bool{
		// Reading names, and their writing twins.
		"read_file": true, "mcp__fs__read_file": true, "mcp__fs__list_directory": true,
		"get_file_info": true, "getFileInfo": true, "Read": true, "ls": true, "grep": true,
		"search-files": true, "mcp__gh__get_issue": true,
		"read_and_truncate": false, "get_or_create_file": false, "readThenDelete": false,
		"list.deletE": false, "mcp__fs__write_file": false, "open_file": false,
		"directory_tree": false, "readfile": false, "fetch_url": false,
		"read file": false, "read:file": false, "": false,
		// A write word in capitals run into the next word, or run into
		// "all", writes (both read as reads before); their twins read.
		"getFileDELETEAll": false, "get_deleteall": false, "list_purgeAll": false, "readRMAll": false,
		"getURLInfo": true, "get_posts": true, "get_install_status": false, "list_firewall_rules": true,
		// The server's part of the name does not count: only the tool's.
		"mcp__read__delete_file": false, "mcp__delete__read_file": true,
	} {
		if got := ReadsByName(name); got != want {
			t.Errorf("ReadsByName(%q) = %v, want %v", name, got, want)
		}
	}
}

// A path named by an MCP tool whose name reads first and writes after is
// not taken for a read (it used to be: the name's first word alone).
func TestFactsReadAndWriteName(t *testing.T) {
	for tool, want := range map[string]PathIntent{
		"mcp__fs__read_and_truncate": PathUnknown,
		"mcp__fs__read_file":         PathRead,
		"mcp__fs__readFile":          PathRead,
	} {
		a := &Action{Tool: tool, Kind: KindMCP, Cwd: "/home/u/p", Args: map[string]any{"path": "notes.txt"}}
		DeriveFileFacts(a)
		if len(a.Facts.Paths) != 1 || a.Facts.Paths[0].Intent != want {
			t.Errorf("%s: paths %+v, want one with intent %q", tool, a.Facts.Paths, want)
		}
	}
}

func FuzzNameWords(f *testing.F) {
	for _, s := range []string{"read_file", "getFileInfo", "list.deletE", "a__b", "ÄÖ", "x-Y_z.W"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		words := NameWords(name)
		for _, w := range words {
			if w == "" {
				t.Fatalf("NameWords(%q) has an empty word: %q", name, words)
			}
			for _, c := range []byte(w) {
				if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
					t.Fatalf("NameWords(%q) has word %q with %q", name, w, c)
				}
			}
		}
		if ReadsByName(name) {
			ws := NameWords(ToolName(name))
			if !readVerbs[ws[0]] {
				t.Fatalf("%q reads by name without a reading first word", name)
			}
			for _, w := range ws {
				if writeWords[w] {
					t.Fatalf("%q reads by name with the writing word %q", name, w)
				}
			}
		}
	})
}

// An MCP tool passes paths under names of its own and in lists
// (read_multiple_files' paths, filePath, a nested object): each is a path
// fact, with the intent the tool's name gives (they were none: a read of
// Overseer's token through read_multiple_files was judged by the name
// alone). A value under another name counts when it is plainly a path.
func TestFactsOtherArgPaths(t *testing.T) {
	for _, c := range []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"mcp__fs__read_multiple_files", map[string]any{"paths": []any{"/h/.overseer/token", "notes.txt"}}, []string{"/h/.overseer/token", "/p/notes.txt"}},
		{"mcp__fs__read_text_file", map[string]any{"filePath": "~/.ssh/id_rsa"}, []string{"~/.ssh/id_rsa"}},
		{"mcp__fs__read_file", map[string]any{"args": map[string]any{"source": "/etc/shadow"}}, []string{"/etc/shadow"}},
		{"mcp__fs__read_file", map[string]any{"uri": "file:///h/.aws/credentials"}, []string{"/h/.aws/credentials"}},
		{"mcp__fs__get_items", map[string]any{"id": "/h/.netrc"}, []string{"/h/.netrc"}},
		// Twins: text, URLs and another host's file are no paths.
		{"mcp__x__get_items", map[string]any{"name": "notes.txt", "url": "https://example.com/a", "uri": "file://host/x"}, nil},
		{"mcp__x__do", map[string]any{"target": "/prod"}, nil},
	} {
		a := &Action{Tool: c.tool, Kind: KindMCP, Cwd: "/p", Args: c.args}
		DeriveFileFacts(a)
		var got []string
		for _, f := range a.Facts.Paths {
			got = append(got, f.Path)
			if ReadsByName(c.tool) && f.Intent != PathRead {
				t.Errorf("%s: %s has intent %q, want read", c.tool, f.Path, f.Intent)
			}
		}
		slices.Sort(got)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %v: paths %q, want %q", c.tool, c.args, got, c.want)
		}
	}
}
