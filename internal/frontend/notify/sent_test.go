package notify

import "testing"

func TestSentIndex(t *testing.T) {
	x := newSentIndex[int64, *tgSent]()
	a1, a2, b := &tgSent{id: 1}, &tgSent{id: 2}, &tgSent{id: 3}
	x.add("apr_a", 1, a1)
	x.add("apr_a", 2, a2)
	x.add("apr_b", 3, b)
	if x.get(2) != a2 || x.get(9) != nil {
		t.Fatal("get")
	}
	if got := x.take("apr_a"); len(got) != 2 || got[0] != a1 || got[1] != a2 {
		t.Fatalf("take %v", got)
	}
	if x.get(1) != nil || x.get(2) != nil || x.get(3) != b || len(x.take("apr_a")) != 0 {
		t.Fatal("a settled approval's messages are forgotten, the others kept")
	}
}
