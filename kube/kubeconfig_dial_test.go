package kube

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/pool"
)

// recorder is a loopback stand-in for an apiserver (or a proxy): it answers
// 200 to every request (403 to a proxy CONNECT) and records what reached it.
type recorder struct {
	srv *httptest.Server
	mu  sync.Mutex
	log []string // one line per connection and per request
}

func newRecorder(t *testing.T, useTLS bool) *recorder {
	t.Helper()
	r := &recorder{}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cn := ""
		if req.TLS != nil && len(req.TLS.PeerCertificates) > 0 {
			cn = req.TLS.PeerCertificates[0].Subject.CommonName
		}
		r.add(fmt.Sprintf("%s %s %s auth=%q impersonate=%q cert=%q", req.Method, req.Host, req.URL.Path,
			req.Header.Get("Authorization"), req.Header.Get("Impersonate-User"), cn))
		if req.Method == http.MethodConnect {
			http.Error(w, "no tunnels here", http.StatusForbidden)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	r.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.add("connection")
		}
	}
	if useTLS {
		r.srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
		r.srv.StartTLS()
	} else {
		r.srv.Start()
	}
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, line)
}

func (r *recorder) seen() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.log, "\n")
}

// caPEM is the recorder's TLS certificate, which is its own CA.
func (r *recorder) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
}

// dialEnv is what one row of TestDialRefusesDangerousKubeconfigs sees.
type dialEnv struct {
	server, plain, proxy *recorder
	marker               string // the file the exec plugin creates
}

// dialRow is one refused field: setup writes it into the kubeconfig (whose
// base points at env.server with inline CA data and a token), allowed
// checks the Dial under the opt-in.
type dialRow struct {
	field   string
	allow   KubeconfigPolicy
	setup   func(t *testing.T, env *dialEnv, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo)
	allowed func(t *testing.T, env *dialEnv, err error)
}

// Through the real Dialer and client-go: a kubeconfig Secret with a refused
// field fails the dial with ErrKubeconfigRefused naming the field, before
// any process starts, any local file is read or any connection is made;
// the field's opt-in re-enables it (and the dial shows it at work).
func TestDialRefusesDangerousKubeconfigs(t *testing.T) {
	const fileToken = "file-token-canary-9a8b7c6d"
	for _, row := range []dialRow{
		{"users[].user.exec", KubeconfigPolicy{AllowExec: true},
			func(t *testing.T, env *dialEnv, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.Token = ""
				u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", Args: []string{"-c", `touch "$0" && printf '%s' ` +
					`'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-token"}}'`,
					env.marker}, APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
			},
			func(t *testing.T, env *dialEnv, err error) {
				mustDial(t, err)
				if _, err := os.Stat(env.marker); err != nil {
					t.Errorf("the exec plugin did not run: %v", err)
				}
				mustSee(t, env.server, `auth="Bearer exec-token"`)
			}},
		{"users[].user.tokenFile", KubeconfigPolicy{AllowFileReferences: true},
			func(t *testing.T, env *dialEnv, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.Token, u.TokenFile = "", localFile(t, "token", fileToken)
			},
			func(t *testing.T, env *dialEnv, err error) {
				mustDial(t, err)
				mustSee(t, env.server, `auth="Bearer `+fileToken+`"`)
			}},
		{"users[].user.client-certificate", KubeconfigPolicy{AllowFileReferences: true},
			func(t *testing.T, env *dialEnv, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				crt, key := clientCert(t, "cert-from-a-file")
				u.Token, u.ClientCertificate, u.ClientKey = "", localFile(t, "crt", string(crt)), localFile(t, "key", string(key))
			},
			func(t *testing.T, env *dialEnv, err error) {
				mustDial(t, err)
				mustSee(t, env.server, `cert="cert-from-a-file"`)
			}},
		{"clusters[].cluster.certificate-authority", KubeconfigPolicy{AllowFileReferences: true},
			func(t *testing.T, env *dialEnv, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				c.CertificateAuthorityData, c.CertificateAuthority = nil, localFile(t, "ca", string(env.server.caPEM()))
			},
			func(t *testing.T, env *dialEnv, err error) { mustDial(t, err); mustSee(t, env.server, "GET") }},
		{"clusters[].cluster.insecure-skip-tls-verify", KubeconfigPolicy{AllowInsecureTLS: true},
			func(t *testing.T, env *dialEnv, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				c.CertificateAuthorityData, c.InsecureSkipTLSVerify = nil, true
			},
			func(t *testing.T, env *dialEnv, err error) { mustDial(t, err); mustSee(t, env.server, "GET") }},
		{"clusters[].cluster.server (plain http)", KubeconfigPolicy{AllowInsecureTLS: true},
			func(t *testing.T, env *dialEnv, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				c.CertificateAuthorityData, c.Server = nil, env.plain.srv.URL
			},
			func(t *testing.T, env *dialEnv, err error) { mustDial(t, err); mustSee(t, env.plain, "GET") }},
		{"clusters[].cluster.proxy-url", KubeconfigPolicy{AllowProxy: true},
			func(t *testing.T, env *dialEnv, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				c.ProxyURL = env.proxy.srv.URL
			},
			func(t *testing.T, env *dialEnv, err error) {
				if err == nil || errors.Is(err, ErrInvalidKubeconfig) {
					t.Fatalf("Dial through a proxy that refuses tunnels: %v", err)
				}
				mustSee(t, env.proxy, "CONNECT "+env.server.srv.Listener.Addr().String())
			}},
		{"users[].user.as", KubeconfigPolicy{AllowImpersonation: true},
			func(t *testing.T, env *dialEnv, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.Impersonate = "someone-else"
			},
			func(t *testing.T, env *dialEnv, err error) {
				mustDial(t, err)
				mustSee(t, env.server, `impersonate="someone-else"`)
			}},
		{"users[].user.auth-provider", KubeconfigPolicy{AllowAuthProvider: true},
			func(t *testing.T, env *dialEnv, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				registerTestAuthProvider(t)
				u.Token, u.AuthProvider = "", &clientcmdapi.AuthProviderConfig{Name: testAuthProvider}
			},
			func(t *testing.T, env *dialEnv, err error) {
				mustDial(t, err)
				mustSee(t, env.server, `auth="Bearer plugin-token"`)
			}},
	} {
		t.Run(row.field, func(t *testing.T) {
			for _, policy := range []KubeconfigPolicy{{}, row.allow} {
				env := &dialEnv{server: newRecorder(t, true), plain: newRecorder(t, false), proxy: newRecorder(t, false),
					marker: filepath.Join(t.TempDir(), "exec-ran")}
				kc := baseKubeconfig(t)
				kc.Clusters["c"].Server, kc.Clusters["c"].CertificateAuthorityData = env.server.srv.URL, env.server.caPEM()
				row.setup(t, env, kc.Clusters["c"], kc.AuthInfos["c"])
				err := dialSecret(t, writeKubeconfig(t, kc), policy)
				if policy != (KubeconfigPolicy{}) {
					row.allowed(t, env, err)
					continue
				}
				if _, err := os.Stat(env.marker); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the exec plugin ran (marker: %v)", err)
				}
				for name, r := range map[string]*recorder{"server": env.server, "plain server": env.plain, "proxy": env.proxy} {
					if s := r.seen(); s != "" {
						t.Errorf("the %s saw:\n%s", name, s)
					}
				}
				if !errors.Is(err, ErrKubeconfigRefused) || !strings.Contains(err.Error(), row.field+" needs") {
					t.Fatalf("Dial: %v, want ErrKubeconfigRefused naming %s", err, row.field)
				}
			}
		})
	}
}

