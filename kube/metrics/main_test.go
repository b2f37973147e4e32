package metrics_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/clusterpool/clusterpool/internal/envtestutil"
)

// The real kube-apiserver of TestManagerEndpoint, started on first use
// (so that the other tests run without it) and stopped by TestMain.
var (
	envOnce sync.Once
	env     *envtest.Environment
	envCfg  *rest.Config
	envErr  error
)

// needEnvtest returns the apiserver's config; it fails the test (never
// skips it) when the apiserver cannot start, e.g. without
// KUBEBUILDER_ASSETS.
func needEnvtest(t *testing.T) *rest.Config {
	t.Helper()
	envOnce.Do(func() { env, envCfg, envErr = envtestutil.Start() })
	if envErr != nil {
		t.Fatalf("envtest: %v", envErr)
	}
	return envCfg
}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
			code = 1
		}
	}
	if code == 0 {
		// The pools, managers and metrics servers the tests started must
		// be gone.
		if err := goleak.Find(
			// klog's flush daemon starts once per process.
			goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "kube/metrics tests: leaked goroutines:", err)
			code = 1
		}
	}
	os.Exit(code)
}
