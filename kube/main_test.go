package kube

import (
	"context"
	"net/http"
	"os"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/clusterpool/clusterpool/internal/envtestsuite"
	"github.com/clusterpool/clusterpool/internal/envtestutil"
)

// The real apiservers of the envtest-based tests: one management cluster
// holding the kubeconfig Secrets, and one workload cluster. They start on
// the first needEnvtest, so that unit and fuzz tests of the package run
// without them, and stop at the end of TestMain.
var (
	suite            = envtestsuite.Suite{Name: "kube", Envs: []*envtest.Environment{{}, {}}}
	mgmtCfg, workCfg *rest.Config
	mgmt             client.Client
	mgmtHTTP         *http.Client
)

// needEnvtest starts the apiservers if needed; it fails the test (never
// skips it) when they cannot start, e.g. without KUBEBUILDER_ASSETS.
func needEnvtest(t *testing.T) {
	t.Helper()
	cfgs := suite.Need(t)
	if mgmt != nil {
		return
	}
	mgmtCfg, workCfg = cfgs[0], cfgs[1]
	var err error
	if mgmtHTTP, err = rest.HTTPClientFor(mgmtCfg); err != nil {
		t.Fatal(err)
	}
	if mgmt, err = client.New(mgmtCfg, client.Options{HTTPClient: mgmtHTTP}); err != nil {
		t.Fatal(err)
	}
}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(suite.Main(m))
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
