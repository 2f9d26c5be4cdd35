package standard

import (
	"strings"
	"testing"
	"unicode/utf8"
)

var estimateCases = []struct {
	name string
	in   string
	want int
}{
	{"empty", "", 0},
	{"white space only", " \t\n  ", 0},
	{"one word", "hello", 2},                          // 1.3
	{"two words", "hello world", 3},                   // 2.6
	{"words and punctuation", "a, b.", 4},             // 2.6 + 1.0
	{"eight letters are one word", "abcdefgh", 2},     // 1.3
	{"nine letters are two words", "abcdefghi", 3},    // 2.6
	{"long identifier", "internationalization", 4},    // 3 × 1.3
	{"digits form words", "12345 678", 3},             // 2.6
	{"two Han characters", "你好", 3},                   // 3.0
	{"Chinese with full-width comma", "你好，世界", 7},     // 6.0 + 0.5
	{"kana", "こんにちは", 8},                              // 7.5
	{"Hangul", "안녕", 3},                               // 3.0
	{"mixed script", "Go语言", 5},                       // 1.3 + 3.0
	{"emoji is a symbol", "🙂", 1},                     // 0.5
	{"invalid UTF-8 byte is a symbol", "\xff", 1},     // 0.5
	{"shell command", "rm -rf /tmp/x && echo ok", 11}, // 6 × 1.3 + 5 × 0.5
}

func TestEstimateTokens(t *testing.T) {
	for _, tc := range estimateCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := EstimateTokens(tc.in); got != tc.want {
				t.Errorf("EstimateTokens(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzEstimateTokens(f *testing.F) {
	for _, tc := range estimateCases {
		f.Add(tc.in, tc.in)
	}
	f.Add("abcdefg", "h")
	f.Add("中文", "english words")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) {
			// Appending bytes may complete a broken character; the
			// property holds for text.
			a = strings.ToValidUTF8(a, "\uFFFD")
		}
		ea, eab := EstimateTokens(a), EstimateTokens(a+b)
		if ea < 0 || eab < 0 {
			t.Fatalf("negative estimate: %d, %d", ea, eab)
		}
		if eab < ea {
			t.Fatalf("appending %q to %q lowered the estimate from %d to %d", b, a, ea, eab)
		}
		// Counting backwards gives the same total, which shorten relies on.
		if got := suffixWithin(a, unitsOf(a)); got != 0 {
			t.Fatalf("suffixWithin(whole estimate) = %d, want 0", got)
		}
		if got := prefixWithin(a, unitsOf(a)); got != len(a) {
			t.Fatalf("prefixWithin(whole estimate) = %d, want %d", got, len(a))
		}
	})
}

var shortenCases = []struct {
	name string
	in   string
	max  int
}{
	{"fits", "short text", 10},
	{"English lines", strings.Repeat("line of output number\n", 200), 60},
	{"Chinese", strings.Repeat("这是一个很长的中文输出。", 300), 80},
	{"one long line", strings.Repeat("x", 5000), 50},
	{"mixed", strings.Repeat("错误 error: 文件不存在 file not found\n", 100), 100},
	{"tiny cap", strings.Repeat("word ", 100), 10},
	{"below marker size", strings.Repeat("word ", 100), 3},
}

func TestShorten(t *testing.T) {
	for _, tc := range shortenCases {
		t.Run(tc.name, func(t *testing.T) {
			got := shorten(tc.in, tc.max)
			if EstimateTokens(tc.in) <= tc.max {
				if got != tc.in {
					t.Fatalf("text within the cap was changed to %q", got)
				}
				return
			}
			if !strings.Contains(got, " tokens left out …]") {
				t.Fatalf("no marker in %q", got)
			}
			if tc.max >= 10 {
				if e := EstimateTokens(got); e > tc.max {
					t.Fatalf("estimate %d exceeds cap %d:\n%s", e, tc.max, got)
				}
				head, _, _ := strings.Cut(got, "[… ")
				if !strings.HasPrefix(tc.in, strings.TrimSuffix(head, "\n")) {
					t.Fatalf("head %q is not a prefix of the input", head)
				}
				_, tail, _ := strings.Cut(got, " left out …]")
				if !strings.HasSuffix(tc.in, strings.TrimPrefix(tail, "\n")) {
					t.Fatalf("tail %q is not a suffix of the input", tail)
				}
			}
		})
	}
}

func TestShortenKeepsTokensNotCharacters(t *testing.T) {
	// The same cap keeps about 1.5 times fewer Han characters than letters
	// of short English words would allow: the cut is by estimate.
	zh := shorten(strings.Repeat("中", 10000), 200)
	n := strings.Count(zh, "中")
	// 200 tokens minus the marker's reserve of 10 is 190, i.e. 126 Han characters.
	if n < 110 || n > 127 {
		t.Fatalf("kept %d Han characters under a 200-token cap, want about 126", n)
	}
}

func FuzzShorten(f *testing.F) {
	for _, tc := range shortenCases {
		f.Add(tc.in, tc.max)
	}
	f.Fuzz(func(t *testing.T, s string, maxTokens int) {
		if maxTokens < 10 || maxTokens > 1<<20 {
			return
		}
		got := shorten(s, maxTokens)
		if e := EstimateTokens(got); e > maxTokens {
			t.Fatalf("estimate %d exceeds cap %d", e, maxTokens)
		}
		if got != s && utf8.ValidString(s) && EstimateTokens(s) <= maxTokens {
			t.Fatalf("text within the cap was changed")
		}
		if !utf8.ValidString(got) {
			t.Fatalf("result is not valid UTF-8")
		}
	})
}
