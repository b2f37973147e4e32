package kube

import (
	"errors"
	"strings"
	"testing"
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
		msg := err.Error()
		for _, word := range strings.FieldsFunc(string(data), func(r rune) bool {
			return strings.ContainsRune(" \t\n\r:{}[],\"'", r)
		}) {
			if len(word) >= 8 && strings.Contains(msg, word) && !strings.Contains(vocabulary, word) {
				t.Fatalf("error %q quotes the input (%q)", msg, word)
			}
		}
	})
}
