package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clusterpool/clusterpool/internal/reqguard"
)

// guardedTransport is a cluster's RoundTripper, installed with the REST
// config's WrapTransport (client-go's TLS transport below it, its auth and
// user-agent wrappers above): every request passes the cluster's guard,
// which rejects, caps, times and reports it. A request's guard flight ends
// when its response body is read to the end or closed, so a slot is held for
// as long as the response is. A /readyz that answers 200 (the dial's, the
// Prober's) becomes the guard's probe (see readyzProbe).
type guardedTransport struct {
	next http.RoundTripper
	g    *reqguard.Guard
}

// RoundTrip sends req under the guard. A rejection is returned as it is
// (http.Client wraps it in a *url.Error, which errors.Is and
// pool.RetryAfter see through), and so is ErrThrottled: a counted
// request's answer of 429 with a Retry-After (reqguard's Flight.Throttle),
// whose body is drained (bounded) and closed so that its connection is
// reused. client-go does not retry it: rest.Request retries an error of
// its http.Client only if it is a connection reset, a probable EOF or a
// lost HTTP/2 connection, and only for a GET (isErrRetryableFunc in
// request.go, checked by withRetry.IsNextRetry in with_retry.go,
// k8s.io/client-go v0.36); it retries on a Retry-After only when it has
// the response. Every other 429 goes to client-go as it is.
func (t *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, f, err := t.g.Begin(req.Context(), classify(req))
	if err != nil {
		if req.Body != nil {
			req.Body.Close() // RoundTrip must close the body, even on errors
		}
		return nil, err
	}
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		err = f.Err(err)
		f.End(err)
		return nil, err
	}
	f.FirstByte()
	if resp.StatusCode == http.StatusOK && isReadyz(req) {
		t.g.SetProbe(readyzProbe(t.next, req))
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		if err := f.Throttle(retryAfter(resp)); err != nil { // a counted request: its worker is free at once
			io.Copy(io.Discard, io.LimitReader(resp.Body, 4096)) // the connection is reused
			resp.Body.Close()
			f.End(err)
			return nil, err
		}
	}
	resp.Body = &guardedBody{ReadCloser: resp.Body, f: f, verdict: verdict(resp)}
	return resp, nil
}

// retryAfter is an answer's Retry-After in seconds, as client-go reads it
// (an integer; an HTTP date is not honoured, by client-go either); 0 if
// absent or invalid.
func retryAfter(resp *http.Response) time.Duration {
	n, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(min(n, int(reqguard.MaxRetryAfter/time.Second))) * time.Second
}

// isReadyz reports whether req is a health probe's GET of /readyz.
func isReadyz(req *http.Request) bool {
	c, _ := req.Context().Value(classKey{}).(reqguard.Class)
	return c == reqguard.Unreported && req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/readyz")
}

// readyzProbe returns the guard's probe (reqguard.Guard.SetProbe): req, a
// /readyz of the cluster that answered 200, sent again through next (below
// the guard: it holds no slot and is not reported), with the headers
// client-go's wrappers gave it (credentials, user agent, impersonation); a
// credential rotated in place is the rotator's, below. nil on 200.
func readyzProbe(next http.RoundTripper, req *http.Request) func(context.Context) error {
	tmpl := req.Clone(context.Background())
	return func(ctx context.Context) error {
		resp, err := next.RoundTrip(tmpl.Clone(ctx))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("kube: readyz: HTTP %d", resp.StatusCode)
		}
		return nil
	}
}

// WrappedRoundTripper lets client-go's CloseIdleConnectionsFor reach the
// transport below.
func (t *guardedTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// verdict is an answer's outcome for the breaker: 5xx are failures of the
// cluster; every other status, 4xx included, is the cluster working, but a
// 429 (back-pressure) is not reported at all (Flight.Throttle), nor holds
// back the cluster's other requests.
func verdict(resp *http.Response) error {
	if resp.StatusCode >= 500 {
		return fmt.Errorf("kube: cluster answered HTTP %d", resp.StatusCode)
	}
	return nil
}

// guardedBody ends the request's flight at EOF, at a read error or at
// Close, whichever comes first; a read error caused by the guard is
// translated (ErrCircuitOpen, ErrFirstByteTimeout).
type guardedBody struct {
	io.ReadCloser
	f       *reqguard.Flight
	verdict error
}

func (b *guardedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.f.End(b.verdict)
	case err != nil:
		err = b.f.Err(err)
		b.f.End(err)
	}
	return n, err
}

func (b *guardedBody) Close() error {
	err := b.ReadCloser.Close()
	b.f.End(b.verdict)
	return err
}

// longRunning are the subresources whose answers stream for as long as the
// caller wants: they hold no bulkhead slot and have no first-byte deadline.
var longRunning = map[string]bool{"exec": true, "attach": true, "portforward": true, "log": true, "proxy": true}

// classify returns the class a request was marked with (informers,
// probes), Exempt for watches and streaming subresources, CountedWrite for
// the other requests that admission webhooks may hold (POST, PUT, PATCH,
// DELETE), else Counted.
func classify(req *http.Request) reqguard.Class {
	if c, ok := req.Context().Value(classKey{}).(reqguard.Class); ok {
		return c
	}
	if streaming(req) {
		return reqguard.Exempt
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions:
		return reqguard.Counted
	}
	return reqguard.CountedWrite
}

// streaming reports whether req is a watch or a streaming subresource,
// whose answer lasts as long as the caller wants.
func streaming(req *http.Request) bool {
	if q := req.URL.Query(); q.Get("watch") == "true" || q.Get("watch") == "1" || q.Get("follow") == "true" {
		return true
	}
	path := strings.TrimSuffix(req.URL.Path, "/")
	return strings.Contains(path, "/watch/") || longRunning[path[strings.LastIndexByte(path, '/')+1:]]
}

type classKey struct{}

// withClass marks the requests sent under ctx as of class c.
func withClass(ctx context.Context, c reqguard.Class) context.Context {
	return context.WithValue(ctx, classKey{}, c)
}

// classTransport marks every request it sends as of one class: the
// informers' HTTP client is hc's transport under a classTransport.
type classTransport struct {
	next  http.RoundTripper
	class reqguard.Class
}

func (t *classTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.next.RoundTrip(req.WithContext(withClass(req.Context(), t.class)))
}

// WrappedRoundTripper lets CloseIdleConnectionsFor see through.
func (t *classTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// informerClient returns an HTTP client sharing hc's transport whose
// requests are Exempt: the cache's lists and watches. It has no Timeout:
// client-go sends an HTTP client's Timeout as every watch's timeout, and
// http.Client.Timeout cuts a response body, so RequestTimeout would end
// every watch after 10 s to be re-established at once. A list or watch of
// a cluster that stops answering ends when the cluster is stopped (its
// breaker opened), which closes its connections.
func informerClient(hc *http.Client) *http.Client {
	return &http.Client{Transport: &classTransport{next: hc.Transport, class: reqguard.Exempt}}
}
