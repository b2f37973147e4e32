package kube

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/clusterpool/clusterpool/internal/envtestutil"
)

// The real apiservers of the envtest-based tests: one management cluster
// holding the kubeconfig Secrets, and one workload cluster. They start on
// the first needEnvtest, so that unit and fuzz tests of the package run
// without them, and stop at the end of TestMain.
var (
	mgmtCfg, workCfg *rest.Config
	mgmt             client.Client
	mgmtHTTP         *http.Client

	envOnce sync.Once
	envErr  error
	envs    []*envtest.Environment
	ignore  goleak.Option // goroutines that exist once the apiservers run
)

// needEnvtest starts the apiservers if needed; it fails the test (never
// skips it) when they cannot start, e.g. without KUBEBUILDER_ASSETS.
func needEnvtest(t *testing.T) {
	t.Helper()
	envOnce.Do(func() { envErr = startEnvs() })
	if envErr != nil {
		t.Fatalf("envtest: %v", envErr)
	}
}

func startEnvs() error {
	for _, cfg := range []**rest.Config{&mgmtCfg, &workCfg} {
		env, c, err := envtestutil.Start()
		if err != nil {
			return err
		}
		envs = append(envs, env)
		*cfg = c
	}
	var err error
	if mgmtHTTP, err = rest.HTTPClientFor(mgmtCfg); err != nil {
		return err
	}
	if mgmt, err = client.New(mgmtCfg, client.Options{HTTPClient: mgmtHTTP}); err != nil {
		return err
	}
	ignore = goleak.IgnoreCurrent()
	return nil
}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	ignore = goleak.IgnoreCurrent()
	code := m.Run()
	if mgmtHTTP != nil {
		closeIdle(mgmtHTTP) // the tests' own management client
	}
	if code == 0 {
		// Everything the tests started must be gone.
		if err := goleak.Find(ignore); err != nil {
			fmt.Fprintln(os.Stderr, "kube tests: leaked goroutines:", err)
			code = 1
		}
	}
	for _, e := range envs {
		e.Stop()
	}
	os.Exit(code)
}

// putKubeconfig writes the Cluster API kubeconfig Secret of ns/name.
func putKubeconfig(t *testing.T, key client.ObjectKey, kubeconfig []byte) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: key.Namespace}}
	if err := mgmt.Create(ctx, ns); err != nil && !isAlreadyExists(err) {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: KubeconfigSecretName(key.Name)}}
	var existing corev1.Secret
	if err := mgmt.Get(ctx, client.ObjectKeyFromObject(s), &existing); err == nil {
		existing.Data = map[string][]byte{KubeconfigSecretKey: kubeconfig}
		if err := mgmt.Update(ctx, &existing); err != nil {
			t.Fatal(err)
		}
		return
	}
	s.Data = map[string][]byte{KubeconfigSecretKey: kubeconfig}
	if err := mgmt.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
}

func kubeconfig(t *testing.T, server, token string) []byte {
	t.Helper()
	kc, err := envtestutil.Kubeconfig(workCfg, server, token)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

func workAddr(t *testing.T) string {
	t.Helper()
	u, err := urlHost(workCfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
