package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// vocabulary is every word ParseKubeconfig's errors are made of.
const vocabulary = "kube: invalid kubeconfig: empty | does not parse or has no usable context | no server | parser failed"

// ParseKubeconfig never panics, and its error quotes nothing of its input.
func FuzzParseKubeconfig(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: https://127.0.0.1:6443}}]\n" +
		"users: [{name: u, user: {token: canary-token-123456}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"))
	f.Add([]byte("apiVersion: v1\nusers: [{name: u, user: {token: canary-token-123456}}]\ncurrent-context: nowhere\n"))
	f.Add([]byte(`{"apiVersion":"v1","clusters":[{"name":"c","cluster":{"server":"canary-token-123456"}}`))
	f.Add([]byte("\x00\xff\xfe binary canary-token-123456"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseKubeconfig(data)
		if err == nil {
			if cfg == nil || cfg.Host == "" {
				t.Fatalf("no error and no usable config")
			}
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
// key, any bytes), SecretSource either returns a usable config or an error
// matching ErrInvalidKubeconfig that names the Secret and quotes nothing of
// its content.
func FuzzSecretSource(f *testing.F) {
	f.Add("value", []byte("apiVersion: v1\nusers: [{name: u, user: {token: canary-token-123456}}]\n"))
	f.Add("kubeconfig", []byte("apiVersion: v1\nclusters: [{name: c, cluster: {server: https://127.0.0.1:6443}}]\n"))
	f.Add("value", []byte("{\"clusters\": [canary-token-123456"))
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
			return
		}
		if !errors.Is(err, ErrInvalidKubeconfig) || !strings.Contains(err.Error(), "fleet/c1-kubeconfig") {
			t.Fatalf("error %v: want ErrInvalidKubeconfig naming the Secret", err)
		}
		quotesNothing(t, strings.ReplaceAll(err.Error(), "fleet/c1-kubeconfig", ""), value)
	})
}
