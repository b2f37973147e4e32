package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/reqguard"
)

// Cluster is a connected workload cluster: the client the pool hands out.
// Its fields are read-only. Stop it (the pool's OnClose does, through
// NewPool) to end its informers.
type Cluster struct {
	// Key names the Cluster object.
	Key client.ObjectKey
	// Client reads from Cache and writes to the apiserver.
	Client client.Client
	// Uncached reads from and writes to the apiserver directly.
	Uncached client.Client
	// Cache is the informer cache behind Client.
	Cache cache.Cache
	// UID is the UID of the object Key named when the dial began
	// (DialerOptions.ObjectUID), or empty if unknown: see Admission.Current.
	UID types.UID

	config     *rest.Config    // holds credentials (or rot does): never logged or printed
	httpClient *http.Client    // shared by every client of the cluster
	conns      connCloser      // dials every connection of config; nil in some tests
	guard      *reqguard.Guard // the requests' guard; nil if RequestOptions.Disable
	src        ConfigSource    // the Dialer's, read again when the Secret changes; nil in some tests
	revision   string          // the dial's revision; rot's current one when rot is set
	rot        *rotator        // credentials rotating in place; nil if not rotatable

	stopOnce sync.Once
	cancel   context.CancelFunc
	done     chan struct{} // closed when the cache has stopped
}

// connCloser closes every connection of a cluster: a connrotation.Dialer,
// or the rotator of a cluster whose credentials rotate in place.
type connCloser interface{ CloseAll() }

// Revision is the revision of the credentials the cluster's requests use
// now (for a SecretSource, a digest of the kubeconfig; see
// KubeconfigRevision), or empty if the ConfigSource reports none. It is
// the dial's revision, until the credentials rotate in place (see
// SecretWatcher), and safe for concurrent use.
func (c *Cluster) Revision() string {
	if c.rot != nil {
		return c.rot.revision()
	}
	return c.revision
}

// RESTConfig returns a copy of the cluster's REST config. It holds
// credentials: do not log it. They are those in use at the call: a client
// built from it alone (with its own HTTP client) keeps them after the
// cluster's credentials rotate in place, until they are revoked; a client
// built with HTTPClient follows every rotation.
func (c *Cluster) RESTConfig() *rest.Config {
	if c.rot != nil {
		return c.rot.restConfig(c.config)
	}
	return rest.CopyConfig(c.config)
}

// HTTPClient returns the HTTP client shared by the cluster's clients.
func (c *Cluster) HTTPClient() *http.Client { return c.httpClient }

// String names the cluster; it never shows credentials.
func (c *Cluster) String() string { return "cluster " + c.Key.String() }

// Stop ends the cluster's requests in flight (and rejects later ones; see
// RequestOptions), stops its cache and informers and waits for them, then
// closes every connection dialed for the cluster, idle or not, including
// those of clients built from RESTConfig. Nothing of the cluster outlives
// Stop: no connection, and no HTTP/2 read loop parked on one.
// It is idempotent and safe for concurrent use.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.cancel()
		<-c.done
		c.closeConns()
	})
}

// closeConns closes the cluster's connections.
func (c *Cluster) closeConns() {
	if c.conns != nil {
		c.conns.CloseAll()
		return
	}
	closeIdle(c.httpClient)
}

// closeIdle closes hc's idle connections through client-go's transport
// wrappers (http.Client.CloseIdleConnections does not see through them).
func closeIdle(hc *http.Client) { utilnet.CloseIdleConnectionsFor(hc.Transport) }

// Readyz sends GET /readyz to the cluster and returns nil on 200. An
// Unauthorized (401) or Forbidden answer is returned as the matching
// apierrors status error, so apierrors.IsUnauthorized works on it.
//
// The request holds no bulkhead slot, has no first-byte deadline and is not
// reported to the breaker: the caller (the Prober) reports the outcome.
func (c *Cluster) Readyz(ctx context.Context) error {
	_, err := c.probeReadyz(ctx)
	return err
}

// probeReadyz is Readyz, and whether the answer came over HTTP/1: a wire
// without HTTP/2 PINGs, whose silence is no evidence (see Prober).
func (c *Cluster) probeReadyz(ctx context.Context) (http1 bool, err error) {
	return readyz(withClass(ctx, reqguard.Unreported), c.httpClient, c.config.Host)
}

// readyz checks host's /readyz with hc, and reports whether the answer
// came over HTTP/1. Its errors quote no URL with userinfo or a query (see
// redactURL).
func readyz(ctx context.Context, hc *http.Client, host string) (http1 bool, err error) {
	u, err := url.Parse(host)
	if err != nil {
		return false, fmt.Errorf("kube: readyz: server URL does not parse")
	}
	u = u.JoinPath("readyz")
	u.RawQuery, u.ForceQuery, u.Fragment = "", false, "" // client-go drops a server's query too
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, fmt.Errorf("kube: readyz request could not be made")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, fmt.Errorf("kube: readyz: %w", redactURL(err))
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	http1 = resp.ProtoMajor == 1
	switch resp.StatusCode {
	case http.StatusOK:
		return http1, nil
	case http.StatusUnauthorized:
		return http1, apierrors.NewUnauthorized("readyz: the cluster rejected the credentials")
	case http.StatusForbidden:
		return http1, apierrors.NewForbidden(schema.GroupResource{}, "readyz", fmt.Errorf("the cluster denied access"))
	}
	return http1, fmt.Errorf("kube: readyz: HTTP %d", resp.StatusCode)
}

// redactURL returns err with the URL of its *url.Error (http.Client's,
// which masks a password but keeps the user name and the query) reduced to
// scheme, host and path: no URL in a dial error carries userinfo or a
// query. A *url.Error is replaced by a redacted one (errors.Is, errors.As
// and Timeout see through it as before); an error that wraps one keeps its
// chain under the redacted text. Other errors are returned as they are.
func redactURL(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	safe := "<server URL>"
	if u, perr := url.Parse(ue.URL); perr == nil {
		u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
		safe = u.String()
	}
	if ue == err {
		return &url.Error{Op: ue.Op, URL: safe, Err: ue.Err}
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), ue.URL, safe), cause: err}
}

// redactedError is an error whose text had a URL redacted.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }
