package memsqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/plugin"
)

// searchData is testdata/search.json: a corpus and queries over it.
type searchData struct {
	Items []struct {
		Name     string   `json:"name"`
		Category string   `json:"category"`
		Content  string   `json:"content"`
		Tags     []string `json:"tags"`
	} `json:"items"`
	Cases []searchCase `json:"cases"`
}

// searchCase is one query and what its result must be. Items are named by
// their corpus names.
type searchCase struct {
	Name  string   `json:"name"`
	Query string   `json:"query"`
	First string   `json:"first"` // the best result
	Has   []string `json:"has"`   // in the result
	Only  []string `json:"only"`  // exactly these, in any order
	Order []string `json:"order"` // the result starts with these, in order
	None  bool     `json:"none"`  // the result is empty
}

func loadSearchData(t testing.TB) searchData {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "search.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d searchData
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// openCorpus opens a new memory file holding d's items, saved a minute apart
// in file order, and returns it with the names of the items by ID.
func openCorpus(t testing.TB, d searchData) (*Memory, map[int64]string) {
	t.Helper()
	m := openTemp(t)
	clk := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	m.clock = clk
	names := map[int64]string{}
	for _, it := range d.Items {
		clk.Advance(time.Minute)
		id, err := m.Save(context.Background(), plugin.MemoryItem{Category: it.Category, Content: it.Content, Tags: it.Tags})
		if err != nil {
			t.Fatalf("save %s: %v", it.Name, err)
		}
		names[id] = it.Name
	}
	return m, names
}

func TestSearchCases(t *testing.T) {
	d := loadSearchData(t)
	m, names := openCorpus(t, d)
	for _, tc := range d.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			items, err := m.Search(context.Background(), tc.Query, 20)
			if err != nil {
				t.Fatalf("Search(%q): %v", tc.Query, err)
			}
			var got []string
			for _, it := range items {
				got = append(got, names[it.ID])
			}
			checked := false
			if tc.None {
				checked = true
				if len(got) != 0 {
					t.Errorf("Search(%q) = %v, want nothing", tc.Query, got)
				}
			}
			if tc.First != "" {
				checked = true
				if len(got) == 0 || got[0] != tc.First {
					t.Errorf("Search(%q) = %v, want %s first", tc.Query, got, tc.First)
				}
			}
			for _, h := range tc.Has {
				checked = true
				if !slices.Contains(got, h) {
					t.Errorf("Search(%q) = %v, want it to hold %s", tc.Query, got, h)
				}
			}
			if tc.Only != nil {
				checked = true
				a, b := slices.Clone(got), slices.Clone(tc.Only)
				slices.Sort(a)
				slices.Sort(b)
				if !slices.Equal(a, b) {
					t.Errorf("Search(%q) = %v, want exactly %v", tc.Query, got, tc.Only)
				}
			}
			if tc.Order != nil {
				checked = true
				if len(got) < len(tc.Order) || !slices.Equal(got[:len(tc.Order)], tc.Order) {
					t.Errorf("Search(%q) = %v, want it to start with %v", tc.Query, got, tc.Order)
				}
			}
			if !checked {
				t.Fatal("case checks nothing")
			}
			checkResult(t, tc.Query, items, 20)
		})
	}
}

// checkResult checks what every result must satisfy: at most limit items,
// no repeats, positive scores best first, stored fields filled.
func checkResult(t *testing.T, query string, items []plugin.MemoryItem, limit int) {
	t.Helper()
	if len(items) > limit {
		t.Errorf("Search(%q): %d items, limit %d", query, len(items), limit)
	}
	seen := map[int64]bool{}
	for i, it := range items {
		if seen[it.ID] {
			t.Errorf("Search(%q): item %d twice", query, it.ID)
		}
		seen[it.ID] = true
		if it.Score <= 0 {
			t.Errorf("Search(%q): item %d has score %v", query, it.ID, it.Score)
		}
		if i > 0 && it.Score > items[i-1].Score {
			t.Errorf("Search(%q): score %v after %v", query, it.Score, items[i-1].Score)
		}
		if it.Content == "" || it.Category == "" || it.CreatedAt.IsZero() {
			t.Errorf("Search(%q): item not filled: %+v", query, it)
		}
	}
}

