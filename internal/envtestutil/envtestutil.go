package envtestutil

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Assets returns the folder holding kube-apiserver and etcd: the
// KUBEBUILDER_ASSETS variable if set, else the output of
// hack/envtest-assets.sh, which builds them once (about 10 minutes) and
// caches them under bin/. It never returns an empty folder without an
// error, so tests fail rather than skip when the binaries are missing.
func Assets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, check(dir)
	}
	script, err := findUp("hack/envtest-assets.sh")
	if err != nil {
		return "", err
	}
	cmd := exec.Command("bash", script)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("envtestutil: %s: %w", script, err)
	}
	dir := strings.TrimSpace(string(out))
	if err := check(dir); err != nil {
		return "", err
	}
	os.Setenv("KUBEBUILDER_ASSETS", dir)
	return dir, nil
}

func check(dir string) error {
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return fmt.Errorf("envtestutil: %s missing in KUBEBUILDER_ASSETS=%s (run make envtest-assets): %w", b, dir, err)
		}
	}
	return nil
}

// findUp looks for rel in the working directory and its parents.
func findUp(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("envtestutil: " + rel + " not found above the working directory; set KUBEBUILDER_ASSETS")
		}
		dir = parent
	}
}

// Start starts one kube-apiserver with its etcd.
func Start() (*envtest.Environment, *rest.Config, error) {
	if _, err := Assets(); err != nil {
		return nil, nil, err
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("envtestutil: starting kube-apiserver: %w", err)
	}
	return env, cfg, nil
}

// Kubeconfig writes a kubeconfig for cfg. server, if not empty, replaces
// the server's host:port (to go through a fault proxy); token, if not
// empty, replaces the client certificate with a bearer token.
func Kubeconfig(cfg *rest.Config, server, token string) ([]byte, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("envtestutil: host %q: %w", cfg.Host, err)
	}
	if server != "" {
		u.Host = server
	}
	if u.Scheme == "" {
		u.Scheme = "https"
	}
	user := &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	if token != "" {
		user = &clientcmdapi.AuthInfo{Token: token}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: u.String(), CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = user
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	return clientcmd.Write(*kc)
}
