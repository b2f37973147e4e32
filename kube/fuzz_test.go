package kube

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/clusterpool/clusterpool/internal/kubeconfigpolicy"
)

// vocabulary is every word ParseKubeconfig's errors are made of: the fixed
// messages, and the refusal of every field the policy knows (which names
// fields and policy options only).
var vocabulary = strings.Join([]string{
	"kube: invalid kubeconfig: empty | does not parse | no server | parser failed | current context is not usable",
	"current-context names no context | current context names no cluster | current context names no user",
	"server is not an https URL",
	kubeconfigpolicy.Policy{}.Check(everyUse()).Error(),
}, " | ")

// everyUse is every use the policy checks, of kubeconfigs and of REST
// configs.
func everyUse() []kubeconfigpolicy.Use {
	uses := kubeconfigpolicy.RESTUses(&rest.Config{Host: "http://h", ExecProvider: &clientcmdapi.ExecConfig{},
		AuthProvider: &clientcmdapi.AuthProviderConfig{}, BearerTokenFile: "f",
		TLSClientConfig: rest.TLSClientConfig{CAFile: "f", Insecure: true},
		Proxy:           http.ProxyFromEnvironment, Impersonate: rest.ImpersonationConfig{UserName: "u"}})
	for _, row := range refusedRows() {
		for _, c := range row.needs {
			uses = append(uses, kubeconfigpolicy.Use{Field: row.field, Needs: c})
		}
	}
	return uses
}

// Every fuzz seed that uses a capability is refused by the policy (not
// merely unparsable), so the fuzzers start from real refusals.
func TestFuzzSeedsAreRefused(t *testing.T) {
	dir := t.TempDir()
	for i, s := range fuzzSeeds(filepath.Join(dir, "m"), filepath.Join(dir, "t")) {
		if _, err := ParseKubeconfig([]byte(s)); !errors.Is(err, ErrKubeconfigRefused) {
			t.Errorf("seed %d: %v, want ErrKubeconfigRefused", i, err)
		}
	}
}

// fuzzSeeds are kubeconfigs that use each refused capability; the exec
// plugin would create marker, the token file holds fileCanary.
func fuzzSeeds(marker, tokenFile string) []string {
	const head = "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
	const cluster = "clusters: [{name: c, cluster: {server: \"https://127.0.0.1:6443\"}}]\n"
	return []string{
		head + cluster + "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never, " +
			"command: /bin/sh, args: [-c, \"touch " + marker + "\"]}}}]\n",
		head + cluster + "users: [{name: u, user: {tokenFile: \"" + tokenFile + "\"}}]\n",
		head + cluster + "users: [{name: u, user: {client-certificate: \"" + tokenFile + "\", client-key: \"" + tokenFile + "\"}}]\n",
		head + cluster + "users: [{name: u, user: {auth-provider: {name: gcp, config: {cmd-path: /bin/sh, cmd-args: \"-c touch " + marker + "\"}}}}]\n",
		head + cluster + "users: [{name: u, user: {token: canary-token-123456, as: admin, as-groups: [system:masters]}}]\n",
		head + cluster + "users: [{name: u, user: {token: canary-token-123456}}, {name: v, user: {tokenFile: \"" + tokenFile + "\"}}]\n",
		head + "clusters: [{name: c, cluster: {server: \"https://127.0.0.1:6443\", certificate-authority: \"" + tokenFile + "\"}}]\n" +
			"users: [{name: u, user: {token: canary-token-123456}}]\n",
		head + "clusters: [{name: c, cluster: {server: \"https://127.0.0.1:6443\", insecure-skip-tls-verify: true, proxy-url: \"http://127.0.0.1:1\"}}]\n" +
			"users: [{name: u, user: {token: canary-token-123456}}]\n",
		head + "clusters: [{name: c, cluster: {server: \"http://127.0.0.1:8080\"}}]\nusers: [{name: u, user: {token: canary-token-123456}}]\n",
	}
}

// fuzzFiles creates the token file and names the marker of fuzzSeeds.
func fuzzFiles(f *testing.F) (marker, tokenFile string) {
	dir := f.TempDir()
	tokenFile = filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(fileCanary), 0o600); err != nil {
		f.Fatal(err)
	}
	return filepath.Join(dir, "exec-ran"), tokenFile
}

const fileCanary = "file-canary-3c2b1a0f9e"

