package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// Defaults of ClientOptions.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultDialTimeout  = 10 * time.Second
	DefaultMaxRedirects = 5
	DefaultMaxBodyBytes = 1 << 20
)

// Resolver looks up the addresses of a host name. *net.Resolver implements
// it; tests inject their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ClientOptions tune NewClient. The zero value gives the defaults.
type ClientOptions struct {
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
	// Timeout bounds a whole request, redirects and body included
	// (default DefaultTimeout).
	Timeout time.Duration
	// DialTimeout bounds one connection attempt (default DefaultDialTimeout).
	DialTimeout time.Duration
	// MaxRedirects is how many redirects are followed: 0 means
	// DefaultMaxRedirects, a negative value means none, and values above
	// DefaultMaxRedirects are lowered to it.
	MaxRedirects int
	// MaxBodyBytes caps every response body: reading past it fails with
	// ErrBodyTooLarge (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
}

func (o ClientOptions) withDefaults() ClientOptions {
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	switch {
	case o.MaxRedirects == 0 || o.MaxRedirects > DefaultMaxRedirects:
		o.MaxRedirects = DefaultMaxRedirects
	case o.MaxRedirects < 0:
		o.MaxRedirects = 0
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return o
}

// NewClient returns an HTTP client that agents' fetches can safely go
// through:
//
//   - every request URL and every redirect target passes CheckURL;
//   - host names are resolved by the client itself, every resolved address
//     must pass CheckIP (unless the name is allowed by pol), and the
//     connection is made to the checked address, so a second DNS answer
//     cannot slip in between check and connect (DNS rebinding); the socket's
//     address is checked once more just before connect;
//   - proxies from the environment are not used;
//   - at most opts.MaxRedirects redirects are followed;
//   - response bodies are capped at opts.MaxBodyBytes;
//   - timeouts bound the dial, the TLS handshake, the response headers and
//     the whole request.
//
// If pol cannot be compiled, every request made with the client fails with
// ErrPolicy: the client fails closed.
func NewClient(pol Policy, opts ClientOptions) *http.Client {
	opts = opts.withDefaults()
	c, polErr := pol.compile()
	d := &dialer{pol: c, resolver: opts.Resolver}
	d.net = net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second, ControlContext: d.control}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  15 * time.Second,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        30 * time.Second,
		MaxIdleConns:           16,
		MaxResponseHeaderBytes: 64 << 10,
	}
	rt := &guardedTransport{base: tr, pol: c, polErr: polErr, maxBody: opts.MaxBodyBytes}
	return &http.Client{
		Transport:     rt,
		CheckRedirect: redirectChecker(c, polErr, opts.MaxRedirects),
		Timeout:       opts.Timeout,
	}
}

// redirectChecker returns an http.Client.CheckRedirect function that allows
// at most max redirects and checks each target with the policy.
func redirectChecker(c *compiled, polErr error, max int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if polErr != nil {
			return polErr
		}
		if len(via) > max {
			return fmt.Errorf("%w: more than %d", ErrTooManyRedirects, max)
		}
		if err := c.checkURL(req.URL); err != nil {
			return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
		}
		return nil
	}
}

// guardedTransport checks each request's URL before it is sent and caps the
// response body.
type guardedTransport struct {
	base    *http.Transport
	pol     *compiled
	polErr  error
	maxBody int64
}

// RoundTrip implements http.RoundTripper.
func (t *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.polErr != nil {
		closeBody(req)
		return nil, t.polErr
	}
	if err := t.pol.checkURL(req.URL); err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &cappedBody{rc: resp.Body, left: t.maxBody}
	return resp, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// cappedBody returns ErrBodyTooLarge once more than its limit would be read.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

// Read implements io.Reader.
func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, ErrBodyTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

// Close implements io.Closer.
func (b *cappedBody) Close() error { return b.rc.Close() }

// ReadCapped reads r up to n bytes. It reports truncated when r had more to
// give (or a capped response body said so); the bytes returned are then the
// first n. Other read errors are returned with what was read.
func ReadCapped(r io.Reader, n int64) ([]byte, bool, error) {
	if n < 0 {
		return nil, false, fmt.Errorf("netguard: negative read cap %d", n)
	}
	limit := n + 1
	if limit < n { // overflow
		limit = n
	}
	b, err := io.ReadAll(io.LimitReader(r, limit))
	if errors.Is(err, ErrBodyTooLarge) {
		if int64(len(b)) > n {
			b = b[:n]
		}
		return b, true, nil
	}
	if err != nil {
		return b, false, err
	}
	if int64(len(b)) > n {
		return b[:n], true, nil
	}
	return b, false, nil
}

// dialer resolves, checks and connects.
type dialer struct {
	pol      *compiled
	resolver Resolver
	net      net.Dialer
}

// allowedNameKey marks a dial context whose addresses came from a name the
// operator allowed, so the connect-time check lets private addresses through.
type allowedNameKey struct{}

// DialContext resolves addr's host, refuses the dial if any resolved address
// is refused, and connects to the checked addresses in turn.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("%w: network %q", ErrRefused, network)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidHost, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("%w: port %q", ErrInvalidHost, portStr)
	}
	ips, allowedName, err := d.resolve(ctx, network, host)
	if err != nil {
		return nil, err
	}
	if allowedName {
		ctx = context.WithValue(ctx, allowedNameKey{}, true)
	}
	var errs []error
	for _, ip := range ips {
		ap := netip.AddrPortFrom(ip.Unmap(), uint16(port))
		conn, err := d.net.DialContext(ctx, network, ap.String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// resolve returns the checked addresses for host. Every address a name
// resolves to must pass: one refused address refuses the whole dial, since a
// mixed answer is what a rebinding attack looks like.
func (d *dialer) resolve(ctx context.Context, network, host string) ([]netip.Addr, bool, error) {
	addr, name, err := d.pol.checkHost(host)
	if err != nil {
		return nil, false, err
	}
	if addr.IsValid() {
		return []netip.Addr{addr}, false, nil
	}
	allowed := d.pol.nameAllowed(name)
	lookupNet := "ip"
	switch network {
	case "tcp4":
		lookupNet = "ip4"
	case "tcp6":
		lookupNet = "ip6"
	}
	ips, err := d.resolver.LookupNetIP(ctx, lookupNet, name)
	if err != nil {
		return nil, false, fmt.Errorf("netguard: resolve %q: %w", name, err)
	}
	if len(ips) == 0 {
		return nil, false, fmt.Errorf("netguard: resolve %q: no addresses", name)
	}
	out := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		ip = ip.WithZone("")
		if !allowed {
			if err := CheckIP(ip, d.pol.prefixes...); err != nil {
				var re *RefusedError
				if errors.As(err, &re) {
					re.Host = host
				}
				return nil, false, err
			}
		}
		out = append(out, ip)
	}
	return out, allowed, nil
}

// control checks the address a socket is about to connect to.
func (d *dialer) control(ctx context.Context, network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: connect address %q", ErrRefused, address)
	}
	if allowed, _ := ctx.Value(allowedNameKey{}).(bool); allowed {
		return nil
	}
	return CheckIP(ap.Addr(), d.pol.prefixes...)
}