func TestSearchScores(t *testing.T) {
	d := loadSearchData(t)
	m, names := openCorpus(t, d)
	tests := []struct {
		name, query string
		index       bool // the first hit comes from the index (score > 1)
	}{
		{"index hit", "运行测试", true},
		{"substring hit", "偏好", false},
		{"substring pieces", "测试的", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			items, err := m.Search(context.Background(), tc.query, 0)
			if err != nil || len(items) == 0 {
				t.Fatalf("Search(%q) = %v, %v", tc.query, items, err)
			}
			if names[items[0].ID] != "pytest" {
				t.Fatalf("Search(%q) first = %s", tc.query, names[items[0].ID])
			}
			if s := items[0].Score; tc.index != (s > 1) || s <= 0 || (!tc.index && s > 0.5) {
				t.Errorf("Search(%q) score %v, index hit %v", tc.query, s, tc.index)
			}
		})
	}
}

func TestSearchLimit(t *testing.T) {
	m := openTemp(t)
	ctx := context.Background()
	for i := range 30 {
		if _, err := m.Save(ctx, plugin.MemoryItem{Content: fmt.Sprintf("note %d about caching", i)}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name        string
		query       string
		limit, want int
	}{
		{"default", "caching", 0, DefaultLimit},
		{"negative", "caching", -3, DefaultLimit},
		{"small", "caching", 2, 2},
		{"large", "caching", 25, 25},
		{"capped", "caching", 1000, 30},
		{"substring default", "ca", 0, DefaultLimit},
		{"substring small", "ca", 3, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			items, err := m.Search(ctx, tc.query, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != tc.want {
				t.Errorf("Search(%q, %d): %d items, want %d", tc.query, tc.limit, len(items), tc.want)
			}
			checkResult(t, tc.query, items, max(tc.want, 1))
		})
	}
}

func TestSplitQuery(t *testing.T) {
	tests := []struct {
		name     string
		query    string
		fts, sub []string
	}{
		{"empty", "", nil, nil},
		{"english", "Run PyTest now", []string{"run", "pytest", "now"}, nil},
		{"short english", "go is ok", nil, []string{"go", "is", "ok"}},
		{"single letters dropped", "a pytest b", []string{"pytest"}, nil},
		{"single letter alone", "a b", nil, []string{"a", "b"}},
		{"han run whole", "运行测试", []string{"运行测试", "运行测", "行测试"}, []string{"运行", "行测", "测试"}},
		{"han three", "测试的", []string{"测试的"}, []string{"测试", "试的"}},
		{"han two", "偏好", nil, []string{"偏好"}},
		{"han one", "猫", nil, []string{"猫"}},
		{"script change splits", "pytest运行", []string{"pytest"}, []string{"运行"}},
		{"punctuation splits", "a.b-c,运行，测试。", nil, []string{"运行", "测试"}},
		{"fts syntax is not kept", `"a" OR b* NEAR(c, d) col:^x`, []string{"near", "col"}, []string{"or"}},
		{"quotes", `"pytest"`, []string{"pytest"}, nil},
		{"underscore kept", "OVERSEER_HOME", []string{"overseer_home"}, nil},
		{"repeats", "Go go GO", nil, []string{"go"}},
		{"combining mark", "cafe\u0301 x", []string{"cafe\u0301"}, nil},
		{"invalid utf8 splits", "abc\xffdef", []string{"abc", "def"}, nil},
		{"nul splits", "abc\x00def", []string{"abc", "def"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := splitQuery(tc.query)
			if !slices.Equal(got.fts, tc.fts) || !slices.Equal(got.sub, tc.sub) {
				t.Errorf("splitQuery(%q) = fts %q sub %q, want fts %q sub %q", tc.query, got.fts, got.sub, tc.fts, tc.sub)
			}
		})
	}
}

func TestSplitQueryCaps(t *testing.T) {
	long := strings.Repeat("运行测试部署审批生产环境", 40)
	got := splitQuery(long + " " + strings.Repeat("word ", 200))
	if len(got.fts) > maxFTSTerms || len(got.sub) > maxSubTerms {
		t.Fatalf("%d index terms, %d substring terms", len(got.fts), len(got.sub))
	}
	if got.fts[0] != strings.ToLower(long) {
		t.Errorf("first index term %q, want the whole run", got.fts[0])
	}
}

func TestFTSExprAndLike(t *testing.T) {
	tests := []struct{ name, in, expr, like string }{
		{"plain", "abc", `"abc"`, `%abc%`},
		{"quote", `a"b`, `"a""b"`, `%a"b%`},
		{"like specials", `5%_\`, `"5%_\"`, `%5\%\_\\%`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ftsExpr([]string{tc.in}); got != tc.expr {
				t.Errorf("ftsExpr = %s, want %s", got, tc.expr)
			}
			if got := likePattern(tc.in); got != tc.like {
				t.Errorf("likePattern = %s, want %s", got, tc.like)
			}
		})
	}
	if got := ftsExpr([]string{"a", "b"}); got != `"a" OR "b"` {
		t.Errorf("ftsExpr = %s", got)
	}
}

