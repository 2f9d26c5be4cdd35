package firewall_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/firewall"
)

func TestDuplicateTextBlocks(t *testing.T) {
	cases := []struct {
		name   string
		blocks []string
		want   []int
	}{
		{name: "none", blocks: nil, want: nil},
		{name: "distinct", blocks: []string{"The build passes.", "Next I will run the linter."}, want: nil},
		{
			name:   "verdict repeated with different white space",
			blocks: []string{`{"verdict":"pass","score":0.9}`, "\n" + `{"verdict":"pass","score":0.9}` + "  \n"},
			want:   []int{1},
		},
		{
			name:   "chinese repeated three times",
			blocks: []string{"报价：首重 1 公斤 12 元。", "报价：首重 1 公斤 12 元。", "其他说明", " 报价：首重 1 公斤 12 元。"},
			want:   []int{1, 3},
		},
		{name: "blank blocks are not duplicates", blocks: []string{"", "  ", "\n", "text"}, want: nil},
		{name: "case differs", blocks: []string{"Done.", "done."}, want: nil},
		{name: "inner white space differs", blocks: []string{"a  b", "a b"}, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := firewall.DuplicateTextBlocks(tc.blocks); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// healthyThinking is ordinary reasoning, longer than the window.
const healthyThinking = `The user wants the failing test fixed. First I should read the test file to see what it
expects, then the implementation. The error says "expected 3, got 2", which suggests an off-by-one in the loop
that counts segments. Let me check whether the loop uses < or <= and whether the last segment is appended
after the loop ends. If the trailing segment is dropped when the input does not end with a separator, that
explains the count. I will propose an edit that appends the remainder, then run the package tests again to
confirm nothing else breaks. I should also consider empty input: it must return zero segments, not one.
`

const chineseThinking = `用户希望修复运费计算。首先需要确认首重和续重的规则：首重 1 公斤按 12 元计算，续重每公斤 5 元。
然后检查输入的重量是否包含包装，是否需要向上取整。如果重量是 2.3 公斤，应当按 3 公斤计算，即 12 + 2×5 = 22 元。
接着要考虑偏远地区的附加费，以及超过 30 公斤时是否改用大件物流。最后把结果整理成表格，交给用户确认。`

func TestThinkingLoop(t *testing.T) {
	cases := []struct {
		name     string
		thinking string
		want     bool
	}{
		{name: "empty", thinking: "", want: false},
		{name: "short loop is skipped", thinking: strings.Repeat("首 重 1 公斤 |", 30), want: false},
		{name: "healthy english", thinking: strings.Repeat(healthyThinking, 3), want: false},
		{name: "healthy chinese", thinking: strings.Repeat(chineseThinking, 3), want: false},
		{name: "chinese loop after reasoning", thinking: chineseThinking + strings.Repeat("首 重 1 公斤 |", 120), want: true},
		{name: "english token loop", thinking: healthyThinking + strings.Repeat("wait, ", 400), want: true},
		{name: "single rune", thinking: strings.Repeat(".", 2000), want: true},
		{name: "loop ended by healthy tail", thinking: strings.Repeat("ok ", 1000) + healthyThinking, want: false},
		{name: "exactly the window", thinking: strings.Repeat("a", firewall.ThinkingWindow), want: true},
		{name: "one byte short of the window", thinking: strings.Repeat("a", firewall.ThinkingWindow-1), want: false},
		{name: "window starts mid rune", thinking: "x" + strings.Repeat("公", 700), want: true},
		{name: "invalid bytes", thinking: strings.Repeat("\xff\xfe", 600), want: true},
		{name: "random-ish bytes", thinking: strings.Repeat(string(rune(0x4e00))+"abcdefghijklmnopqrstuvwxyz0123456789", 40), want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := firewall.ThinkingLoop(tc.thinking); got != tc.want {
				t.Fatalf("ThinkingLoop = %v, want %v (len %d)", got, tc.want, len(tc.thinking))
			}
		})
	}
}

func FuzzThinkingLoop(f *testing.F) {
	f.Add(strings.Repeat("首 重 1 公斤 |", 120))
	f.Add(strings.Repeat(healthyThinking, 3))
	f.Add(strings.Repeat(chineseThinking, 3))
	f.Add(strings.Repeat("\xff", 1100))
	f.Add("short")
	f.Fuzz(func(t *testing.T, s string) {
		got := firewall.ThinkingLoop(s)
		if len(s) < firewall.ThinkingWindow && got {
			t.Fatalf("short block (%d bytes) flagged", len(s))
		}
		// Only the last window counts: a prefix never changes the answer
		// once the block is long enough.
		if len(s) >= firewall.ThinkingWindow && firewall.ThinkingLoop("前缀 prefix "+s) != got {
			t.Fatalf("prefix changed the answer for %q", s)
		}
	})
}

func TestNextMaxTokens(t *testing.T) {
	cases := []struct {
		name              string
		current           int
		truncated, raised bool
		want              int
		wantRaised        bool
	}{
		{name: "not truncated", current: 8192, want: 8192},
		{name: "first cut off doubles", current: 8192, truncated: true, want: 16384, wantRaised: true},
		{name: "second cut off keeps", current: 16384, truncated: true, raised: true, want: 16384, wantRaised: true},
		{name: "raised and not truncated", current: 16384, raised: true, want: 16384, wantRaised: true},
		{name: "capped", current: 40000, truncated: true, want: firewall.MaxTokensCap, wantRaised: true},
		{name: "at cap spends the raise", current: firewall.MaxTokensCap, truncated: true, want: firewall.MaxTokensCap, wantRaised: true},
		{name: "above cap never lowered", current: 100000, truncated: true, want: 100000, wantRaised: true},
		{name: "unset uses default", current: 0, truncated: true, want: 2 * firewall.DefaultMaxTokens, wantRaised: true},
		{name: "negative uses default", current: -5, truncated: true, want: 2 * firewall.DefaultMaxTokens, wantRaised: true},
		{name: "small budget", current: 256, truncated: true, want: 512, wantRaised: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, raised := firewall.NextMaxTokens(tc.current, tc.truncated, tc.raised)
			if got != tc.want || raised != tc.wantRaised {
				t.Fatalf("NextMaxTokens(%d, %v, %v) = %d, %v; want %d, %v",
					tc.current, tc.truncated, tc.raised, got, raised, tc.want, tc.wantRaised)
			}
		})
	}
}

func BenchmarkThinkingLoop(b *testing.B) {
	s := strings.Repeat(chineseThinking, 20)
	b.ReportAllocs()
	for b.Loop() {
		firewall.ThinkingLoop(s)
	}
}
