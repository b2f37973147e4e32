package clustercache

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capiclustercache "sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/clusterpool/clusterpool/kube"
)

// capiCreateRESTConfig is Cluster API v1.14.2's own createRESTConfig
// (controllers/clustercache/cluster_accessor_client.go): the rules
// ClusterCache reads a kubeconfig Secret with. clientConfig is its
// *clusterAccessorClientConfig, taken from a ClusterCache that Cluster
// API's SetupWithManager built (stockClientConfig).
//
//go:linkname capiCreateRESTConfig sigs.k8s.io/cluster-api/controllers/clustercache.createRESTConfig
func capiCreateRESTConfig(ctx context.Context, clientConfig unsafe.Pointer, c client.Reader, cluster client.ObjectKey) (*rest.Config, error)

// stockClientConfig returns the client config of a ClusterCache built by
// Cluster API's SetupWithManager, on a manager that is never started.
func stockClientConfig(t *testing.T) unsafe.Pointer {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := clusterv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{Scheme: s,
		Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := capiclustercache.SetupWithManager(context.Background(), mgr, capiclustercache.Options{
		SecretClient: fake.NewClientBuilder().Build(), Client: capiclustercache.ClientOptions{UserAgent: "parity"}},
		controller.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.(interface{ Shutdown() }).Shutdown)
	v := reflect.ValueOf(cc).Elem().FieldByName("clusterAccessorConfig").Elem().FieldByName("Client")
	if v.Type().String() != "*clustercache.clusterAccessorClientConfig" {
		t.Fatalf("Cluster API's clusterAccessorConfig.Client is a %s", v.Type())
	}
	return v.UnsafePointer()
}

// parityRow is one kubeconfig of the corpus: edit changes the base one
// (an https server with inline CA data, a token; entries named "c"); dir
// holds files of the controller's machine it may name.
type parityRow struct {
	name string
	edit func(kc *clientcmdapi.Config, dir string)
	// capi and dropIn say whether each accepts it.
	capi, dropIn bool
}

func cur(kc *clientcmdapi.Config) (*clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {
	return kc.Clusters["c"], kc.AuthInfos["c"]
}

// parityCorpus: every difference is a row where capi and dropIn differ.
func parityCorpus() []parityRow {
	return []parityRow{
		{"token", func(*clientcmdapi.Config, string) {}, true, true},
		{"client certificate data", func(kc *clientcmdapi.Config, _ string) {
			_, u := cur(kc)
			u.Token, u.ClientCertificateData, u.ClientKeyData = "", []byte("crt"), []byte("key")
		}, true, true},
		{"basic auth", func(kc *clientcmdapi.Config, _ string) {
			_, u := cur(kc)
			u.Token, u.Username, u.Password = "", "admin", "secret"
		}, true, true},
		{"tls-server-name", func(kc *clientcmdapi.Config, _ string) { c, _ := cur(kc); c.TLSServerName = "api.internal" }, true, true},
		{"disable-compression", func(kc *clientcmdapi.Config, _ string) { c, _ := cur(kc); c.DisableCompression = true }, true, true},
		{"context namespace", func(kc *clientcmdapi.Config, _ string) { kc.Contexts["c"].Namespace = "ns" }, true, true},
		{"insecure-skip-tls-verify", func(kc *clientcmdapi.Config, _ string) {
			c, _ := cur(kc)
			c.CertificateAuthorityData, c.InsecureSkipTLSVerify = nil, true
		}, true, true},
		{"insecure-skip-tls-verify with CA data", func(kc *clientcmdapi.Config, _ string) { c, _ := cur(kc); c.InsecureSkipTLSVerify = true }, true, true},
		{"plain http server", func(kc *clientcmdapi.Config, _ string) {
			c, _ := cur(kc)
			c.CertificateAuthorityData, c.Server = nil, "http://127.0.0.1:8080"
		}, true, true},
		{"proxy-url http", func(kc *clientcmdapi.Config, _ string) { c, _ := cur(kc); c.ProxyURL = "http://127.0.0.1:3128" }, true, true},
		{"proxy-url https", func(kc *clientcmdapi.Config, _ string) { c, _ := cur(kc); c.ProxyURL = "https://127.0.0.1:3129" }, true, true},
		{"proxy-url socks5", func(kc *clientcmdapi.Config, _ string) { c, _ := cur(kc); c.ProxyURL = "socks5://127.0.0.1:1080" }, true, true},
		{"impersonation as", func(kc *clientcmdapi.Config, _ string) { _, u := cur(kc); u.Impersonate = "someone" }, true, true},
		{"impersonation as-uid, as-groups, as-user-extra", func(kc *clientcmdapi.Config, _ string) {
			_, u := cur(kc)
			u.Impersonate, u.ImpersonateUID, u.ImpersonateGroups = "someone", "uid-1", []string{"g"}
			u.ImpersonateUserExtra = map[string][]string{"scopes": {"a"}}
		}, true, true},
		{"insecure-skip-tls-verify in an unused cluster", func(kc *clientcmdapi.Config, _ string) {
			kc.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://127.0.0.2", InsecureSkipTLSVerify: true}
		}, true, true},
		{"exec", func(kc *clientcmdapi.Config, _ string) { _, u := cur(kc); u.Token, u.Exec = "", execConfig() }, false, false},
		{"auth-provider", func(kc *clientcmdapi.Config, _ string) {
			_, u := cur(kc)
			u.Token, u.AuthProvider = "", &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"id-token": "t"}}
		}, false, false},
		// The deliberate difference: what reaches the controller's machine.
		{"tokenFile", func(kc *clientcmdapi.Config, dir string) {
			_, u := cur(kc)
			u.Token, u.TokenFile = "", filepath.Join(dir, "token")
		}, true, false},
		{"client-certificate and client-key files", func(kc *clientcmdapi.Config, dir string) {
			_, u := cur(kc)
			u.Token, u.ClientCertificate, u.ClientKey = "", filepath.Join(dir, "crt"), filepath.Join(dir, "key")
		}, true, false},
		{"certificate-authority file", func(kc *clientcmdapi.Config, dir string) {
			c, _ := cur(kc)
			c.CertificateAuthorityData, c.CertificateAuthority = nil, filepath.Join(dir, "ca")
		}, true, false},
		{"tokenFile in an unused user", func(kc *clientcmdapi.Config, dir string) {
			kc.AuthInfos["other"] = &clientcmdapi.AuthInfo{TokenFile: filepath.Join(dir, "token")}
		}, true, false},
		{"exec in an unused user", func(kc *clientcmdapi.Config, _ string) {
			kc.AuthInfos["other"] = &clientcmdapi.AuthInfo{Exec: execConfig()}
		}, true, false},
		// Malformed servers and contexts.
		{"server with userinfo", func(kc *clientcmdapi.Config, _ string) { c, _ := cur(kc); c.Server = "https://u:p@127.0.0.1:6443" }, true, false},
		{"server with a query", func(kc *clientcmdapi.Config, _ string) { c, _ := cur(kc); c.Server = "https://127.0.0.1:6443/?a=b" }, true, false},
		{"server without a scheme", func(kc *clientcmdapi.Config, _ string) { c, _ := cur(kc); c.Server = "127.0.0.1:6443" }, true, false},
		{"no server", func(kc *clientcmdapi.Config, _ string) { c, _ := cur(kc); c.Server = "" }, false, false},
		{"no current-context", func(kc *clientcmdapi.Config, _ string) { kc.CurrentContext = "" }, false, false},
		{"unknown current-context", func(kc *clientcmdapi.Config, _ string) { kc.CurrentContext = "nope" }, false, false},
	}
}

