package action

import (
	"strings"
	"testing"
)

// WrittenText gathers what a write, an edit, a multi-edit or a patch puts
// into a file, and nothing else of the arguments.
func TestWrittenText(t *testing.T) {
	got := WrittenText(map[string]any{
		"file_path": "/p/a.md", "old_string": "OLD", "new_string": "new1",
		"edits":     []any{map[string]any{"old_string": "OLD", "new_string": "new2"}, "odd"},
		"file_text": "new3", "content": 42,
	})
	for _, want := range []string{"new1", "new2", "new3"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "OLD") || strings.Contains(got, "/p/a.md") {
		t.Errorf("%q holds what is not written", got)
	}
}
