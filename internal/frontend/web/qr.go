package web

import (
	"fmt"
	"strings"

	"rsc.io/qr"
)

// TerminalQR renders text as a QR code for a terminal, two modules per
// character row (half blocks), with a quiet zone. Light modules are drawn
// with block characters, so the code reads right on a dark terminal; with
// ansi, colours are forced (white on black) so it reads on any theme.
func TerminalQR(text string, ansi bool) (string, error) {
	code, err := qr.Encode(text, qr.M)
	if err != nil {
		return "", fmt.Errorf("web: qr: %w", err)
	}
	const quiet = 2
	n := code.Size + 2*quiet
	light := func(x, y int) bool {
		x, y = x-quiet, y-quiet
		if x < 0 || y < 0 || x >= code.Size || y >= code.Size {
			return true
		}
		return !code.Black(x, y)
	}
	var b strings.Builder
	for y := 0; y < n; y += 2 {
		if ansi {
			b.WriteString("\x1b[97;40m")
		}
		for x := 0; x < n; x++ {
			top := light(x, y)
			bottom := y+1 >= n || light(x, y+1)
			if y+1 >= n {
				bottom = false
			}
			switch {
			case top && bottom:
				b.WriteString("█")
			case top:
				b.WriteString("▀")
			case bottom:
				b.WriteString("▄")
			default:
				b.WriteString(" ")
			}
		}
		if ansi {
			b.WriteString("\x1b[0m")
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}
