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
		{"HTTPServer", []string{"httpserver", "httpserver"}},
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
