package hookcore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/apiauth"
)

// The lean hook speaks HTTP/1.1 to the daemon itself, one request per
// connection, rather than through net/http: that package (with TLS and
// HTTP/2, which it links) doubles the lean binary and its start-up. The
// daemon is Go's own HTTP server on a loopback address; what it answers is
// read strictly, and anything that is not a well-formed answer is an error
// (the call is then denied).

// maxHeader bounds the status line and headers of an answer.
const maxHeader = 64 << 10

// errShortAnswer means the daemon closed the connection mid-answer.
var errShortAnswer = errors.New("the daemon's answer was cut short")

// roundTrip sends one request to the daemon at addr and reads its answer.
// It returns the status, the Retry-After header and the body (at most
// maxAnswer bytes). ctx bounds the whole exchange.
func roundTrip(ctx context.Context, addr, method, path, token string, body []byte) (status int, retryAfter string, resp []byte, err error) {
	// One request per connection: no keep-alive probes to set up.
	d := net.Dialer{KeepAlive: -1}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, "", nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// An interrupted hook stops waiting at once.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: overseer-hook\r\nConnection: close\r\n", method, path, addr)
	// The request is signed with the token, never carrying it (package
	// apiauth): the server at the address may not be the daemon.
	var nonce string
	if token != "" {
		var h string
		h, nonce = apiauth.Sign(token, method, path, time.Now())
		fmt.Fprintf(&req, "Authorization: %s\r\n", h)
	}
	if body != nil {
		fmt.Fprintf(&req, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	req.WriteString("\r\n")
	req.Write(body)
	if _, err := conn.Write(req.Bytes()); err != nil {
		return 0, "", nil, ctxErr(ctx, err)
	}
	status, h, resp, err := readAnswer(bufio.NewReader(io.LimitReader(conn, maxHeader+maxAnswer+4096)), method)
	if err != nil {
		return 0, "", nil, ctxErr(ctx, err)
	}
	if token != "" && !apiauth.CheckProof(token, nonce, h.Get(apiauth.ProofHeader)) {
		return 0, "", nil, fmt.Errorf("%w (%s answered HTTP %d)", apiauth.ErrImpostor, addr, status)
	}
	return status, h.Get("Retry-After"), resp, nil
}

// ctxErr prefers the context's error to the I/O error it caused.
func ctxErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

// readAnswer reads one HTTP/1.1 answer: status line, headers, and a body
// framed by Content-Length, chunked encoding or the end of the connection.
func readAnswer(r *bufio.Reader, method string) (status int, hdr textproto.MIMEHeader, body []byte, err error) {
	tp := textproto.NewReader(r)
	line, err := tp.ReadLine()
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading the daemon's answer: %w", noEOF(err))
	}
	proto, rest, ok := strings.Cut(line, " ")
	code, _, _ := strings.Cut(rest, " ")
	if !ok || (proto != "HTTP/1.1" && proto != "HTTP/1.0") || len(code) != 3 {
		return 0, nil, nil, fmt.Errorf("the daemon's answer is not HTTP: %.60q", line)
	}
	status, err = strconv.Atoi(code)
	if err != nil || status < 100 || status > 599 {
		return 0, nil, nil, fmt.Errorf("the daemon's answer has no status: %.60q", line)
	}
	if status < 200 {
		return 0, nil, nil, fmt.Errorf("the daemon answered %d, which the hook does not take", status)
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading the daemon's answer: %w", noEOF(err))
	}
	if method == "HEAD" || status == 204 || status == 304 {
		return status, h, nil, nil
	}
	te, cl := strings.ToLower(strings.TrimSpace(h.Get("Transfer-Encoding"))), h.Values("Content-Length")
	switch {
	case te != "" && te != "chunked", te == "chunked" && len(cl) > 0, len(cl) > 1:
		return 0, nil, nil, errors.New("the daemon's answer is framed ambiguously")
	case te == "chunked":
		body, err = readChunked(r)
	case len(cl) == 1:
		n, perr := strconv.ParseInt(strings.TrimSpace(cl[0]), 10, 64)
		if perr != nil || n < 0 {
			return 0, nil, nil, fmt.Errorf("the daemon's answer has a bad length %q", cl[0])
		}
		if n > maxAnswer {
			return 0, nil, nil, fmt.Errorf("the daemon's answer is larger than %d bytes", maxAnswer)
		}
		body = make([]byte, n)
		_, err = io.ReadFull(r, body)
	default:
		body, err = io.ReadAll(io.LimitReader(r, maxAnswer+1))
		if err == nil && len(body) > maxAnswer {
			err = fmt.Errorf("the daemon's answer is larger than %d bytes", maxAnswer)
		}
	}
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading the daemon's answer: %w", noEOF(err))
	}
	return status, h, body, nil
}

// readChunked reads a chunked body up to maxAnswer bytes, trailers and all.
func readChunked(r *bufio.Reader) ([]byte, error) {
	tp := textproto.NewReader(r)
	var body []byte
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return nil, err
		}
		size, _, _ := strings.Cut(line, ";")
		n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bad chunk size %.20q", line)
		}
		if n == 0 {
			if _, err := tp.ReadMIMEHeader(); err != nil { // trailers, then the blank line
				return nil, err
			}
			return body, nil
		}
		if int64(len(body))+n > maxAnswer {
			return nil, fmt.Errorf("larger than %d bytes", maxAnswer)
		}
		chunk := make([]byte, n+2)
		if _, err := io.ReadFull(r, chunk); err != nil {
			return nil, err
		}
		if chunk[n] != '\r' || chunk[n+1] != '\n' {
			return nil, errors.New("a chunk does not end its line")
		}
		body = append(body, chunk[:n]...)
	}
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errShortAnswer
	}
	return err
}
