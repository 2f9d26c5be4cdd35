package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestListView(t *testing.T) {
	var l listView
	if _, ok := l.at(); ok {
		t.Fatal("an empty list has a selection")
	}
	l.move(1)
	if _, ok := l.at(); ok || l.sel != 0 {
		t.Fatalf("moving in an empty list: %+v", l)
	}
	l.resize(3)
	l.move(5)
	if i, ok := l.at(); !ok || i != 2 {
		t.Fatalf("moved past the end: %+v", l)
	}
	l.resize(2) // a row went away: the selection stays on a row
	if i, ok := l.at(); !ok || i != 1 {
		t.Fatalf("after shrinking: %+v", l)
	}
	l.move(-9)
	if i, _ := l.at(); i != 0 {
		t.Fatalf("moved before the start: %+v", l)
	}
	for _, c := range []struct {
		share float64
		want  string
	}{{0, "[░░░░░░░░░░]   0%"}, {0.5, "[█████░░░░░]  50%"}, {0.85, "[█████████░]  85% ≥80%"}, {1.7, "[██████████] 170% OVER"}, {-1, "[░░░░░░░░░░] -100%"}} {
		if got := ansi.Strip(gauge(c.share, 10)); got != c.want {
			t.Errorf("gauge(%v) = %q, want %q", c.share, got, c.want)
		}
	}
	var lines []string
	renderRows(func(s string) { lines = append(lines, ansi.Strip(s)) }, []listRow{{line: "a", sub: []string{"a1"}, open: []string{"a-open"}}, {line: "b", open: []string{"b-open"}}}, 1, "none")
	if got := strings.Join(lines, "|"); got != "  a|    a1|▶ b|    b-open" {
		t.Fatalf("rows %q", got)
	}
}
