package kube

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	kcp "github.com/clusterpool/clusterpool/internal/kubeconfigpolicy"
)

// canaryValue is put in every refused field's value: errors must never
// contain it.
const canaryValue = "canary-value-5e4d3c2b1a"

// baseKubeconfig is what Cluster API writes: an https server, inline CA
// data, a token; one cluster, user and context, all named "c".
func baseKubeconfig(t *testing.T) *clientcmdapi.Config {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: selfSignedCA(t)}
	kc.AuthInfos["c"] = &clientcmdapi.AuthInfo{Token: "canary-token-0f1e2d3c4b5a"}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "c"}
	kc.CurrentContext = "c"
	return kc
}

func writeKubeconfig(t testing.TB, kc *clientcmdapi.Config) []byte {
	t.Helper()
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// localFile writes a file of the "controller's machine" and returns its
// path, which contains canaryValue.
func localFile(t testing.TB, name, content string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), canaryValue)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// capability is one of the capabilities a KubeconfigPolicy field allows.
type capability = kcp.Capability

// refusedRow is a kubeconfig field the zero policy refuses.
type refusedRow struct {
	field  string       // what the error must name
	needs  []capability // capabilities that together allow it
	mutate func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo)
}

func refusedRows() []refusedRow {
	exec := func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		u.Token = ""
		u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", Args: []string{"-c", "echo " + canaryValue},
			APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	}
	return []refusedRow{
		{"users[].user.exec", []capability{kcp.Exec}, exec},
		{"users[].user.auth-provider", []capability{kcp.AuthProvider}, func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token = ""
			u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"id-token": canaryValue}}
		}},
		{"users[].user.auth-provider.config.cmd-*", []capability{kcp.AuthProvider, kcp.Exec}, func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token = ""
			u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "gcp", Config: map[string]string{"cmd-path": "/bin/" + canaryValue}}
		}},
		{"users[].user.tokenFile", []capability{kcp.Files}, func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.TokenFile = "", localFile(t, "token", "file-token")
		}},
		{"users[].user.client-certificate", []capability{kcp.Files}, func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.ClientCertificate, u.ClientKeyData = "", localFile(t, "crt", "x"), []byte("key")
		}},
		{"users[].user.client-key", []capability{kcp.Files}, func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.ClientCertificateData, u.ClientKey = "", []byte("crt"), localFile(t, "key", "x")
		}},
		{"clusters[].cluster.certificate-authority", []capability{kcp.Files}, func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			c.CertificateAuthorityData, c.CertificateAuthority = nil, localFile(t, "ca", "x")
		}},
		{"clusters[].cluster.insecure-skip-tls-verify", []capability{kcp.InsecureTLS}, func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			c.CertificateAuthorityData, c.InsecureSkipTLSVerify = nil, true
		}},
		{"clusters[].cluster.server (plain http)", []capability{kcp.InsecureTLS}, func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			c.CertificateAuthorityData, c.Server = nil, "http://127.0.0.1:8080/"+canaryValue
		}},
		{"clusters[].cluster.proxy-url", []capability{kcp.Proxy}, func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			c.ProxyURL = "socks5://127.0.0.1:1080/" + canaryValue
		}},
		{"users[].user.as", []capability{kcp.Impersonation}, func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Impersonate = canaryValue
		}},
		{"users[].user.as-uid", []capability{kcp.Impersonation}, func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Impersonate, u.ImpersonateUID = "someone", canaryValue
		}},
		{"users[].user.as-groups", []capability{kcp.Impersonation}, func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Impersonate, u.ImpersonateGroups = "someone", []string{canaryValue}
		}},
		{"users[].user.as-user-extra", []capability{kcp.Impersonation}, func(t *testing.T, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Impersonate, u.ImpersonateUserExtra = "someone", map[string][]string{"k": {canaryValue}}
		}},
	}
}

// policyOf allows exactly caps.
func policyOf(caps ...capability) KubeconfigPolicy {
	var p KubeconfigPolicy
	v := reflect.ValueOf(&p).Elem()
	for _, c := range caps {
		v.FieldByName(c.Option()).SetBool(true)
	}
	return p
}

var allCapabilities = []capability{kcp.Exec, kcp.AuthProvider, kcp.Files, kcp.InsecureTLS, kcp.Proxy, kcp.Impersonation}

// Each refused field gives ErrKubeconfigRefused naming the field and its
// opt-in, never a value; each opt-in re-enables exactly its capability:
// a policy parses the kubeconfig iff it allows every capability the field
// needs, and the REST config then uses nothing the policy does not allow.
func TestKubeconfigPolicyRefusesEachFieldUnlessAllowed(t *testing.T) {
	for _, row := range refusedRows() {
		t.Run(row.field, func(t *testing.T) {
			kc := baseKubeconfig(t)
			row.mutate(t, kc.Clusters["c"], kc.AuthInfos["c"])
			data := writeKubeconfig(t, kc)

			_, err := ParseKubeconfig(data)
			if !errors.Is(err, ErrKubeconfigRefused) || !errors.Is(err, ErrInvalidKubeconfig) {
				t.Fatalf("ParseKubeconfig: %v, want ErrKubeconfigRefused", err)
			}
			msg := err.Error()
			for _, c := range row.needs {
				if !strings.Contains(msg, row.field+" needs") || !strings.Contains(msg, "KubeconfigPolicy."+c.Option()) {
					t.Errorf("error %q does not name %s and %s", msg, row.field, c.Option())
				}
			}
			if strings.Contains(msg, canaryValue) {
				t.Errorf("error %q quotes the field's value", msg)
			}

			policies := [][]capability{row.needs}
			for _, c := range allCapabilities {
				policies = append(policies, []capability{c}, without(allCapabilities, c))
			}
			for _, caps := range policies {
				policy := policyOf(caps...)
				cfg, err := ParseKubeconfigWith(data, policy)
				if want := subset(row.needs, caps); (err == nil) != want {
					t.Errorf("policy %+v: err %v, want allowed=%v", policy, err, want)
				}
				if err == nil {
					for _, u := range kcp.RESTUses(cfg) {
						if !kcp.Policy(policy).Allows(u.Needs) {
							t.Errorf("policy %+v: the REST config uses %s", policy, u.Field)
						}
					}
				}
			}
		})
	}
}

