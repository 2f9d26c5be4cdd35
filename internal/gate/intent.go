package gate

import (
	"fmt"
	"strings"
	"sync"
	"unicode"
)

// Intent is what a person's free-text answer means.
type Intent uint8

const (
	// IntentUnknown: the text could not be read with confidence. The caller
	// keeps waiting or asks again; it never approves on doubt.
	IntentUnknown Intent = iota
	// IntentApprove: go ahead with the action.
	IntentApprove
	// IntentReject: do not run this action.
	IntentReject
	// IntentAbort: stop the whole task.
	IntentAbort
	// IntentDone: the task is finished.
	IntentDone
)

var intentNames = [...]string{"unknown", "approve", "reject", "abort", "done"}

// String returns the intent's name.
func (i Intent) String() string {
	if int(i) < len(intentNames) {
		return intentNames[i]
	}
	return fmt.Sprintf("intent(%d)", uint8(i))
}

// Valid reports whether i is one of the defined intents.
func (i Intent) Valid() bool { return int(i) < len(intentNames) }

// cue is what one recognised phrase contributes to an answer's intent.
type cue uint8

const (
	cueNone     cue = iota
	cueApprove      // a clear yes
	cueWeak         // a yes that is only trusted in a short answer (好, 行, fine)
	cueReject       // an explicit no
	cueNegate       // a negator (not, 没): turns any yes or done into a no
	cueAbort        // stop the whole task
	cueDone         // the task is finished
	cueQuestion     // the person is asking, not answering
	cueNeutral      // recognised, means nothing by itself ("not sure", 不知道)
)

// Limits on what still counts as an answer.
const (
	// maxWeakTokens: a weak yes counts only in an answer this short.
	maxWeakTokens = 4
	// maxApproveTokens: a longer text is prose, not a yes; only its
	// objections (reject, abort) are heard.
	maxApproveTokens = 32
	// maxPhraseTokens is the longest phrase in the tables.
	maxPhraseTokens = 4
	// maxIntentRunes bounds the work on huge inputs; the rest is ignored.
	maxIntentRunes = 4096
)

// phraseTable lists the phrases by cue. English words are matched whole;
// Chinese phrases are matched character by character, longest first, so a
// longer phrase (没问题, 不确定) wins over the single characters inside it.
var phraseTable = map[cue][]string{
	cueApprove: {
		"yes", "y", "yep", "yeah", "yup", "yea", "ok", "okay", "okey", "sure", "sure thing", "of course",
		"approve", "approved", "allow", "allowed", "accept", "accepted", "proceed", "continue",
		"confirm", "confirmed", "affirmative", "lgtm", "go ahead", "go on", "go for it", "do it",
		"sounds good", "looks good", "ship it", "alright", "all right", "carry on", "no problem",
		"no worries", "👍", "👌", "✅", "✔",
		"好的", "可以", "可以的", "同意", "批准", "允许", "确认", "确定", "没问题", "没有问题", "继续",
		"是的", "对的", "通过", "准了", "放行", "执行", "就这么办", "照做", "不错",
	},
	cueWeak: {
		"fine", "good", "好", "行", "是", "对",
	},
	cueReject: {
		"no", "n", "nope", "nah", "deny", "denied", "reject", "rejected", "refuse", "decline", "declined",
		"never", "don't", "dont", "do not", "stop that", "no way", "not yet", "not allowed", "disallow",
		"forbid", "forbidden", "veto", "👎", "❌", "✖", "✗",
		"不", "不行", "不要", "不可以", "拒绝", "否", "别", "不同意", "不允许", "不准", "禁止", "驳回",
		"否决", "不用", "不好", "没门", "不能", "先别",
	},
	cueNegate: {
		"not", "cannot", "can't", "cant", "won't", "shouldn't", "isn't", "wasn't", "doesn't", "didn't",
		"没", "没有", "未",
	},
	cueAbort: {
		"abort", "cancel", "cancelled", "canceled", "stop", "quit", "halt", "kill it", "terminate",
		"exit", "🛑",
		"停止", "中止", "终止", "取消", "算了", "停", "停下", "住手", "退出", "放弃", "打住",
	},
	cueDone: {
		"done", "finished", "finish", "complete", "completed", "that's all", "thats all", "that is all",
		"all done",
		"完成", "完成了", "好了", "结束", "结束了", "搞定", "搞定了", "做完了", "完事", "可以了",
	},
	cueQuestion: {
		"why", "what", "how", "really",
		"吗", "呢", "什么", "为什么", "怎么", "是不是", "好不好", "可不可以", "行不行", "要不要",
		"对不对", "能不能",
	},
	cueNeutral: {
		"not sure", "no idea", "don't know", "dont know", "wait", "hold on", "hang on",
		"不确定", "不知道", "不清楚", "不一定", "不过", "不然", "好像", "等等", "等一下", "稍等",
	},
}

