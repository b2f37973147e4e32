package shard

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/clusterpool/clusterpool/internal/envtestsuite"
)

// The management apiserver of the envtest-based test, with Cluster API's
// Cluster CRD. It starts on the first needEnvtest, so that the unit tests
// run without it, and stops at the end of TestMain.
var (
	suite = envtestsuite.Suite{Name: "kube/shard", Envs: []*envtest.Environment{{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "examples", "capi", "config", "crd")},
		ErrorIfCRDPathMissing: true,
	}}}
	mgmtCfg *rest.Config
)

// needEnvtest starts the apiserver if needed; it fails the test (never
// skips it) when it cannot start, e.g. without KUBEBUILDER_ASSETS.
func needEnvtest(t *testing.T) {
	t.Helper()
	mgmtCfg = suite.Need(t)[0]
}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(suite.Main(m))
}