// inert fails unless cfg, which the strict policy let through, can neither
// execute anything nor read a local file, verifies TLS, and holds nothing
// read from a file; and unless no exec plugin ran.
func inert(t *testing.T, cfg *rest.Config, marker string) {
	t.Helper()
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.BearerTokenFile != "" || cfg.CAFile != "" ||
		cfg.CertFile != "" || cfg.KeyFile != "" || cfg.Insecure || cfg.Proxy != nil || cfg.Impersonate.UserName != "" ||
		len(cfg.Impersonate.Groups) > 0 || !strings.HasPrefix(cfg.Host, "https://") || strings.Contains(cfg.BearerToken, fileCanary) {
		t.Fatalf("the strict policy let through a config that executes, reads files, impersonates or skips TLS")
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an exec plugin ran (marker: %v)", err)
	}
}

// ParseKubeconfig never panics, never executes or reads anything, and its
// error quotes nothing of its input.
func FuzzParseKubeconfig(f *testing.F) {
	marker, tokenFile := fuzzFiles(f)
	f.Add([]byte(""))
	f.Add([]byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: https://127.0.0.1:6443}}]\n" +
		"users: [{name: u, user: {token: canary-token-123456}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"))
	f.Add([]byte("apiVersion: v1\nusers: [{name: u, user: {token: canary-token-123456}}]\ncurrent-context: nowhere\n"))
	f.Add([]byte(`{"apiVersion":"v1","clusters":[{"name":"c","cluster":{"server":"canary-token-123456"}}`))
	f.Add([]byte("\x00\xff\xfe binary canary-token-123456"))
	for _, s := range fuzzSeeds(marker, tokenFile) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseKubeconfig(data)
		if err == nil {
			if cfg == nil || cfg.Host == "" {
				t.Fatalf("no error and no usable config")
			}
			inert(t, cfg, marker)
			return
		}
		if !errors.Is(err, ErrInvalidKubeconfig) {
			t.Fatalf("error %v does not match ErrInvalidKubeconfig", err)
		}
		quotesNothing(t, err.Error(), data)
	})
}

// quotesNothing fails if msg contains a word of 8 or more characters of
// data that is not part of the errors' own vocabulary.
func quotesNothing(t *testing.T, msg string, data []byte) {
	t.Helper()
	for _, word := range strings.FieldsFunc(string(data), func(r rune) bool {
		return strings.ContainsRune(" \t\n\r:{}[],\"'", r)
	}) {
		if len(word) >= 8 && strings.Contains(msg, word) && !strings.Contains(vocabulary, word) {
			t.Fatalf("error %q quotes the input (%q)", msg, word)
		}
	}
}

// The Secret → rest.Config path: whatever a kubeconfig Secret holds (any
// key, any bytes), SecretSource with its zero Policy either returns a
// config that can neither execute anything nor read a local file, or an
// error matching ErrInvalidKubeconfig that names the Secret and quotes
// nothing of its content; no input makes the parser execute or read
// anything.
func FuzzSecretSource(f *testing.F) {
	marker, tokenFile := fuzzFiles(f)
	f.Add("value", []byte("apiVersion: v1\nusers: [{name: u, user: {token: canary-token-123456}}]\n"))
	f.Add("kubeconfig", []byte("apiVersion: v1\nclusters: [{name: c, cluster: {server: https://127.0.0.1:6443}}]\n"))
	f.Add("value", []byte("{\"clusters\": [canary-token-123456"))
	for _, s := range fuzzSeeds(marker, tokenFile) {
		f.Add("value", []byte(s))
	}
	f.Fuzz(func(t *testing.T, dataKey string, value []byte) {
		if dataKey == "" {
			dataKey = "x"
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: KubeconfigSecretName("c1")},
			Data: map[string][]byte{dataKey: value}}
		src := SecretSource{Reader: fake.NewClientBuilder().WithObjects(secret).Build()}
		cfg, rev, err := src.Config(context.Background(), client.ObjectKey{Namespace: "fleet", Name: "c1"})
		if err == nil {
			if cfg == nil || cfg.Host == "" || rev == "" || dataKey != KubeconfigSecretKey {
				t.Fatalf("no error but config %v, revision %q (data key %q)", cfg, rev, dataKey)
			}
			inert(t, cfg, marker)
			return
		}
		if !errors.Is(err, ErrInvalidKubeconfig) || !strings.Contains(err.Error(), "fleet/c1-kubeconfig") {
			t.Fatalf("error %v: want ErrInvalidKubeconfig naming the Secret", err)
		}
		quotesNothing(t, strings.ReplaceAll(err.Error(), "fleet/c1-kubeconfig", ""), value)
	})
}
