package inject_test

import (
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/overseer-dev/overseer/internal/guard/inject"
)

type defCase struct {
	Name        string         `yaml:"name"`
	Label       string         `yaml:"label"`
	Note        string         `yaml:"note"`
	Description string         `yaml:"description"`
	Schema      map[string]any `yaml:"schema"`
}

type resCase struct {
	Name  string `yaml:"name"`
	Label string `yaml:"label"`
	Text  string `yaml:"text"`
}

func load[T any](t testing.TB, path string) []T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// figures counts a corpus's outcomes and checks the targets: at least 90%
// of the attacks flagged, at most 5% of the benign twins.
type figures struct {
	attacks, caught, benign, flagged int
	missed, falsePos                 []string
}

func (f *figures) add(name string, attack, hit bool, why string) {
	if attack {
		f.attacks++
		if hit {
			f.caught++
		} else {
			f.missed = append(f.missed, name)
		}
		return
	}
	f.benign++
	if hit {
		f.flagged++
		f.falsePos = append(f.falsePos, name+" ("+why+")")
	}
}

func (f *figures) check(t *testing.T, what string) {
	t.Helper()
	if f.attacks == 0 || f.benign == 0 {
		t.Fatalf("%s: empty corpus", what)
	}
	det := 100 * float64(f.caught) / float64(f.attacks)
	fp := 100 * float64(f.flagged) / float64(f.benign)
	t.Logf("%s: %d/%d attacks flagged (%.1f%%), %d/%d benign flagged (%.1f%%)", what, f.caught, f.attacks, det, f.flagged, f.benign, fp)
	if len(f.missed) > 0 {
		t.Logf("  missed: %s", strings.Join(f.missed, ", "))
	}
	if len(f.falsePos) > 0 {
		t.Logf("  false positives: %s", strings.Join(f.falsePos, "; "))
	}
	if det < 90 {
		t.Errorf("%s: detection %.1f%% < 90%%", what, det)
	}
	if fp > 5 {
		t.Errorf("%s: false positives %.1f%% > 5%%", what, fp)
	}
}

func TestCorpusDefinitions(t *testing.T) {
	d := inject.Default()
	var f figures
	for _, c := range load[defCase](t, "testdata/definitions.yaml") {
		if c.Label != "poisoned" && c.Label != "benign" {
			t.Fatalf("%s: label %q", c.Name, c.Label)
		}
		rep := d.Scan(inject.DefinitionText("", c.Description, c.Schema), inject.Definition)
		f.add(c.Name, c.Label == "poisoned", rep.Flagged, rep.Summary())
		if testing.Verbose() {
			t.Logf("%-34s %-8s score %.2f %v", c.Name, c.Label, rep.Score, rules(rep))
		}
	}
	f.check(t, "tool definitions")
}

func TestCorpusResults(t *testing.T) {
	d := inject.Default()
	var f figures
	for _, c := range load[resCase](t, "testdata/results.yaml") {
		if c.Label != "injected" && c.Label != "benign" {
			t.Fatalf("%s: label %q", c.Name, c.Label)
		}
		rep := d.Scan(c.Text, inject.Result)
		f.add(c.Name, c.Label == "injected", rep.Flagged, rep.Summary())
		if testing.Verbose() {
			t.Logf("%-34s %-8s score %.2f %v", c.Name, c.Label, rep.Score, rules(rep))
		}
	}
	f.check(t, "tool results")
}

func rules(r inject.Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Rule)
	}
	return out
}