func execConfig() *clientcmdapi.ExecConfig {
	return &clientcmdapi.ExecConfig{Command: "/bin/false", APIVersion: "client.authentication.k8s.io/v1",
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
}

// TestKubeconfigParity runs one corpus of kubeconfig Secrets through
// Cluster API's ClusterCache rules (its own createRESTConfig) and through
// the drop-in's (kube.SecretSource under DefaultKubeconfigPolicy, as
// SetupWithManager reads them), and logs every difference. The drop-in
// accepts everything ClusterCache accepts but local files and commands
// (anywhere in the kubeconfig) and servers that are not an https (or
// http) URL without userinfo, query or fragment; it accepts nothing
// ClusterCache refuses.
func TestKubeconfigParity(t *testing.T) {
	clientConfig := stockClientConfig(t)
	dir := t.TempDir()
	for name, content := range map[string]string{"token": "file-token", "crt": "crt", "key": "key", "ca": string(testCA)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-50s %-8s %-8s\n", "kubeconfig", "CAPI", "drop-in")
	for _, row := range parityCorpus() {
		kc := clientcmdapi.NewConfig()
		kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: testCA}
		kc.AuthInfos["c"] = &clientcmdapi.AuthInfo{Token: "token"}
		kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "c"}
		kc.CurrentContext = "c"
		row.edit(kc, dir)
		data, err := clientcmd.Write(*kc)
		if err != nil {
			t.Fatal(err)
		}
		reader := fake.NewClientBuilder().WithObjects(&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: kube.KubeconfigSecretName("c1")},
			Data:       map[string][]byte{kube.KubeconfigSecretKey: data}}).Build()
		key := client.ObjectKey{Namespace: "ns", Name: "c1"}
		_, capiErr := capiCreateRESTConfig(context.Background(), clientConfig, reader, key)
		_, _, dropErr := kube.SecretSource{Reader: reader, Policy: DefaultKubeconfigPolicy()}.Config(context.Background(), key)
		capi, dropIn := capiErr == nil, dropErr == nil
		mark := ""
		if capi != dropIn {
			mark = "  <- differs"
		}
		fmt.Fprintf(&table, "%-50s %-8v %-8v%s\n", row.name, capi, dropIn, mark)
		if capi != row.capi || dropIn != row.dropIn {
			t.Errorf("%s: Cluster API accepts: %v (%v), drop-in accepts: %v (%v); want %v and %v",
				row.name, capi, capiErr, dropIn, dropErr, row.capi, row.dropIn)
		}
	}
	t.Log(table.String())
}

// testCA is a self-signed CA certificate, PEM.
var testCA = func() []byte {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "parity-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}()
