package kubeconfigpolicy

import (
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The last check refuses a REST config that uses a capability, whatever
// produced it.
func TestRESTConfigCheck(t *testing.T) {
	proxy, _ := url.Parse("http://127.0.0.1:3128")
	for _, tc := range []struct {
		cfg   rest.Config
		field string
	}{
		{rest.Config{ExecProvider: &clientcmdapi.ExecConfig{}}, "rest.Config.ExecProvider"},
		{rest.Config{AuthProvider: &clientcmdapi.AuthProviderConfig{}}, "rest.Config.AuthProvider"},
		{rest.Config{BearerTokenFile: "/t"}, "rest.Config.BearerTokenFile"},
		{rest.Config{TLSClientConfig: rest.TLSClientConfig{KeyFile: "/k"}}, "rest.Config.TLSClientConfig files"},
		{rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "rest.Config.Insecure"},
		{rest.Config{Host: "http://127.0.0.1"}, "rest.Config.Host (not https)"},
		{rest.Config{Proxy: http.ProxyURL(proxy)}, "rest.Config.Proxy"},
		{rest.Config{Impersonate: rest.ImpersonationConfig{Groups: []string{"g"}}}, "rest.Config.Impersonate"},
	} {
		if tc.cfg.Host == "" {
			tc.cfg.Host = "https://127.0.0.1:6443"
		}
		err := Policy{}.Check(RESTUses(&tc.cfg))
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.field+" needs") {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
	if err := (Policy{}).Check(RESTUses(&rest.Config{Host: "https://127.0.0.1:6443"})); err != nil {
		t.Errorf("a plain https config: %v", err)
	}
}

// Every field of client-go's kubeconfig types has been reviewed (see
// docs/security.md): when client-go adds one, this test fails until
// the policy decides about it.
func TestEveryKubeconfigFieldIsReviewed(t *testing.T) {
	reviewed := map[reflect.Type][]string{
		reflect.TypeFor[clientcmdapi.Config](): {"Kind", "APIVersion", "Preferences", "Clusters", "AuthInfos",
			"Contexts", "CurrentContext", "Extensions"},
		reflect.TypeFor[clientcmdapi.Cluster](): {"LocationOfOrigin", "Server", "TLSServerName",
			"InsecureSkipTLSVerify", "CertificateAuthority", "CertificateAuthorityData", "ProxyURL",
			"DisableCompression", "Extensions"},
		reflect.TypeFor[clientcmdapi.AuthInfo](): {"LocationOfOrigin", "ClientCertificate", "ClientCertificateData",
			"ClientKey", "ClientKeyData", "Token", "TokenFile", "Impersonate", "ImpersonateUID", "ImpersonateGroups",
			"ImpersonateUserExtra", "Username", "Password", "AuthProvider", "Exec", "Extensions"},
		reflect.TypeFor[clientcmdapi.Context](): {"LocationOfOrigin", "Cluster", "AuthInfo", "Namespace", "Extensions"},
	}
	for typ, fields := range reviewed {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, fields) {
			t.Errorf("clientcmd api.%s has fields %v; the policy reviewed %v", typ.Name(), got, fields)
		}
	}
}
