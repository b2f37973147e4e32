package grayproxy

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// ErrUnauthenticated is the cause, in the proxy's 401 answers, of a client
// certificate the proxy cannot verify against Config.ClientCAs.
var ErrUnauthenticated = errors.New("grayproxy: client certificate not verified")

// Impersonation headers (k8s.io/api/authentication/v1's
// ImpersonateUserHeader and its siblings).
const (
	impersonateUser  = "Impersonate-User"
	impersonateGroup = "Impersonate-Group"
	impersonatePre   = "Impersonate-"
)

// upstream is how requests reach the apiserver: bare carries what the
// caller sent (a bearer token, or nothing); ident carries the proxy's own
// credentials and the impersonation headers of a caller who authenticated
// with a client certificate (nil without Config.ClientCAs).
type upstream struct {
	bare, ident *httputil.ReverseProxy
	transports  []*http.Transport
	clientCAs   *x509.CertPool // nil: client certificates are not asked for
}

// targetURL checks that host is https on a loopback address.
func targetURL(host string) (*url.URL, error) {
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("grayproxy: Target.Host %q is not a URL", host)
	}
	if u.Scheme != "https" {
		return nil, fmt.Errorf("grayproxy: Target.Host %q is not https", host)
	}
	if ap, err := netip.ParseAddr(u.Hostname()); u.Hostname() != "localhost" && (err != nil || !ap.IsLoopback()) {
		return nil, fmt.Errorf("grayproxy: Target.Host %q is not on loopback", host)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(u.Path, "/")}, nil
}

// newUpstream builds the transports to cfg's Target.
func newUpstream(cfg Config) (*upstream, error) {
	if cfg.Target == nil {
		return nil, errors.New("grayproxy: Target is nil")
	}
	if cfg.Target.Impersonate.UserName != "" || len(cfg.Target.Impersonate.Groups) > 0 {
		return nil, errors.New("grayproxy: Target.Impersonate is set; the proxy impersonates its callers itself")
	}
	target, err := targetURL(cfg.Target.Host)
	if err != nil {
		return nil, err
	}
	up := &upstream{}
	bareCfg := rest.AnonymousClientConfig(cfg.Target) // TLS trust only
	if up.bare, err = up.proxy(bareCfg, target, ""); err != nil {
		return nil, err
	}
	if len(cfg.ClientCAs) == 0 {
		return up, nil
	}
	up.clientCAs = x509.NewCertPool()
	if !up.clientCAs.AppendCertsFromPEM(cfg.ClientCAs) {
		return nil, errors.New("grayproxy: ClientCAs holds no PEM certificate")
	}
	hasCert := len(cfg.Target.CertData) > 0 || cfg.Target.CertFile != ""
	if !hasCert && cfg.Target.BearerToken == "" {
		return nil, errors.New("grayproxy: Target has neither a client certificate nor a BearerToken to impersonate ClientCAs' users with")
	}
	identCfg := rest.CopyConfig(cfg.Target)
	identCfg.BearerToken, identCfg.BearerTokenFile = "", ""
	if up.ident, err = up.proxy(identCfg, target, cfg.Target.BearerToken); err != nil {
		return nil, err
	}
	return up, nil
}

// proxy returns a reverse proxy to target over a transport of tc's TLS
// settings (and client certificate, if any), adding token as a bearer
// token if not empty.
func (up *upstream) proxy(tc *rest.Config, target *url.URL, token string) (*httputil.ReverseProxy, error) {
	tlsCfg, err := rest.TLSConfigFor(tc)
	if err != nil {
		return nil, fmt.Errorf("grayproxy: Target's TLS settings: %w", err)
	}
	dial := tc.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg, DialContext: dial, ForceAttemptHTTP2: true,
		MaxIdleConnsPerHost: 32, IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second}
	up.transports = append(up.transports, tr)
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			if token != "" {
				pr.Out.Header.Set("Authorization", "Bearer "+token)
			}
		},
		Transport:     tr,
		FlushInterval: -1, // watches and chunked lists stream as they come
		ErrorHandler:  badGateway,
	}, nil
}

// closeIdle closes the idle connections to the apiserver.
func (up *upstream) closeIdle() {
	for _, tr := range up.transports {
		tr.CloseIdleConnections()
	}
}

// route returns the reverse proxy for r and prepares r's headers for it:
// a request with a client certificate goes through ident as the
// certificate's user (its Authorization header dropped: the certificate
// authenticates it, as at the apiserver), any other through bare as sent.
// It returns an error for a certificate it cannot verify (401) or a
// certificate-authenticated request that impersonates (400): Kubernetes
// has no impersonation of an impersonator.
func (up *upstream) route(r *http.Request) (*httputil.ReverseProxy, error) {
	if up.clientCAs == nil || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return up.bare, nil
	}
	certs := r.TLS.PeerCertificates
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: up.clientCAs, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	for k := range r.Header {
		if strings.HasPrefix(k, impersonatePre) {
			return nil, errImpersonates
		}
	}
	r.Header.Del("Authorization")
	r.Header.Set(impersonateUser, certs[0].Subject.CommonName)
	for _, g := range certs[0].Subject.Organization {
		r.Header.Add(impersonateGroup, g)
	}
	return up.ident, nil
}

// errImpersonates is the cause of the 400 answer to a request that
// authenticates with a client certificate and impersonates.
var errImpersonates = errors.New("grayproxy: a caller authenticated by a client certificate cannot impersonate through the proxy (use a bearer token)")
