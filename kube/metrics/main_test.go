package metrics_test

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/clusterpool/clusterpool/internal/envtestsuite"
)

// The real kube-apiserver of TestManagerEndpoint, started on first use
// (so that the other tests run without it) and stopped by TestMain.
var suite = envtestsuite.Suite{Name: "kube/metrics"}

// needEnvtest returns the apiserver's config; it fails the test (never
// skips it) when the apiserver cannot start, e.g. without
// KUBEBUILDER_ASSETS.
func needEnvtest(t *testing.T) *rest.Config { return suite.Need(t)[0] }

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(suite.Main(m))
}
