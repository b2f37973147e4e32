package shard

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/clusterpool/clusterpool/internal/envtestutil"
)

// The management apiserver of the envtest-based test, with Cluster API's
// Cluster CRD. It starts on the first needEnvtest, so that the unit tests
// run without it, and stops at the end of TestMain.
var (
	mgmtCfg *rest.Config
	env     *envtest.Environment
	envOnce sync.Once
	envErr  error
	ignore  goleak.Option // goroutines that exist once the apiserver runs
)

// needEnvtest starts the apiserver if needed; it fails the test (never
// skips it) when it cannot start, e.g. without KUBEBUILDER_ASSETS.
func needEnvtest(t *testing.T) {
	t.Helper()
	envOnce.Do(func() { envErr = startEnv() })
	if envErr != nil {
		t.Fatalf("envtest: %v", envErr)
	}
}

func startEnv() error {
	if _, err := envtestutil.Assets(); err != nil {
		return err
	}
	env = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "examples", "capi", "config", "crd")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting kube-apiserver: %w", err)
	}
	mgmtCfg = cfg
	ignore = goleak.IgnoreCurrent()
	return nil
}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	ignore = goleak.IgnoreCurrent()
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(ignore); err != nil {
			fmt.Fprintln(os.Stderr, "shard tests: leaked goroutines:", err)
			code = 1
		}
	}
	if env != nil {
		env.Stop()
	}
	os.Exit(code)
}
