// Package grayproxy is an HTTP-level fault proxy for tests and benchmarks:
// a TLS-terminating reverse proxy on 127.0.0.1 in front of one real
// kube-apiserver, switchable at run time between the gray failures of a
// cluster that still answers:
//
//   - Pass forwards everything untouched, watches and chunked lists as they
//     stream, over HTTP/2 or HTTP/1.1 (the default);
//   - Slow holds every answer's headers (a watch's first byte) for a fixed
//     latency, or until a multiple of the apiserver's own time;
//   - Errors answers a fraction of the requests 500 or 503 with a
//     Kubernetes Status, spread from a seed so that a test can count them:
//     at 60 %, never three in a row;
//   - Throttled answers a fraction of the requests, or all, 429 with
//     Retry-After and a Status of reason TooManyRequests, as API Priority
//     and Fairness does.
//
// A faulted request never reaches the apiserver; the proxy counts, per
// mode, the requests it passed and those it faulted ([Proxy.Counts]).
//
// # Trust and credentials
//
// The proxy serves a certificate for 127.0.0.1 signed by a [CA] it makes
// (or is given, to share between proxies): a kubeconfig names
// [Proxy.URL] as its server and [Proxy.CAPEM] as its
// certificate-authority-data ([Proxy.ClientConfig] does both for a
// rest.Config).
//
// A bearer token passes through: the apiserver authenticates and
// authorizes the caller as it would without the proxy. A client
// certificate cannot: the TLS session it proves ends at the proxy, which
// holds no key of the caller's to open another. Kubeconfigs of the
// project's benchmark fleets hold both (envtest's admin certificate,
// certificates added per cluster, and webhook-authenticated tokens), so the
// proxy does what Kubernetes' own authenticating proxies do: given
// Config.ClientCAs (the apiserver's --client-ca-file), it verifies the
// caller's certificate as the apiserver would and forwards the request
// under its own identity (Config.Target's certificate or token) with
// Impersonate-User set to the certificate's common name and
// Impersonate-Group to each of its organizations. The apiserver then
// authorizes the caller's user and groups, not the proxy's; its audit log
// names the proxy as the user and the caller as the impersonated user. A
// certificate the CAs did not sign is refused with 401; a certificate
// caller that sends impersonation headers itself with 400 (Kubernetes has
// no impersonation of an impersonator). The alternative, the apiserver's
// front-proxy headers (--requestheader-*), would need flags on every
// apiserver; impersonation needs only the impersonate verb, which
// system:masters has.
//
// New refuses any target that is not https on a loopback address.
package grayproxy
