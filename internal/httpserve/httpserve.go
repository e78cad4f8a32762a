// Package httpserve is the one way strata's commands serve HTTP: the
// config agent, the z-pages, the metrics and health endpoints and the
// admission webhooks of the examples. A network client, whoever can reach
// the port, may open connections and keep them idle, send half a request,
// or announce a body it never sends; none of that may hold a goroutine, a
// descriptor or a slot for ever, or keep /healthz from answering:
//
//   - every phase of a connection has a deadline (Limits: the request's
//     header, the whole request, the reply, the wait between requests);
//   - at most MaxConns connections are open at once. A connection that
//     arrives when all are taken is served, and the oldest of those that
//     are idle or still reading a first request is closed to make room
//     (or, when every one is serving a request, the oldest of those): a
//     client that holds connections open only makes them turn over, and a
//     probe always gets in;
//   - over TLS, HTTP/1.1 only: HTTP/2 would carry up to 250 requests on one
//     connection, past what the connection bound bounds (and the rapid
//     reset attack with them); a webhook's API server speaks HTTP/1.1.
package httpserve

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits bound what one client can hold of a server.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's header.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, its body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its header to the
	// end of its reply.
	WriteTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection.
	IdleTimeout time.Duration
	// MaxConns bounds the connections open at once.
	MaxConns int
	// MaxHeaderBytes bounds a request's header.
	MaxHeaderBytes int
}

// DefaultLimits are every command's: requests to strata's servers are
// small GETs and admission reviews, answered in milliseconds.
var DefaultLimits = Limits{
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       10 * time.Second,
	WriteTimeout:      30 * time.Second,
	IdleTimeout:       60 * time.Second,
	MaxConns:          64,
	MaxHeaderBytes:    64 << 10,
}

// New returns a server for h under DefaultLimits and ln wrapped to keep
// them: serve the one on the other (srv.Serve(ln), or srv.ServeTLS with
// srv.TLSConfig set).
func New(h http.Handler, ln net.Listener) (*http.Server, net.Listener) {
	return DefaultLimits.New(h, ln)
}

// New is the package's New under l.
func (l Limits) New(h http.Handler, ln net.Listener) (*http.Server, net.Listener) {
	c := &conns{max: l.MaxConns, open: map[net.Conn]*connState{}}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ConnState:         c.track,
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){}, // no HTTP/2
	}
	return srv, &listener{Listener: ln, c: c}
}

// Listen listens on addr over TCP and returns a server for h under
// DefaultLimits with the listener to serve it on.
func Listen(addr string, h http.Handler) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv, bounded := New(h, ln)
	return srv, bounded, nil
}

// conns are a server's open connections as its ConnState hook reports
// them (a TLS server reports the *tls.Conn over the accepted one).
type conns struct {
	max  int
	mu   sync.Mutex
	open map[net.Conn]*connState
	seq  uint64
}

type connState struct {
	state http.ConnState
	seq   uint64 // when it entered state: lower is older
}

func (c *conns) track(nc net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s {
	case http.StateClosed, http.StateHijacked:
		delete(c.open, nc)
	default:
		c.seq++
		c.open[nc] = &connState{state: s, seq: c.seq}
	}
}

// makeRoom closes connections until one more fits under max: the oldest
// idle or new one first, else the oldest serving a request.
func (c *conns) makeRoom() {
	c.mu.Lock()
	var victims []net.Conn
	for len(c.open) >= c.max && c.max > 0 {
		var oldest net.Conn
		var best *connState
		for nc, st := range c.open {
			waiting := st.state == http.StateIdle || st.state == http.StateNew
			if best == nil || better(waiting, st, best) {
				oldest, best = nc, st
			}
		}
		delete(c.open, oldest)
		victims = append(victims, oldest)
	}
	c.mu.Unlock()
	for _, nc := range victims {
		if tc, ok := nc.(*tls.Conn); ok {
			// Without TLS's close_notify, whose write waits out its
			// deadline when the peer stopped reading, holding Accept.
			nc = tc.NetConn()
		}
		nc.Close()
	}
}

// better reports whether a connection in st, waiting or not, is a better
// one to close than the one in best.
func better(waiting bool, st, best *connState) bool {
	bestWaiting := best.state == http.StateIdle || best.state == http.StateNew
	if waiting != bestWaiting {
		return waiting
	}
	return st.seq < best.seq
}

// listener makes room for each connection it accepts.
type listener struct {
	net.Listener
	c *conns
}

func (l *listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.c.makeRoom()
	return nc, nil
}