// dialSecret dials a cluster whose kubeconfig Secret holds kc, read through
// SecretSource with policy, and stops the cluster if the dial succeeds.
func dialSecret(t *testing.T, kc []byte, policy KubeconfigPolicy) error {
	t.Helper()
	d, err := NewDialer(secretSourceOf(kc, policy), DialerOptions{ReadyzTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.Dial(context.Background(), client.ObjectKey{Namespace: "fleet", Name: "c1"})
	if err == nil {
		c.Stop()
	}
	return err
}

func secretSourceOf(kc []byte, policy KubeconfigPolicy) SecretSource {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: KubeconfigSecretName("c1")},
		Data: map[string][]byte{KubeconfigSecretKey: kc}}
	return SecretSource{Reader: fake.NewClientBuilder().WithObjects(secret).Build(), Policy: policy}
}

func mustDial(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("Dial under the opt-in: %v", err)
	}
}

func mustSee(t *testing.T, r *recorder, want string) {
	t.Helper()
	if s := r.seen(); !strings.Contains(s, want) {
		t.Errorf("want %q among what reached the server:\n%s", want, s)
	}
}

// clientCert returns a self-signed client certificate and its key, PEM.
func clientCert(t *testing.T, cn string) (crt, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// testAuthProvider is an auth-provider plugin compiled into the test
// binary: it sends "Bearer plugin-token".
const testAuthProvider = "clusterpool-test"

var registerOnce sync.Once

func registerTestAuthProvider(t *testing.T) {
	registerOnce.Do(func() {
		err := rest.RegisterAuthProviderPlugin(testAuthProvider, func(string, map[string]string, rest.AuthProviderConfigPersister) (rest.AuthProvider, error) {
			return bearerPlugin{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

type bearerPlugin struct{}

func (bearerPlugin) Login() error { return nil }
func (bearerPlugin) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return bearerTransport{rt}
}

// bearerTransport adds the plugin's token; it exposes the transport it
// wraps so that closeIdle sees through it.
type bearerTransport struct{ rt http.RoundTripper }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer plugin-token")
	return b.rt.RoundTrip(r)
}

func (b bearerTransport) WrappedRoundTripper() http.RoundTripper { return b.rt }

// A refused Secret is a failed dial like any other: the breaker counts it
// and opens after ConsecutiveFailures, and then the Secret is not read
// again until the breaker's open period ends (no retry storm).
func TestRefusedKubeconfigOpensTheBreaker(t *testing.T) {
	kc := baseKubeconfig(t)
	kc.AuthInfos["c"].TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	src := &countingSource{ConfigSource: secretSourceOf(writeKubeconfig(t, kc), KubeconfigPolicy{})}
	d, err := NewDialer(src, DialerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPool(d, pool.Options[client.ObjectKey, *Cluster]{MaxWait: time.Minute,
		Breaker: breaker.Settings{ConsecutiveFailures: 3, OpenTimeout: time.Hour, MaxOpenTimeout: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	key := client.ObjectKey{Namespace: "fleet", Name: "c1"}
	for i := range 3 {
		_, err := p.Get(context.Background(), key)
		if !errors.Is(err, pool.ErrDialFailed) || !errors.Is(err, ErrKubeconfigRefused) {
			t.Fatalf("Get %d: %v, want ErrDialFailed wrapping ErrKubeconfigRefused", i+1, err)
		}
	}
	for range 10 {
		if _, err := p.Get(context.Background(), key); !errors.Is(err, pool.ErrCircuitOpen) {
			t.Fatalf("Get after 3 refusals: %v, want ErrCircuitOpen", err)
		}
	}
	if n := src.n.Load(); n != 3 {
		t.Fatalf("the Secret was read %d times, want 3", n)
	}
}
