package perception

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
)

var classifyCases = []struct {
	name    string
	output  string
	isError bool
	intent  string
	want    ResultClass
}{
	{"plain success", "3 files changed, 10 insertions(+)", false, "", ResultSuccess},
	{"tool reported error", "whatever it printed", true, "", ResultFailure},
	{"error prefix", "error: could not open config", false, "", ResultFailure},
	{"permission denied", "mkdir: /etc/x: Permission denied", false, "", ResultFailure},
	{"no such file", "cat: notes.txt: No such file or directory", false, "", ResultFailure},
	{"python traceback", "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError", false, "", ResultFailure},
	{"exit status nonzero", "build output\nexit status 2", false, "", ResultFailure},
	{"exit code nonzero", "Process exited with code 127", false, "", ResultFailure},
	{"exit status zero", "all good\nexit status 0", false, "", ResultSuccess},
	{"command not found", "bash: frob: command not found", false, "", ResultFailure},
	{"go test failure", "--- FAIL: TestX (0.00s)\nFAIL", false, "", ResultFailure},
	{"rust error line", "error[E0425]: cannot find value `x`", false, "", ResultFailure},
	{"errors count is not a failure", "compiled with 0 errors", false, "", ResultSuccess},
	{"empty", "", false, "", ResultIrrelevant},
	{"blank", " \n\t ", false, "list the files", ResultIrrelevant},
	{"nothing shared with intent", "Hello from the weather service: sunny", false, "count lines in main.go", ResultIrrelevant},
	{"shares a word with intent", "  42 main.go", false, "count lines in main.go", ResultSuccess},
	{"shares a stem with intent", "found 3 directories: src, docs, cmd", false, "list directories", ResultSuccess},
	{"intent of stop words only", "anything at all", false, "please run it", ResultSuccess},
	{"chinese intent shared", "数据库迁移已完成", false, "执行数据库迁移", ResultSuccess},
	{"chinese intent not shared", "今天天气晴朗", false, "执行数据库迁移", ResultIrrelevant},
	{"truncated", "line 1\nline 2\n[output truncated]", false, "", ResultPartial},
	{"warning with content", "warning: unused variable x\nbuilt target app", false, "", ResultPartial},
	{"warn line", "WARN deprecated flag\nok", false, "", ResultPartial},
	{"and n more", "a.txt\nb.txt\n... and 42 more", false, "", ResultPartial},
	{"ends with ellipsis", "the first part of the answer...", false, "", ResultPartial},
	{"skipped tests", "ok  pkg 0.1s (3 tests skipped)", false, "", ResultPartial},
	{"failure beats partial", "warning: x\nerror: y", false, "", ResultFailure},
	{"failure beats irrelevant", "fatal: not a git repository", false, "deploy the site", ResultFailure},
	{"error beats empty", "", true, "", ResultFailure},
}

func TestClassify(t *testing.T) {
	for _, tt := range classifyCases {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.output, tt.isError, tt.intent); got != tt.want {
				t.Errorf("Classify(%q, %v, %q) = %v, want %v", tt.output, tt.isError, tt.intent, got, tt.want)
			}
		})
	}
}

func TestClassifyCall(t *testing.T) {
	cases := []struct {
		name, output, intent, call string
		want                       ResultClass
	}{
		{"the call names the intent's subject", "# Proj\nA project.", "read the readme", "README.md\n", ResultSuccess},
		{"a stem of it", "alpha beta", "read the notes", "docs/notes.txt\n", ResultSuccess},
		{"neither output nor call", "Hello from the weather service", "read the config file", "cat /etc/os-release\n", ResultIrrelevant},
		{"no call", "Hello", "read the config file", "", ResultIrrelevant},
		{"a failure stays a failure", "error: no such file", "read the notes", "notes.txt\n", ResultFailure},
		{"empty output stays irrelevant", "", "read the notes", "notes.txt\n", ResultIrrelevant},
		{"chinese", "完成", "更新数据库迁移", "数据库/迁移.sql\n", ResultSuccess},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ClassifyCall(c.output, false, c.intent, c.call); got != c.want {
				t.Errorf("ClassifyCall(%q, %q, %q) = %v, want %v", c.output, c.intent, c.call, got, c.want)
			}
		})
	}
}

