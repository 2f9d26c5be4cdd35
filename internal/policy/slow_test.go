package policy

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSlowCorpus(t *testing.T) {
	dir := os.Getenv("CORPUS")
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.SplitN(string(data), "\n", 2)
		s := strings.TrimSpace(lines[1])
		s = strings.TrimPrefix(s, "[]byte(")
		s = strings.TrimSuffix(s, ")")
		v, err := strconv.Unquote(s)
		if err != nil {
			t.Logf("%s: %v", f, err)
			continue
		}
		start := time.Now()
		Parse("x", []byte(v), Options{})
		if d := time.Since(start); d > 50*time.Millisecond {
			t.Logf("%s: %v\n%q", filepath.Base(f), d, v)
		}
	}
}
