package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // "event|data"
	}{
		{"lf", "data: a\n\ndata: b\n\n", []string{"|a", "|b"}},
		{"crlf", "data: a\r\n\r\n", []string{"|a"}},
		{"multi-line data", "data: a\ndata: b\n\n", []string{"|a\nb"}},
		{"named event and comment", ": hi\nevent: error\ndata:x\n\n", []string{"error|x"}},
		{"no final blank line", "data: a", []string{"|a"}},
		{"event without data is skipped", "event: ping\n\n", nil},
		{"event name does not leak into the next", "event: a\ndata: 1\n\ndata: 2\n\n", []string{"a|1", "|2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := Read(strings.NewReader(tt.in), func(ev, data string) error {
				got = append(got, ev+"|"+data)
				return nil
			})
			if !errors.Is(err, io.EOF) {
				t.Fatalf("err = %v, want io.EOF at the end", err)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadStopsOnCallbackError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := Read(strings.NewReader("data: 1\n\ndata: 2\n\n"), func(string, string) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("err = %v after %d events, want stop after 1", err, n)
	}
}

func TestEventTooLarge(t *testing.T) {
	for name, in := range map[string]string{
		"one line":   "data: " + strings.Repeat("x", MaxEvent+1) + "\n\n",
		"many lines": strings.Repeat("data: "+strings.Repeat("x", 1<<20)+"\n", 9) + "\n",
	} {
		err := Read(strings.NewReader(in), func(string, string) error { return nil })
		if !errors.Is(err, ErrEventTooLarge) {
			t.Errorf("%s: err = %v, want ErrEventTooLarge", name, err)
		}
	}
}

// FuzzRead: any input ends in an error (io.EOF at the latest) without
// panicking, and no dispatched event is larger than MaxEvent.
func FuzzRead(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "event: x\r\ndata: y\r\n\r\n", ":c\n", "data", "\n\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		err := Read(strings.NewReader(in), func(_, data string) error {
			if len(data) > MaxEvent {
				t.Fatalf("event of %d bytes", len(data))
			}
			return nil
		})
		if err == nil {
			t.Fatal("Read returned nil; it must end in an error (io.EOF at the latest)")
		}
	})
}