// phrases maps a phrase's tokens, joined by a space, to its cue. It is
// built on first use, not at every process's start.
var phrases = sync.OnceValue(func() map[string]cue {
	m := map[string]cue{}
	for c, list := range phraseTable {
		for _, p := range list {
			toks, _ := tokenize(p)
			key := strings.Join(toks, " ")
			if key == "" || len(toks) > maxPhraseTokens {
				panic(fmt.Sprintf("gate: bad intent phrase %q", p))
			}
			if prev, dup := m[key]; dup && prev != c {
				panic(fmt.Sprintf("gate: intent phrase %q listed twice", p))
			}
			m[key] = c
		}
	}
	return m
})

// foldRune maps full-width ASCII to ASCII and typographic apostrophes to '.
func foldRune(r rune) rune {
	switch {
	case r >= 0xFF01 && r <= 0xFF5E:
		return unicode.ToLower(r - 0xFEE0)
	case r == '\u2019' || r == '\u2018' || r == '\u02BC' || r == '`':
		return '\''
	}
	return unicode.ToLower(r)
}

// tokenize splits text into lower-case words, single Han characters and
// single symbols (emoji), and reports whether it contains a question mark.
func tokenize(text string) (toks []string, question bool) {
	var word []rune
	flush := func() {
		w := strings.Trim(string(word), "'")
		if w != "" {
			toks = append(toks, w)
		}
		word = word[:0]
	}
	n := 0
	for _, r := range text {
		if n++; n > maxIntentRunes {
			break
		}
		r = foldRune(r)
		switch {
		case r == '?':
			question = true
			flush()
		case unicode.Is(unicode.Han, r):
			flush()
			toks = append(toks, string(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r) || (r == '\'' && len(word) > 0):
			word = append(word, r)
		case unicode.Is(unicode.So, r):
			flush()
			toks = append(toks, string(r))
		default: // spaces, punctuation, skin-tone modifiers, variation selectors
			flush()
		}
	}
	flush()
	return toks, question
}

// ParseIntent reads a person's free-text answer, in English or Chinese, for
// its intent. It is deliberately conservative:
//
//   - abort beats everything ("no, stop" → abort);
//   - an explicit no, or a negator next to a yes, beats approval
//     ("don't do it", "不要执行", "not ok" → reject);
//   - a question is not an answer ("ok?", "可以吗" → unknown);
//   - done beats a plain yes ("ok, done" → done);
//   - single-character or vague yeses (好, 行, fine) count only in a short
//     answer, and a long text is never read as a yes;
//   - anything else is IntentUnknown, never a yes on doubt.
func ParseIntent(text string) Intent {
	toks, question := tokenize(text)
	var seen [cueNeutral + 1]bool
	for i := 0; i < len(toks); {
		n, c := longestPhrase(toks[i:])
		if n == 0 {
			i++
			continue
		}
		seen[c] = true
		i += n
	}
	if seen[cueWeak] && len(toks) <= maxWeakTokens {
		seen[cueApprove] = true
	}
	yes := seen[cueApprove] || seen[cueDone]
	switch {
	case seen[cueAbort]:
		return IntentAbort
	case seen[cueReject]:
		return IntentReject
	case seen[cueNegate] && (yes || seen[cueWeak]):
		return IntentReject
	case question || seen[cueQuestion]:
		return IntentUnknown
	case len(toks) > maxApproveTokens:
		return IntentUnknown
	case seen[cueDone]:
		return IntentDone
	case seen[cueApprove]:
		return IntentApprove
	}
	return IntentUnknown
}

// longestPhrase returns the length and cue of the longest phrase at the start
// of toks, or 0 when none starts there.
func longestPhrase(toks []string) (int, cue) {
	for n := min(maxPhraseTokens, len(toks)); n > 0; n-- {
		if c, ok := phrases()[strings.Join(toks[:n], " ")]; ok {
			return n, c
		}
	}
	return 0, cueNone
}
