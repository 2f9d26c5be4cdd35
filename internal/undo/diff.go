package undo

import (
	"fmt"
	"strings"
)

// opKind is one line's fate in a diff.
type opKind byte

const (
	opEqual  opKind = ' '
	opDelete opKind = '-'
	opInsert opKind = '+'
)

type diffOp struct {
	kind opKind
	line string
}

// diffLines computes a shortest edit script from a to b with Myers'
// algorithm. It gives up (ok=false) when more than maxEdits lines differ,
// so a huge rewrite costs bounded time and memory.
func diffLines(a, b []string, maxEdits int) (ops []diffOp, ok bool) {
	n, m := len(a), len(b)
	limit := min(maxEdits, n+m)
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int // trace[d] is v[-d..d] after step d
	found := false
	for d := 0; d <= limit && !found; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = true
				break
			}
		}
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
	}
	if !found {
		return nil, false
	}
	at := func(d, k int) int { return trace[d][k+d] }
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		k := x - y
		var prevK int
		if k == -d || (k != d && at(d-1, k-1) < at(d-1, k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(d-1, prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			ops = append(ops, diffOp{opEqual, a[x-1]})
			x--
			y--
		}
		if prevK == k+1 {
			ops = append(ops, diffOp{opInsert, b[y-1]})
			y--
		} else {
			ops = append(ops, diffOp{opDelete, a[x-1]})
			x--
		}
	}
	for x > 0 && y > 0 {
		ops = append(ops, diffOp{opEqual, a[x-1]})
		x--
		y--
	}
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	return ops, true
}

// splitLines splits s into lines, each keeping its "\n"; a last line
// without one is marked the way diff(1) does.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	} else {
		lines[len(lines)-1] += "\n\\ No newline at end of file\n"
	}
	return lines
}

// maxDiffEdits bounds the work of one diff.
const maxDiffEdits = 2000

// unifiedDiff returns a unified diff (3 lines of context) from a to b, or
// "" when they are equal.
func unifiedDiff(aName, bName, a, b string) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	ops, ok := diffLines(al, bl, maxDiffEdits)
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", aName, bName)
	if !ok {
		fmt.Fprintf(&sb, "@@ too many changes to show: %d lines before, %d lines after @@\n", len(al), len(bl))
		return sb.String()
	}
	const ctx = 3
	// Positions of changed ops.
	var changes []int
	for i, o := range ops {
		if o.kind != opEqual {
			changes = append(changes, i)
		}
	}
	// aAt[i], bAt[i]: line numbers (0-based) in a and b before op i.
	aAt := make([]int, len(ops)+1)
	bAt := make([]int, len(ops)+1)
	for i, o := range ops {
		aAt[i+1], bAt[i+1] = aAt[i], bAt[i]
		if o.kind != opInsert {
			aAt[i+1]++
		}
		if o.kind != opDelete {
			bAt[i+1]++
		}
	}
	for i := 0; i < len(changes); {
		start := max(0, changes[i]-ctx)
		j := i
		for j+1 < len(changes) && changes[j+1]-changes[j] <= 2*ctx {
			j++
		}
		end := min(len(ops), changes[j]+ctx+1)
		aLen, bLen := aAt[end]-aAt[start], bAt[end]-bAt[start]
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunkRange(aAt[start], aLen), hunkRange(bAt[start], bLen))
		for _, o := range ops[start:end] {
			sb.WriteByte(byte(o.kind))
			sb.WriteString(o.line)
		}
		i = j + 1
	}
	return sb.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// UnifiedDiff returns the unified diff from a to b (named aName and bName),
// or a one-line summary for binary or large contents; "" when they are
// equal.
func UnifiedDiff(aName, bName string, a, b []byte) string {
	return unifiedOrSummary(aName, bName, a, b)
}