func TestResultClassText(t *testing.T) {
	for c := ResultClass(0); c <= ResultIrrelevant; c++ {
		b, err := c.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back ResultClass
		if err := back.UnmarshalText(b); err != nil || back != c {
			t.Errorf("%v round trip = %v, %v", c, back, err)
		}
	}
	names := map[ResultClass]string{0: "unknown", ResultSuccess: "success", ResultFailure: "failure",
		ResultPartial: "partial", ResultIrrelevant: "irrelevant", 9: "result(9)"}
	for c, want := range names {
		if c.String() != want {
			t.Errorf("String() = %q, want %q", c.String(), want)
		}
	}
	var c ResultClass
	if err := c.UnmarshalText([]byte("great")); err == nil {
		t.Error("unknown class name accepted")
	}
}

func FuzzClassify(f *testing.F) {
	for _, tt := range classifyCases {
		f.Add(tt.output, tt.isError, tt.intent, "")
	}
	f.Add("# Proj", false, "read the readme", "README.md\n")
	f.Fuzz(func(t *testing.T, output string, isError bool, intent, call string) {
		got := ClassifyCall(output, isError, intent, call)
		if got < ResultSuccess || got > ResultIrrelevant {
			t.Fatalf("ClassifyCall = %v, not one of the four classes", got)
		}
		if isError && got != ResultFailure {
			t.Fatalf("isError gave %v", got)
		}
		if strings.TrimSpace(output) == "" && got == ResultSuccess {
			t.Fatalf("empty output classified as success")
		}
		// The call can only make a result relevant, never change another class.
		if alone := Classify(output, isError, intent); alone != got && !(alone == ResultIrrelevant && got != ResultFailure) {
			t.Fatalf("the call changed %v into %v", alone, got)
		}
	})
}

func BenchmarkClassify(b *testing.B) {
	out := strings.Repeat("compiling module foo/bar with flags -O2\n", 200) + "done in 3.2s\n"
	for b.Loop() {
		Classify(out, false, "build the foo module")
	}
}

func TestClassifyLongOutput(t *testing.T) {
	filler := strings.Repeat("compiling module foo\n", 20000) // ~400 KiB
	tests := []struct {
		name   string
		output string
		want   ResultClass
	}{
		{"clean", filler + "built foo", ResultSuccess},
		{"error at the end", filler + "error: link failed", ResultFailure},
		{"error at the start", "fatal: bad flag\n" + filler, ResultFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.output, false, "build foo"); got != tt.want {
				t.Errorf("Classify = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSameResults(t *testing.T) {
	b := New(nil, clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	if _, known := b.SameResults("s", "h"); known {
		t.Fatal("a call with no result is known")
	}
	b.RecordCallResult("s", "h", "pending")
	b.RecordCallResult("s", "h", "pending")
	if same, known := b.SameResults("s", "h"); !known || same != 2 {
		t.Fatalf("two identical results: %d %v", same, known)
	}
	b.RecordCallResult("s", "h", "running")
	if same, _ := b.SameResults("s", "h"); same != 1 {
		t.Fatalf("after a change: %d", same)
	}
	if _, known := b.SameResults("other", "h"); known {
		t.Fatal("another session's results are known")
	}
	// Bounded: the oldest calls are forgotten.
	for i := 0; i <= maxCallResults; i++ {
		b.RecordCallResult("s", fmt.Sprint("c", i), "x")
	}
	if _, known := b.SameResults("s", "h"); known {
		t.Fatal("the oldest call was kept past the bound")
	}
}
