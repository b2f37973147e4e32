package cachedread_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/cachedread"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countingReader is a cache that has every object: it counts the reads.
type countingReader struct{ reads int }

func (r *countingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	r.reads++
	return nil
}

func (r *countingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	r.reads++
	return nil
}

// New's client reads from the cache exactly what
// controller-runtime's client with the same CacheOptions reads from it.
func TestCachedClientReadsAsControllerRuntime(t *testing.T) {
	var sent int
	hc := &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sent++
		return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
	})}
	cfg := &rest.Config{Host: "https://cluster.invalid"}
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, kind := range []string{"ConfigMap", "Secret", "ServiceAccount"} {
		mapper.Add(corev1.SchemeGroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	u := func(kind string) client.Object {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
		return o
	}
	ul := &unstructured.UnstructuredList{}
	ul.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccountList"))
	pm, pml := &metav1.PartialObjectMetadata{}, &metav1.PartialObjectMetadataList{}
	pm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	pml.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	reads := []any{&corev1.ConfigMap{}, &corev1.ConfigMapList{}, &corev1.Secret{}, &corev1.SecretList{},
		u("ServiceAccount"), ul, pm, pml, &notInScheme{}}
	for _, unstructuredToo := range []bool{false, true} {
		disable := []client.Object{&corev1.ConfigMap{}}
		opts := client.Options{HTTPClient: hc, Mapper: mapper}
		uncached, err := client.New(cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		ours, theirs := &countingReader{}, &countingReader{}
		c, err := cachedread.New(uncached, ours, disable, unstructuredToo)
		if err != nil {
			t.Fatal(err)
		}
		opts.Cache = &client.CacheOptions{Reader: theirs, DisableFor: disable, Unstructured: unstructuredToo}
		cr, err := client.New(cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range reads {
			var got, want [3]int // cache reads, requests sent, errors
			for i, cl := range []client.Client{c, cr} {
				r, res := []*countingReader{ours, theirs}[i], []*[3]int{&got, &want}[i]
				r.reads, sent = 0, 0
				var err error
				if list, ok := obj.(client.ObjectList); ok {
					err = cl.List(context.Background(), list)
				} else {
					err = cl.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "n"}, obj.(client.Object))
				}
				*res = [3]int{r.reads, sent, map[bool]int{true: 1}[err != nil]}
			}
			if got != want {
				t.Errorf("Unstructured %v, %T: cache reads, requests, errors %v; controller-runtime's client %v", unstructuredToo, obj, got, want)
			}
		}
	}
}

// notInScheme is an object no scheme knows.
type notInScheme struct{ corev1.ConfigMap }

func (o *notInScheme) DeepCopyObject() kruntime.Object { return &notInScheme{*o.ConfigMap.DeepCopy()} }
