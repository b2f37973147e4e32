package clustercache_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterpool/clusterpool/internal/envtestsuite"
)

// suite is one kube-apiserver with Cluster API's Cluster CRD: the
// management cluster, and the workload cluster every healthy Cluster's
// kubeconfig points at.
var suite = envtestsuite.Suite{Name: "clusterapi/clustercache", Envs: []*envtest.Environment{{
	CRDDirectoryPaths:     []string{crdDir()},
	ErrorIfCRDPathMissing: true,
}}}

// crdDir is examples/capi's Cluster CRD, generated from
// sigs.k8s.io/cluster-api/api v1.14.2.
func crdDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "examples", "capi", "config", "crd")
}

// TestMain fails the run if a goroutine outlives the tests (goleak).
func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(suite.Main(m))
}