// FuzzSearch checks that no query makes Search fail, panic or break its
// result's invariants, on the corpus of testdata/search.json.
func FuzzSearch(f *testing.F) {
	d := loadSearchData(f)
	for _, tc := range d.Cases {
		f.Add(tc.Query, 5)
	}
	f.Add(`"a" OR b*`, 0)
	f.Add(`NEAR(`, 3)
	f.Add("\x00\xff\"'%_\\", 100)
	f.Add(strings.Repeat("运行测试", 300), 7)
	m, _ := openCorpus(f, d)
	f.Fuzz(func(t *testing.T, query string, limit int) {
		items, err := m.Search(context.Background(), query, limit)
		if err != nil {
			t.Fatalf("Search(%q, %d): %v", query, limit, err)
		}
		want := limit
		if want <= 0 {
			want = DefaultLimit
		}
		checkResult(t, query, items, min(want, MaxLimit))
		if strings.TrimSpace(query) == "" && len(items) != 0 {
			t.Errorf("Search(%q) = %d items, want none", query, len(items))
		}
	})
}

// benchVocab is the vocabulary of the benchmark corpus: made-up English
// words and Chinese words drawn from common characters, with the words the
// benchmark queries for at fixed ranks (rank 0 is the most frequent).
func benchVocab() []string {
	rng := rand.New(rand.NewPCG(3, 4))
	syl := strings.Fields("ba ce di fo gu ka le mi no pu ra se ti vo zu tra ble com pre sta ing ent ion")
	han := []rune("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严龙飞")
	seen := map[string]bool{}
	var v []string
	for len(v) < 3000 {
		var w string
		if len(v)%3 == 2 {
			n := 2 + rng.IntN(2)
			for range n {
				w += string(han[rng.IntN(len(han))])
			}
		} else {
			n := 2 + rng.IntN(2)
			for range n {
				w += syl[rng.IntN(len(syl))]
			}
		}
		if !seen[w] {
			seen[w] = true
			v = append(v, w)
		}
	}
	for rank, w := range map[int]string{5: "the", 40: "部署", 200: "pytest", 300: "生产环境", 500: "timeout", 800: "偏好", 1200: "go"} {
		v[rank] = w
	}
	return v
}

// BenchmarkSearch searches 10,000 items of mixed English and Chinese text
// whose words follow a Zipf distribution, as words of real text do.
func BenchmarkSearch(b *testing.B) {
	m := openTemp(b)
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := benchVocab()
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	ctx := context.Background()
	tx, err := m.w.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		ws := make([]string, 8+rng.IntN(24))
		for j := range ws {
			ws[j] = vocab[zipf.Uint64()]
		}
		tags, _ := json.Marshal([]string{vocab[zipf.Uint64()]})
		if _, err := tx.ExecContext(ctx, `INSERT INTO memories (category, content, tags, source, created_at) VALUES ('fact', ?, ?, '', ?)`,
			strings.Join(ws, " "), string(tags), fmtTime(time.Unix(int64(i), 0))); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	queries := []struct{ name, q string }{
		{"english", "pytest timeout"},
		{"english_common", "the"},
		{"chinese", "生产环境部署"},
		{"short", "偏好 go"},
		{"goal", "请帮我用 pytest 运行测试并修复数据库迁移的超时问题, then deploy the release"},
		{"miss", "xyzzy"},
	}
	for _, q := range queries {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				items, err := m.Search(ctx, q.q, 5)
				if err != nil {
					b.Fatal(err)
				}
				if len(items) == 0 && q.name != "miss" {
					b.Fatalf("Search(%q) found nothing", q.q)
				}
			}
		})
	}
}
