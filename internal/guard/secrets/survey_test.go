package secrets

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// surveyRef is the survey written plainly, loop by loop: the branch-free
// surveyText must agree with it on every text.
func surveyRef(t string) survey {
	var sv survey
	n := len(t)
	for i := 0; i < n; {
		start, cls := i, byte(0xff)
		for i < n && runClass[t[i]] != 0 {
			cls &= runClass[t[i]]
			i++
		}
		if i-start >= minRun {
			sv.runs = append(sv.runs, run{start, i, cls})
		}
		for i < n && runClass[t[i]] == 0 {
			c := t[i]
			switch {
			case c == '%':
				sv.percent = sv.percent || i+2 < n && isHex(t[i+1]) && isHex(t[i+2])
			case c == '\\':
				sv.escape = sv.escape || i+1 < n && strings.IndexByte("uUx/0123", t[i+1]) >= 0
			case c == '&':
				sv.escape = sv.escape || i+2 < n && (t[i+1] == '#' || isAlnum(t[i+1]) && strings.IndexByte(t[i+1:min(n, i+9)], ';') > 0)
			case c >= 0x80 && !sv.nonASCII:
				r, _ := utf8.DecodeRuneInString(t[i:])
				sv.nonASCII = foldable(r)
			}
			i++
		}
	}
	return sv
}

func checkSurvey(t *testing.T, text string) {
	t.Helper()
	got, want := surveyText(text), surveyRef(text)
	if len(got.runs) == 0 && len(want.runs) == 0 {
		got.runs, want.runs = nil, nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("survey of %q:\n got %+v\nwant %+v", text, got, want)
	}
}

func TestSurveyMatchesReference(t *testing.T) {
	for _, s := range append(fuzzSeeds,
		"abcdefghijkl", "abcdefghijk", " abcdefghijkl ", "0123456789abcdef-0123", "x%4", "a&amp;b", "\\",
		"ＡＫＩＡ ghp_R8x2Kq9LmN4vB7cT1yH6jD3fG5sA0wE2zP8u", benchBody(64<<10)) {
		checkSurvey(t, s)
	}
}

func FuzzSurvey(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(checkSurvey)
}
