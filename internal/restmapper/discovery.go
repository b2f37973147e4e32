package restmapper

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// discoveryPaths are the two documents of a discovery, in client-go's
// order (the core group first); an etags is indexed like them.
var discoveryPaths = [2]string{"/api", "/apis"}

// accept is the Accept header of client-go v0.36's discovery client:
// aggregated discovery v2, then v2beta1, then the legacy documents.
// (v0.37 no longer asks for v2beta1, so it is spelled out here.)
const accept = discovery.AcceptV2 + "," + acceptV2Beta1 + "," + discovery.AcceptV1

const acceptV2Beta1 = runtime.ContentTypeJSON + ";g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

// aggregatedKinds are the Content-Types of aggregated discovery, v2 and
// v2beta1. The two versions have the same fields, so a v2beta1 answer is
// decoded as v2 (client-go v0.36 converts both with the same code; the
// one difference, the name of a subresource whose parent lacks a kind, is
// not mapped).
var aggregatedKinds = [2]schema.GroupVersionKind{
	apidiscoveryv2.SchemeGroupVersion.WithKind("APIGroupDiscoveryList"),
	{Group: "apidiscovery.k8s.io", Version: "v2beta1", Kind: "APIGroupDiscoveryList"},
}

const (
	// defaultTimeout bounds a request when the REST config has no
	// Timeout: client-go's discovery client's default.
	defaultTimeout = 32 * time.Second
	// maxErrorBody is how much of an error answer is read; client-go
	// keeps 2 KiB of a text answer (maxErrorText).
	maxErrorBody = 16 << 10
	maxErrorText = 2 << 10
)

// document is one discovery path's answer: its ETag, and, if read (a 200,
// or a 404 of /api, which client-go tolerates), its groups and, for
// aggregated discovery, their resources, as client-go's discovery client
// returns them. An unread document with an ETag is a 304 Not Modified.
type document struct {
	etag      string
	read      bool
	groups    []metav1.APIGroup
	resources map[schema.GroupVersion]*metav1.APIResourceList
}

// fetch GETs each path whose document docs does not hold (one not read
// yet, or a 304), with If-None-Match hint's ETag for it, if any.
func (m *Mapper) fetch(docs *[2]document, hint etags) error {
	base, _, err := rest.DefaultServerUrlFor(m.cfg) // keeps a path prefix (a proxy's)
	if err != nil {
		return err
	}
	for i := range docs {
		if docs[i].read {
			continue
		}
		u := *base
		u.Path = path.Join(base.Path, discoveryPaths[i])
		if docs[i], err = m.get(&u, i, hint[i]); err != nil {
			return err
		}
	}
	return nil
}

// get GETs u, discovery path i, with If-None-Match etag unless it is
// empty. A RESTMapper's lookups carry no context, so the deadline is ours:
// the REST config's Timeout, as client-go's discovery requests have, or
// client-go's default without one (kube's request guard, in hc's
// transport, may end the request sooner: cluster stopped, no headers
// within its first-byte deadline). The body is always drained and closed,
// which also ends the request's flight in the guard.
func (m *Mapper) get(u *url.URL, i int, etag string) (document, error) {
	timeout := m.cfg.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return document{}, err
	}
	req.Header.Set("Accept", accept)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		return document{}, err
	}
	defer func() {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	return answer(resp, i, etag)
}

// answer reads resp, the answer to a GET of discovery path i sent with
// If-None-Match etag (none if empty).
func answer(resp *http.Response, i int, etag string) (document, error) {
	switch code := resp.StatusCode; {
	case code == http.StatusNotModified && etag != "":
		return document{etag: etag}, nil
	case code == http.StatusNotFound && i == 0: // as client-go: an aggregated apiserver's
		return document{read: true, resources: map[schema.GroupVersion]*metav1.APIResourceList{}}, nil
	case code < http.StatusOK || code > http.StatusPartialContent:
		return document{}, statusError(resp)
	}
	d, err := decode(resp.Body, resp.Header.Get("Content-Type"), i)
	if err != nil {
		return document{}, fmt.Errorf("GET %s: %w", resp.Request.URL.Path, err)
	}
	d.etag = resp.Header.Get("ETag")
	return d, nil
}

// decode decodes discovery path i's body as client-go's discovery client
// does: aggregated discovery if contentType says so, else the legacy
// APIVersions (/api) or APIGroupList (/apis).
func decode(body io.Reader, contentType string, i int) (document, error) {
	dec := json.NewDecoder(body)
	if aggregated(contentType) {
		var list apidiscoveryv2.APIGroupDiscoveryList
		if err := dec.Decode(&list); err != nil {
			return document{}, err
		}
		groups, resources, _ := discovery.SplitGroupsAndResources(list)
		return document{read: true, groups: groups.Groups, resources: resources}, nil
	}
	if i == 1 {
		var list metav1.APIGroupList
		err := dec.Decode(&list)
		return document{read: true, groups: list.Groups}, err
	}
	var v metav1.APIVersions
	if err := dec.Decode(&v); err != nil {
		return document{}, err
	}
	g := metav1.APIGroup{}
	for _, version := range v.Versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: version, Version: version})
	}
	if len(g.Versions) > 0 {
		g.PreferredVersion = g.Versions[0]
	}
	return document{read: true, groups: []metav1.APIGroup{g}}, nil
}

// aggregated reports whether contentType is aggregated discovery's.
func aggregated(contentType string) bool {
	for _, gvk := range aggregatedKinds {
		if ok, _ := discovery.ContentTypeIsGVK(contentType, gvk); ok {
			return true
		}
	}
	return false
}

// merged returns the groups and resources of docs as client-go's
// GroupsAndMaybeResources does: /api's groups first, and resources only
// if both paths answered aggregated discovery.
func merged(docs [2]document) (*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList) {
	groups := &metav1.APIGroupList{Groups: append(docs[0].groups, docs[1].groups...)}
	if docs[0].resources == nil || docs[1].resources == nil {
		return groups, nil
	}
	resources := maps.Clone(docs[0].resources)
	maps.Copy(resources, docs[1].resources)
	return groups, resources
}

// statusError is the error of an answer that is neither a success nor a
// 304 we asked for: the apiserver's Status if the body is one, else
// client-go's error for an unstructured answer; it names the path and
// status code, never the URL's host or credentials.
func statusError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var err error
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Status == metav1.StatusFailure {
		err = &apierrors.StatusError{ErrStatus: st}
	} else {
		msg := "unknown"
		if isText(resp) {
			msg = strings.TrimSpace(string(body[:min(len(body), maxErrorText)]))
		}
		retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		err = apierrors.NewGenericServerResponse(resp.StatusCode, http.MethodGet, schema.GroupResource{}, "", msg, retry, true)
	}
	return fmt.Errorf("GET %s: HTTP %d: %w", resp.Request.URL.Path, resp.StatusCode, err)
}

// isText reports whether resp's body is text, as client-go decides it.
func isText(resp *http.Response) bool {
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	media, _, err := mime.ParseMediaType(ct)
	return err == nil && strings.HasPrefix(media, "text/")
}
