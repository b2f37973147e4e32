package envtestsuite

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterpool/clusterpool/internal/envtestutil"
)

// Suite is the apiservers of one test package. Declare it as a package
// variable, call Need from the tests that use the apiservers and Main from
// TestMain.
type Suite struct {
	// Name names the package in failure messages.
	Name string
	// Envs are the environments to start, in order; a nil Envs starts one
	// plain apiserver.
	Envs []*envtest.Environment

	once   sync.Once
	err    error
	cfgs   []*rest.Config
	conns  *connrotation.Dialer
	ignore goleak.Option // goroutines that exist once the apiservers run
}

// Need starts the apiservers if needed and returns their configs, in the
// order of Envs. It fails the test (never skips it) when they cannot
// start, e.g. without KUBEBUILDER_ASSETS. Every client built from a
// returned config (or a copy) dials through the suite, so Main closes its
// connections, idle or not.
func (s *Suite) Need(t testing.TB) []*rest.Config {
	t.Helper()
	s.once.Do(func() { s.err = s.start() })
	if s.err != nil {
		t.Fatalf("envtest: %v", s.err)
	}
	return s.cfgs
}

func (s *Suite) start() error {
	if _, err := envtestutil.Assets(); err != nil {
		return err
	}
	if s.Envs == nil {
		s.Envs = []*envtest.Environment{{}}
	}
	s.conns = connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	for _, env := range s.Envs {
		cfg, err := env.Start()
		if err != nil {
			return fmt.Errorf("starting kube-apiserver: %w", err)
		}
		cfg.Dial = s.conns.DialContext
		s.cfgs = append(s.cfgs, cfg)
	}
	s.ignore = goleak.IgnoreCurrent()
	return nil
}

// Main runs the tests; then, if they passed, it closes the connections
// dialed through the suite and fails the run if a goroutine the tests
// started outlived them. It stops the apiservers last and returns the exit
// code for os.Exit.
func (s *Suite) Main(m *testing.M) int {
	s.ignore = goleak.IgnoreCurrent()
	code := m.Run()
	if s.conns != nil {
		s.conns.CloseAll()
	}
	if code == 0 {
		if err := s.leaked(); err != nil {
			fmt.Fprintf(os.Stderr, "%s tests: leaked goroutines: %v\n", s.Name, err)
			code = 1
		}
	}
	for _, env := range s.Envs[:len(s.cfgs)] {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "%s tests: stopping envtest: %v\n", s.Name, err)
			code = 1
		}
	}
	return code
}

// leaked looks for goroutines the tests left, after garbage collections:
// client-go's TLS transport cache (v0.36) runs a certificate-reload
// goroutine per transport built from certificate files until the transport
// is collected (a runtime cleanup cancels it), so an unreachable transport
// is not a leak, while a goroutine something still holds is.
func (s *Suite) leaked() error {
	var err error
	for range 3 {
		runtime.GC()
		if err = goleak.Find(s.ignore); err == nil {
			return nil
		}
	}
	return err
}
