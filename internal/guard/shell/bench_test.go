package shell

import (
	"context"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// benchCommand is a typical compound command of a coding agent.
const benchCommand = `cd src && git status --short | grep -v '^??' | wc -l && go test ./... 2>&1 | tee test.log`

func BenchmarkAnalyze(b *testing.B) {
	env := Env{Cwd: "/home/u/proj", Home: "/home/u", FS: emptyFS(b)}
	b.ReportAllocs()
	for b.Loop() {
		Analyze(benchCommand, env)
	}
}

func BenchmarkAnalyzeSimple(b *testing.B) {
	env := Env{Cwd: "/home/u/proj", Home: "/home/u", FS: emptyFS(b)}
	b.ReportAllocs()
	for b.Loop() {
		Analyze("ls -la", env)
	}
}

// BenchmarkAnalyzeCorpus analyses every corpus command once per iteration
// and reports the mean time per command.
func BenchmarkAnalyzeCorpus(b *testing.B) {
	lines := loadCorpus(b)
	env := corpusEnv(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range lines {
			Analyze(c.command, env)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/command")
}

func BenchmarkGuardCheck(b *testing.B) {
	g, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	g.home, g.fsys = "/home/u", emptyFS(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a := &action.Action{Tool: "Bash", Kind: action.KindShell, Cwd: "/home/u/proj",
			Args: map[string]any{"command": benchCommand}}
		if _, err := g.Check(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShownFiles is what the kernel adds to a hook agent's shell call
// to find the files it prints (the stale-read check): compare with
// BenchmarkAnalyze, the guard's analysis of the same command.
func BenchmarkShownFiles(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		ShownFiles(benchCommand, "/home/u/proj")
	}
}

// BenchmarkShownFilesCodexRead is Codex's usual read.
func BenchmarkShownFilesCodexRead(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		ShownFiles(`bash -lc "cd src && nl -ba main.go | sed -n '1,200p'"`, "/home/u/proj")
	}
}

// BenchmarkDefaultTables is what a process pays, once, to load the
// built-in tables (see tables.go): the compiled rules at its first
// judgement of a command, the effect specs at its first analysis, the
// default Config when a config adds to the defaults.
func BenchmarkDefaultTables(b *testing.B) {
	b.Run("rules", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeRules(rulesBin)
		}
	})
	b.Run("effects", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeEffects(effectsBin)
		}
	})
	b.Run("config", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			DefaultConfig()
		}
	})
}
