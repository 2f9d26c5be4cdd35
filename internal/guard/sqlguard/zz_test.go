package sqlguard

import (
	"strings"
	"testing"
)

func TestZZ(t *testing.T) {
	for _, sql := range []string{
		"SELECT 1",
		strings.Repeat("SELECT (", 150) + "1" + strings.Repeat(")", 150),
		strings.Repeat("SELECT (", 200) + "1" + strings.Repeat(")", 200),
		strings.Repeat("SELECT (", 300) + "1" + strings.Repeat(")", 300),
		"SELECT 1",
		"SELECT 2",
	} {
		a, err := Analyze(sql)
		t.Logf("%d: %s %.80v", len(sql), a.Class, err)
	}
}
