package grayproxy

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterpool/clusterpool/internal/envtestsuite"
)

var suite = envtestsuite.Suite{Name: "internal/grayproxy", Envs: []*envtest.Environment{{}}}

func TestMain(m *testing.M) { os.Exit(suite.Main(m)) }

// apiserver starts the package's apiserver if needed and returns its
// admin config (a client certificate in system:masters).
func apiserver(t *testing.T) *rest.Config { return suite.Need(t)[0] }

// clientCAs is the apiserver's --client-ca-file.
func clientCAs(t *testing.T) []byte {
	t.Helper()
	apiserver(t)
	file := suite.Envs[0].ControlPlane.GetAPIServer().Configure().Get("client-ca-file").Get(nil)
	if len(file) != 1 {
		t.Fatalf("client-ca-file: %q", file)
	}
	pem, err := os.ReadFile(file[0])
	if err != nil {
		t.Fatal(err)
	}
	return pem
}

// start starts a proxy in front of the apiserver, accepting its client
// certificates, and closes it at the end of the test.
func start(t *testing.T) *Proxy {
	t.Helper()
	p, err := New(Config{Target: apiserver(t), ClientCAs: clientCAs(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// through is a clientset for user's credentials through p.
func through(t *testing.T, p *Proxy, user *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cfg := p.ClientConfig(user)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// user returns the config of a new client certificate user with groups,
// signed by the apiserver's client CA.
func user(t *testing.T, name string, groups ...string) *rest.Config {
	t.Helper()
	u, err := suite.Envs[0].AddUser(envtest.User{Name: name, Groups: groups}, apiserver(t))
	if err != nil {
		t.Fatal(err)
	}
	return u.Config()
}

// ctxT is a context that ends with the test or after a generous bound.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// namespace creates a namespace of its own for one run of a test.
func namespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gray-"}}
	ns, err := cs.CoreV1().Namespaces().Create(ctxT(t), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// configMap creates a ConfigMap named name in ns through cs.
func configMap(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctxT(t), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
