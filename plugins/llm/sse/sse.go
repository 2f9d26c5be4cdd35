// Package sse reads server-sent event streams as the LLM plugins receive
// them (the WHATWG format): "field: value" lines, several data lines joined
// by newlines, comments starting with ':', a blank line ending the event.
package sse

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

// MaxEvent caps one event's data (and one line): 8 MiB.
const MaxEvent = 8 << 20

// ErrEventTooLarge: one event or line exceeded MaxEvent.
var ErrEventTooLarge = errors.New("sse: stream event too large")

// Read calls fn with each event's name and data until the stream ends (it
// then returns io.EOF, after dispatching a last event that lacks its blank
// line) or fn returns an error, which Read returns. Events without a data
// line are not dispatched.
func Read(r io.Reader, fn func(event, data string) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var event string
	var data strings.Builder
	hasData := false
	dispatch := func() error {
		defer func() { event, hasData = "", false; data.Reset() }()
		if !hasData {
			return nil
		}
		return fn(event, data.String())
	}
	for {
		line, err := readLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if err == nil || line != "" {
			if perr := applyLine(line, &event, &data, &hasData, dispatch); perr != nil {
				return perr
			}
		}
		if err != nil { // EOF: a last event without its blank line still counts
			if derr := dispatch(); derr != nil {
				return derr
			}
			return err
		}
	}
}

// applyLine applies one line to the event being read.
func applyLine(line string, event *string, data *strings.Builder, hasData *bool, dispatch func() error) error {
	switch {
	case line == "":
		return dispatch()
	case line[0] == ':':
		return nil
	}
	field, value, _ := strings.Cut(line, ":")
	value = strings.TrimPrefix(value, " ")
	switch field {
	case "event":
		*event = value
	case "data":
		if *hasData {
			data.WriteByte('\n')
		}
		if data.Len()+len(value) > MaxEvent {
			return ErrEventTooLarge
		}
		data.WriteString(value)
		*hasData = true
	}
	return nil
}

// readLine reads one line without its "\n" or "\r\n" ending.
func readLine(br *bufio.Reader) (string, error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > MaxEvent {
			return "", ErrEventTooLarge
		}
		buf = append(buf, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		s := strings.TrimSuffix(string(buf), "\n")
		s = strings.TrimSuffix(s, "\r")
		return s, err
	}
}
