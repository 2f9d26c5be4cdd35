package notify

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The cases live in testdata/config: each file's first line says
// "# want: ok" or "# want: <part of the error>".
func TestParse(t *testing.T) {
	files, err := filepath.Glob("testdata/config/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(b), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("the first line must be # want: …")
			}
			cfg, err := Parse(b)
			if want == "ok" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if err := cfg.Validate(); err != nil {
					t.Fatalf("a parsed configuration does not validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want an error with %q", want)
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q lacks %q", err, want)
			}
		})
	}
}

func TestParseNames(t *testing.T) {
	cfg, err := Parse([]byte("channels:\n  - type: webhook\n    url: http://127.0.0.1:1/a\n  - type: webhook\n    url: http://127.0.0.1:1/b\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Channels[0].Name != "webhook" || cfg.Channels[1].Name != "webhook-2" {
		t.Fatalf("names %q %q", cfg.Channels[0].Name, cfg.Channels[1].Name)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, ConfigName)); !errors.Is(err, ErrNoConfig) {
		t.Fatalf("missing file: %v", err)
	}
	p := filepath.Join(dir, ConfigName)
	os.WriteFile(p, []byte("channels:\n  - type: nope\n"), 0o600)
	if _, err := Load(p); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), p) {
		t.Fatalf("bad file: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/config/*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("an error that does not wrap ErrConfig: %v", err)
			}
			return
		}
		// Whatever parses is valid and has named channels.
		if err := cfg.Validate(); err != nil {
			t.Fatalf("parsed but invalid: %v", err)
		}
		for _, c := range cfg.Channels {
			if c.Name == "" {
				t.Fatal("a channel without a name")
			}
		}
	})
}