func without(caps []capability, c capability) []capability {
	return slices.DeleteFunc(slices.Clone(caps), func(x capability) bool { return x == c })
}

func subset(needs, caps []capability) bool {
	for _, n := range needs {
		if !slices.Contains(caps, n) {
			return false
		}
	}
	return true
}

// A dangerous field is refused in any entry, not only in those the current
// context uses; several are all named, once each, in a stable order.
func TestKubeconfigPolicyChecksEveryEntry(t *testing.T) {
	kc := baseKubeconfig(t)
	kc.AuthInfos["other"] = &clientcmdapi.AuthInfo{TokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}
	kc.AuthInfos["third"] = &clientcmdapi.AuthInfo{TokenFile: "/etc/" + canaryValue}
	kc.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://127.0.0.2", InsecureSkipTLSVerify: true}
	data := writeKubeconfig(t, kc)
	want := "kube: invalid kubeconfig: refused by policy: " +
		"clusters[].cluster.insecure-skip-tls-verify needs KubeconfigPolicy.AllowInsecureTLS; " +
		"users[].user.tokenFile needs KubeconfigPolicy.AllowFileReferences"
	for range 5 { // map order varies between runs of the check
		if _, err := ParseKubeconfig(data); err == nil || err.Error() != want {
			t.Fatalf("got %v, want %q", err, want)
		}
	}
}

// Only the current context's cluster and user are used, and a kubeconfig
// whose current context is missing or incomplete is invalid (client-go
// would fall back to defaults such as $KUBERNETES_MASTER).
func TestParseKubeconfigUsesOnlyTheCurrentContext(t *testing.T) {
	kc := baseKubeconfig(t)
	kc.Clusters["b"] = &clientcmdapi.Cluster{Server: "https://127.0.0.2:6443"}
	kc.AuthInfos["b"] = &clientcmdapi.AuthInfo{Token: "token-of-b"}
	kc.Contexts["b"] = &clientcmdapi.Context{Cluster: "b", AuthInfo: "b"}
	cfg, err := ParseKubeconfig(writeKubeconfig(t, kc))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "canary-token-0f1e2d3c4b5a" || len(cfg.CAData) == 0 {
		t.Fatalf("got host %q, token of the current user %v, CA %d bytes", cfg.Host,
			cfg.BearerToken == "canary-token-0f1e2d3c4b5a", len(cfg.CAData))
	}

	t.Setenv("KUBERNETES_MASTER", "https://127.0.0.3:6443")
	for name, tc := range map[string]struct {
		mutate func(*clientcmdapi.Config)
		want   string
	}{
		"no current-context":       {func(c *clientcmdapi.Config) { c.CurrentContext = "" }, "current-context names no context"},
		"unknown current-context":  {func(c *clientcmdapi.Config) { c.CurrentContext = "nope" }, "current-context names no context"},
		"unknown cluster":          {func(c *clientcmdapi.Config) { c.Contexts["c"].Cluster = "nope" }, "current context names no cluster"},
		"unknown user":             {func(c *clientcmdapi.Config) { c.Contexts["c"].AuthInfo = "nope" }, "current context names no user"},
		"no server":                {func(c *clientcmdapi.Config) { c.Clusters["c"].Server = "" }, "no server"},
		"server without scheme":    {func(c *clientcmdapi.Config) { c.Clusters["c"].Server = "127.0.0.1:6443" }, "server is not an https URL"},
		"server of another scheme": {func(c *clientcmdapi.Config) { c.Clusters["c"].Server = "unix:///run/x" }, "server is not an https URL"},
	} {
		kc := baseKubeconfig(t)
		tc.mutate(kc)
		_, err := ParseKubeconfig(writeKubeconfig(t, kc))
		if !errors.Is(err, ErrInvalidKubeconfig) || err.Error() != "kube: invalid kubeconfig: "+tc.want {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
	}
}

// The fields the zero policy allows parse into what they say.
func TestParseKubeconfigAllowsInlineData(t *testing.T) {
	kc := baseKubeconfig(t)
	c, u := kc.Clusters["c"], kc.AuthInfos["c"]
	c.TLSServerName, c.DisableCompression = "apiserver.internal", true
	c.Extensions = map[string]runtime.Object{"note": &runtime.Unknown{Raw: []byte(`{"a":1}`)}}
	kc.Contexts["c"].Namespace = "ns"
	u.Token, u.Username, u.Password = "", "admin", "secret"
	cfg, err := ParseKubeconfig(writeKubeconfig(t, kc))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ServerName != "apiserver.internal" || !cfg.DisableCompression || cfg.Username != "admin" || cfg.Password != "secret" {
		t.Fatalf("got ServerName %q, DisableCompression %v, basic auth %v", cfg.ServerName, cfg.DisableCompression,
			cfg.Username == "admin" && cfg.Password == "secret")
	}
}
