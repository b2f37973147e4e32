package grayproxy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

// standIn starts an apiserver stand-in that answers each request with the
// credentials and impersonation headers it received.
func standIn(t *testing.T) (*httptest.Server, *rest.Config) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string][]string{"auth": r.Header.Values("Authorization"),
			"user": r.Header.Values(impersonateUser), "groups": r.Header.Values(impersonateGroup)})
	}))
	t.Cleanup(srv.Close)
	return srv, &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}}
}

// seen sends a GET through p as client and returns what the stand-in saw.
func seen(t *testing.T, p *Proxy, client *rest.Config) (int, map[string][]string) {
	t.Helper()
	hc, err := rest.HTTPClientFor(p.ClientConfig(client))
	if err != nil {
		t.Fatal(err)
	}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(p.URL() + "/api")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got map[string][]string
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, got
}

// A token caller's Authorization reaches the apiserver as sent; a
// certificate caller's request carries the proxy's token and the
// certificate's user and groups as impersonation headers, and its own
// Authorization header is dropped.
func TestRouteHeaders(t *testing.T) {
	_, target := standIn(t)
	ca := mustCA(t)
	identity := rest.CopyConfig(target)
	identity.BearerToken = "proxy-token"
	p, err := New(Config{Target: identity, ClientCAs: ca.PEM()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tokenCaller := rest.CopyConfig(target)
	tokenCaller.BearerToken = "caller-token"
	code, got := seen(t, p, tokenCaller)
	if code != http.StatusOK || fmt.Sprint(got) != "map[auth:[Bearer caller-token] groups:[] user:[]]" {
		t.Fatalf("token caller: %d, apiserver saw %v", code, got)
	}
	certCaller := rest.CopyConfig(tokenCaller)
	certCaller.CertData, certCaller.KeyData = clientCert(t, ca, "gray:carol", "g1", "g2")
	code, got = seen(t, p, certCaller)
	if code != http.StatusOK || fmt.Sprint(got) != "map[auth:[Bearer proxy-token] groups:[g1 g2] user:[gray:carol]]" {
		t.Fatalf("certificate caller: %d, apiserver saw %v", code, got)
	}
	anonymous := rest.AnonymousClientConfig(target)
	if code, got = seen(t, p, anonymous); code != http.StatusOK || fmt.Sprint(got) != "map[auth:[] groups:[] user:[]]" {
		t.Fatalf("anonymous caller: %d, apiserver saw %v", code, got)
	}
	stranger := rest.AnonymousClientConfig(target)
	stranger.CertData, stranger.KeyData = clientCert(t, mustCA(t), "gray:mallory")
	if code, _ = seen(t, p, stranger); code != http.StatusUnauthorized {
		t.Fatalf("a foreign certificate: %d, want 401", code)
	}
	if c := p.Counts(Pass); c.Passed != 3 || c.Refused != 1 {
		t.Fatalf("counts %+v, want 3 passed and 1 refused", c)
	}
}

// clientCert returns a client certificate for name in groups, signed by
// ca, and its key (PEM).
func clientCert(t *testing.T, ca *CA, name string, groups ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	cert, err := ca.sign(name, groups, x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	return certAndKeyPEM(t, cert)
}

// certAndKeyPEM encodes cert's leaf and key as PEM.
func certAndKeyPEM(t *testing.T, cert tls.Certificate) (certPEM, keyPEM []byte) {
	t.Helper()
	kd, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})
}
