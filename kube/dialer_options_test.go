package kube

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The options added for Cluster API's ClusterCache are validated by
// NewDialer, with errors naming the field; their zero values are valid.
func TestDialerOptionsValidation(t *testing.T) {
	src := unusedSource
	extract := func(client.Object) []string { return nil }
	node := &corev1.Node{}
	unknown := &unstructured.Unstructured{} // no GVK
	withGVK := &unstructured.Unstructured{}
	withGVK.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"})
	var nilNode *corev1.Node

	valid := DialerOptions{UserAgent: "capi-controller/v1.14.2 (linux/amd64)", DisableFor: []client.Object{&corev1.Pod{}, withGVK},
		Unstructured: true, Indexes: []Index{{Object: node, Field: "spec.providerID", Extract: extract}},
		ReadTimeout: time.Second, InitialSyncTimeout: 5 * time.Minute, InCluster: true}
	d, err := NewDialer(src, valid)
	if err != nil {
		t.Fatalf("valid options: %v", err)
	}
	if d, err := NewDialer(src, DialerOptions{RequestTimeout: 3 * time.Second}); err != nil || d.opts.ReadTimeout != 3*time.Second {
		t.Fatalf("zero ReadTimeout: %v, ReadTimeout %v; want RequestTimeout", err, d.opts.ReadTimeout)
	}
	if d.opts.ReadTimeout != time.Second {
		t.Fatalf("ReadTimeout %v, want the one set", d.opts.ReadTimeout)
	}

	for _, tc := range []struct {
		name string
		opts DialerOptions
		want string
	}{
		{"ReadTimeout", DialerOptions{ReadTimeout: -time.Second}, "DialerOptions.ReadTimeout=-1s must not be negative"},
		{"InitialSyncTimeout", DialerOptions{InitialSyncTimeout: -time.Minute},
			"DialerOptions.InitialSyncTimeout=-1m0s must not be negative"},
		{"UserAgent", DialerOptions{UserAgent: "a\r\nX-Evil: 1"},
			"DialerOptions.UserAgent must be a valid header value (no control characters)"},
		{"DisableFor nil", DialerOptions{DisableFor: []client.Object{node, nil}}, "DialerOptions.DisableFor[1]: must not be nil"},
		{"DisableFor typed nil", DialerOptions{DisableFor: []client.Object{nilNode}}, "DialerOptions.DisableFor[0]: must not be nil"},
		{"DisableFor unknown", DialerOptions{DisableFor: []client.Object{unknown}},
			"DialerOptions.DisableFor[0]: *unstructured.Unstructured is not a known kind"},
		{"Index Field", DialerOptions{Indexes: []Index{{Object: node, Extract: extract}}}, "DialerOptions.Indexes[0].Field must not be empty"},
		{"Index Extract", DialerOptions{Indexes: []Index{{Object: node, Field: "f"}}}, "DialerOptions.Indexes[0].Extract must not be nil"},
		{"Index Object", DialerOptions{Indexes: []Index{{Object: node, Field: "f", Extract: extract}, {Field: "f", Extract: extract}}},
			"DialerOptions.Indexes[1].Object: must not be nil"},
		{"Index of a DisableFor type", DialerOptions{DisableFor: []client.Object{&corev1.Pod{}, &corev1.Node{}},
			Indexes: []Index{{Object: node, Field: "f", Extract: extract}}},
			"DialerOptions.Indexes[0].Object: *v1.Node is in DisableFor"},
	} {
		_, err := NewDialer(src, tc.opts)
		if !errors.Is(err, ErrInvalidOptions) || !containsAll(err.Error(), "kube: invalid options: "+tc.want) {
			t.Errorf("%s: got %v, want %q matching ErrInvalidOptions", tc.name, err, tc.want)
		}
	}
}
