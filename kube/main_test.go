package kube

import (
	"context"
	"fmt"
	"os"
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

// The real apiservers of these tests: one management cluster holding the
// kubeconfig Secrets, and one workload cluster.
var (
	mgmtCfg, workCfg *rest.Config
	mgmt             client.Client
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube tests:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	ctrllog.SetLogger(logr.Discard())
	var envs []*envtest.Environment
	defer func() {
		for _, e := range envs {
			e.Stop()
		}
	}()
	for _, cfg := range []**rest.Config{&mgmtCfg, &workCfg} {
		env, c, err := envtestutil.Start()
		if err != nil {
			return 0, err
		}
		envs = append(envs, env)
		*cfg = c
	}
	mgmtHTTP, err := rest.HTTPClientFor(mgmtCfg)
	if err != nil {
		return 0, err
	}
	if mgmt, err = client.New(mgmtCfg, client.Options{HTTPClient: mgmtHTTP}); err != nil {
		return 0, err
	}
	// Goroutines of the apiserver processes and the management client exist
	// before the tests; everything the tests start must be gone after.
	ignore := goleak.IgnoreCurrent()
	code := m.Run()
	closeIdle(mgmtHTTP) // the tests' own management client
	if code == 0 {
		if err := goleak.Find(ignore); err != nil {
			return 1, fmt.Errorf("leaked goroutines: %w", err)
		}
	}
	return code, nil
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
