package netguard

import (
	"bufio"
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"
)

type hostCase struct {
	line     int
	spelling string
	refuse   bool
	addr     string // "-" for a name, "" when not given
}

func loadHostCases(tb testing.TB) []hostCase {
	tb.Helper()
	f, err := os.Open("testdata/hosts.tsv")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var cases []hostCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 2 || (cols[1] != "refuse" && cols[1] != "allow") {
			tb.Fatalf("hosts.tsv:%d: want spelling<TAB>refuse|allow[<TAB>addr], got %q", n, line)
		}
		c := hostCase{line: n, spelling: cols[0], refuse: cols[1] == "refuse"}
		if len(cols) > 2 {
			c.addr = cols[2]
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return cases
}

func TestHostsCorpus(t *testing.T) {
	cases := loadHostCases(t)
	if len(cases) < 60 {
		t.Fatalf("corpus has %d spellings, want at least 60", len(cases))
	}
	var refused, allowed int
	for _, c := range cases {
		t.Run(c.spelling, func(t *testing.T) {
			raw := "http://" + c.spelling + "/x"
			err := CheckURL(raw, Policy{})
			if c.refuse {
				refused++
				if err == nil {
					t.Fatalf("hosts.tsv:%d: CheckURL(%q) = nil, want refused", c.line, raw)
				}
				if !errors.Is(err, ErrRefused) && !errors.Is(err, ErrInvalidHost) && !errors.Is(err, ErrInvalidURL) {
					t.Fatalf("hosts.tsv:%d: CheckURL(%q) = %v, want ErrRefused, ErrInvalidHost or ErrInvalidURL", c.line, raw, err)
				}
			} else {
				allowed++
				if err != nil {
					t.Fatalf("hosts.tsv:%d: CheckURL(%q) = %v, want nil", c.line, raw, err)
				}
			}
			switch c.addr {
			case "":
			case "-":
				if a, ok := ParseHost(c.spelling); ok {
					t.Fatalf("hosts.tsv:%d: ParseHost(%q) = %v, want not numeric", c.line, c.spelling, a)
				}
			default:
				want := netip.MustParseAddr(c.addr)
				got, ok := ParseHost(c.spelling)
				if !ok || got != want {
					t.Fatalf("hosts.tsv:%d: ParseHost(%q) = %v, %v; want %v", c.line, c.spelling, got, ok, want)
				}
			}
		})
	}
	if refused == 0 || allowed == 0 {
		t.Fatalf("corpus needs both outcomes: %d refused, %d allowed", refused, allowed)
	}
}

func TestParseHostNames(t *testing.T) {
	for _, h := range []string{"", ".", "example.com", "localhost", "1.2.3.4.5", "0xg", "-1", "+1", " 1", "1 ", "[", "[]", "1.2.3.-4", "0x7f..1"} {
		t.Run(h, func(t *testing.T) {
			if a, ok := ParseHost(h); ok {
				t.Fatalf("ParseHost(%q) = %v, want not numeric", h, a)
			}
		})
	}
}

func TestEndsInNumber(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"example.com", false},
		{"a.1", true},
		{"a.0x1f", true},
		{"a.0x", true},
		{"a.0xg", false},
		{"1.", true},
		{"a.b1", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			if got := endsInNumber(tt.host); got != tt.want {
				t.Fatalf("endsInNumber(%q) = %v, want %v", tt.host, got, tt.want)
			}
		})
	}
}
