package gate

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

type intentCase struct {
	line   int
	phrase string
	want   Intent
}

// loadIntentCases reads testdata/intents.txt: phrase<TAB>intent per line.
func loadIntentCases(tb testing.TB) []intentCase {
	tb.Helper()
	f, err := os.Open("testdata/intents.txt")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	byName := map[string]Intent{}
	for i := IntentUnknown; i.Valid(); i++ {
		byName[i.String()] = i
	}
	var cases []intentCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		tab := strings.LastIndexByte(line, '\t')
		if tab < 0 {
			tb.Fatalf("intents.txt:%d: no tab in %q", n, line)
		}
		want, ok := byName[line[tab+1:]]
		if !ok {
			tb.Fatalf("intents.txt:%d: unknown intent %q", n, line[tab+1:])
		}
		cases = append(cases, intentCase{line: n, phrase: line[:tab], want: want})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return cases
}

func TestParseIntent(t *testing.T) {
	cases := loadIntentCases(t)
	if len(cases) < 40 {
		t.Fatalf("only %d intent cases; want at least 40", len(cases))
	}
	for _, c := range cases {
		t.Run(c.phrase, func(t *testing.T) {
			if got := ParseIntent(c.phrase); got != c.want {
				t.Errorf("intents.txt:%d: ParseIntent(%q) = %v, want %v", c.line, c.phrase, got, c.want)
			}
		})
	}
}

// TestParseIntentCoversBothLanguages keeps the table honest: each intent has
// English and Chinese cases.
func TestParseIntentCoversBothLanguages(t *testing.T) {
	type key struct {
		want    Intent
		chinese bool
	}
	have := map[key]int{}
	for _, c := range loadIntentCases(t) {
		zh := strings.IndexFunc(c.phrase, func(r rune) bool { return r >= 0x4E00 && r <= 0x9FFF }) >= 0
		have[key{c.want, zh}]++
	}
	for i := IntentUnknown; i.Valid(); i++ {
		for _, zh := range []bool{false, true} {
			if have[key{i, zh}] == 0 {
				t.Errorf("no case for intent %v (chinese=%v)", i, zh)
			}
		}
	}
}

func TestIntentString(t *testing.T) {
	tests := []struct {
		in   Intent
		want string
	}{
		{IntentUnknown, "unknown"},
		{IntentApprove, "approve"},
		{IntentReject, "reject"},
		{IntentAbort, "abort"},
		{IntentDone, "done"},
		{Intent(42), "intent(42)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.in.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if valid := tt.in != Intent(42); tt.in.Valid() != valid {
				t.Errorf("Valid() = %v, want %v", tt.in.Valid(), valid)
			}
		})
	}
}

// TestParseIntentLongTextIsNotApproval: however many yeses a long text
// holds, it is prose, not an answer; objections are still heard.
func TestParseIntentLongText(t *testing.T) {
	long := strings.Repeat("yes ", 40)
	if got := ParseIntent(long); got != IntentUnknown {
		t.Errorf("ParseIntent(40 × yes) = %v, want unknown", got)
	}
	if got := ParseIntent(long + "but stop"); got != IntentAbort {
		t.Errorf("ParseIntent(40 × yes + stop) = %v, want abort", got)
	}
	huge := strings.Repeat("x", 1<<20) + " no"
	if got := ParseIntent(huge); got != IntentUnknown {
		// The text past the rune limit is ignored, so its "no" is not read.
		t.Errorf("ParseIntent(huge) = %v, want unknown", got)
	}
}

func FuzzParseIntent(f *testing.F) {
	for _, c := range loadIntentCases(f) {
		f.Add(c.phrase)
	}
	f.Add("\xff\xfe not ok")
	f.Fuzz(func(t *testing.T, s string) {
		got := ParseIntent(s)
		if !got.Valid() {
			t.Fatalf("ParseIntent(%q) = %v, not a valid intent", s, got)
		}
		// Adding an explicit abort to any answer makes it an abort.
		if len([]rune(s)) < maxIntentRunes-10 {
			if got := ParseIntent(s + " 停止"); got != IntentAbort {
				t.Fatalf("ParseIntent(%q + 停止) = %v, want abort", s, got)
			}
		}
	})
}
