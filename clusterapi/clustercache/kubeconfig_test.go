package clustercache_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/clusterpool/clusterpool/clusterapi/clustercache"
	"github.com/clusterpool/clusterpool/kube"
)

// TestKubeconfigProxyAndInsecure: under the default policy, a kubeconfig
// with proxy-url connects through an HTTP CONNECT proxy on 127.0.0.1, and
// one with insecure-skip-tls-verify (no CA) connects, as with Cluster
// API's ClusterCache; under the strict zero kube.KubeconfigPolicy
// (SetupWithManagerAndPolicy) the proxied one does not.
func TestKubeconfigProxyAndInsecure(t *testing.T) {
	proxy := newConnectProxy(t)
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			e := newEnv(t, "kubeconfig")
			var cc clustercache.ClusterCache
			if strict {
				var err error
				cc, err = clustercache.SetupWithManagerAndPolicy(context.Background(), e.mgr, clustercache.Options{
					SecretClient: e.mgr.GetClient(), Client: clustercache.ClientOptions{UserAgent: "kubeconfig-test"}},
					controller.Options{}, kube.KubeconfigPolicy{})
				if err != nil {
					t.Fatal(err)
				}
			} else {
				cc = e.setup(t, 10, nil)
			}
			e.start(t, cc)
			ctx := context.Background()
			tunnels := proxy.tunnels.Load()
			kc := e.editKubeconfig(t, func(c *clientcmdapi.Cluster) { c.ProxyURL = proxy.url })
			if err := e.createCluster(ctx, "proxied", kc, true); err != nil {
				t.Fatal(err)
			}
			kc = e.editKubeconfig(t, func(c *clientcmdapi.Cluster) { c.CertificateAuthorityData, c.InsecureSkipTLSVerify = nil, true })
			if err := e.createCluster(ctx, "insecure", kc, true); err != nil {
				t.Fatal(err)
			}
			proxied := client.ObjectKey{Namespace: e.ns, Name: "proxied"}
			if strict {
				eventually(t, time.Minute, func() error {
					if st := cc.GetHealthCheckingState(ctx, proxied); st.ConsecutiveFailures == 0 {
						return errNotYet // not dialed yet
					}
					return nil
				})
				if _, err := cc.GetClient(ctx, proxied); err == nil || proxy.tunnels.Load() != tunnels {
					t.Fatalf("under the zero policy, proxy-url: GetClient: %v, %d tunnels", err, proxy.tunnels.Load()-tunnels)
				}
				return
			}
			for _, name := range []string{"proxied", "insecure"} {
				key := client.ObjectKey{Namespace: e.ns, Name: name}
				eventually(t, time.Minute, func() error {
					c, err := cc.GetClient(ctx, key)
					if err != nil {
						return errors.Join(errNotYet, err)
					}
					return c.List(ctx, &corev1.NodeList{})
				})
			}
			if proxy.tunnels.Load() == tunnels {
				t.Fatal("the proxied cluster connected without a tunnel through its proxy")
			}
		})
	}
}

// editKubeconfig returns the suite's kubeconfig with edit applied to its
// cluster entry.
func (e *testEnv) editKubeconfig(t *testing.T, edit func(*clientcmdapi.Cluster)) []byte {
	t.Helper()
	kc, err := clientcmd.Load(e.kubeconfig(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range kc.Clusters {
		edit(c)
	}
	out, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// connectProxy is an HTTP CONNECT proxy on 127.0.0.1 that tunnels to
// loopback addresses only, and counts its tunnels.
type connectProxy struct {
	url     string
	tunnels atomic.Int32
	ln      net.Listener
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func newConnectProxy(t *testing.T) *connectProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &connectProxy{url: "http://" + ln.Addr().String(), ln: ln}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *connectProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.track(c)
		p.wg.Go(func() { p.serve(c) })
	}
}

// serve answers one CONNECT, then copies both ways until either side ends.
func (p *connectProxy) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	host, _, err := net.SplitHostPort(req.Host)
	if req.Method != http.MethodConnect || err != nil || !net.ParseIP(host).IsLoopback() {
		fmt.Fprint(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
		return
	}
	dst, err := net.DialTimeout("tcp", req.Host, 10*time.Second)
	if err != nil {
		fmt.Fprint(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	p.track(dst)
	defer dst.Close()
	p.tunnels.Add(1)
	fmt.Fprint(c, "HTTP/1.1 200 Connection Established\r\n\r\n")
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(dst, br) // ends with either side
		dst.Close()
		close(done)
	}()
	_, _ = io.Copy(c, dst)
	c.Close()
	<-done
}

func (p *connectProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

// close stops the proxy and ends its tunnels.
func (p *connectProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
