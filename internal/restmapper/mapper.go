package restmapper

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"golang.org/x/sync/singleflight"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Mapper is a cluster's RESTMapper (see the package documentation).
type Mapper struct {
	table *Table
	cfg   *rest.Config
	hc    *http.Client
	// cur is the mapping in use (nil before the first lookup); loads is
	// a singleflight by the mapping a load replaces, so that no lock is
	// held across discovery.
	cur   atomic.Pointer[Mapping]
	loads singleflight.Group
	// tags are the ETags of the discovery m last read (the Table's copy),
	// nil before one with both.
	tags atomic.Pointer[etags]
}

var _ meta.RESTMapper = (*Mapper)(nil)

// New returns the mapper of the cluster cfg and hc reach, sharing t's
// mappings. It reads nothing before its first lookup.
func (t *Table) New(cfg *rest.Config, hc *http.Client) *Mapper {
	return &Mapper{table: t, cfg: cfg, hc: hc}
}

// Current is the mapping m uses, nil before its first lookup.
func (m *Mapper) Current() *Mapping { return m.cur.Load() }

// lookup runs f on m's mapping, reading the cluster's discovery first if m
// has none, and again if f finds no match in a mapping read earlier (a
// CRD installed since, or a discovery that failed then).
func lookup[T any](m *Mapper, f func(meta.RESTMapper) (T, error)) (T, error) {
	var zero T
	fresh := m.cur.Load() == nil
	s, err := m.current()
	if err != nil {
		return zero, err
	}
	res, err := f(s.RESTMapper)
	if fresh || s.Dynamic || !meta.IsNoMatchError(err) {
		return res, err
	}
	if s, err = m.load(s); err != nil {
		return zero, err
	}
	return f(s.RESTMapper)
}

// current is m's mapping, read from the cluster's discovery if m has none.
func (m *Mapper) current() (*Mapping, error) {
	if s := m.cur.Load(); s != nil {
		return s, nil
	}
	return m.load(nil)
}

// load reads the cluster's discovery and makes its mapping m's, unless
// another load replaced seen (the mapping the caller used) meanwhile: then
// it returns that one. Callers that saw the same mapping share one read
// (a singleflight keyed by seen).
func (m *Mapper) load(seen *Mapping) (*Mapping, error) {
	v, err, _ := m.loads.Do(fmt.Sprintf("%p", seen), func() (any, error) {
		if s := m.cur.Load(); s != seen {
			return s, nil
		}
		s, err := m.discover()
		if err != nil {
			return nil, err
		}
		if !m.cur.CompareAndSwap(seen, s) {
			return m.cur.Load(), nil
		}
		return s, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Mapping), nil
}

// discover reads the cluster's discovery (GET /api and /apis, asking for
// aggregated discovery, with If-None-Match the ETags m last read, else
// the ones its Table last read) and returns its mapping: the Table's for
// those ETags if both answers were 304 Not Modified (or 200 with ETags the
// Table knows), else the Table's for the documents read; or, if the
// server answered without resources (no aggregated discovery), a dynamic
// RESTMapper of the cluster's own. Each path's document is downloaded at
// most once.
func (m *Mapper) discover() (*Mapping, error) {
	hint := m.table.hint()
	if own := m.tags.Load(); own != nil {
		hint = *own
	}
	var docs [2]document
	if err := m.fetch(&docs, hint); err != nil {
		return nil, fmt.Errorf("failed to get server groups: %w", err)
	}
	if s, tags := m.table.byTags(etags{docs[0].etag, docs[1].etag}); s != nil {
		m.tags.Store(tags)
		return s, nil
	}
	// A 304 whose pair of ETags the Table holds no mapping for (the other
	// path changed, e.g. a CRD was added, or the mapping was freed): that
	// path is read again, in full. Rare: once per change of the fleet's
	// discovery, not per cluster.
	if err := m.fetch(&docs, etags{}); err != nil {
		return nil, fmt.Errorf("failed to get server groups: %w", err)
	}
	groups, resources := merged(docs)
	if len(groups.Groups) == 0 {
		return nil, errors.New("received an empty API groups list")
	}
	if len(resources) == 0 {
		dm, err := apiutil.NewDynamicRESTMapper(m.cfg, m.hc)
		if err != nil {
			return nil, err
		}
		return &Mapping{RESTMapper: dm, Dynamic: true}, nil
	}
	s, tags := m.table.intern(mapperInput(groups, resources), etags{docs[0].etag, docs[1].etag})
	m.tags.Store(tags)
	return s, nil
}

// KindFor implements meta.RESTMapper.
func (m *Mapper) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return lookup(m, func(rm meta.RESTMapper) (schema.GroupVersionKind, error) { return rm.KindFor(r) })
}

// KindsFor implements meta.RESTMapper.
func (m *Mapper) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return lookup(m, func(rm meta.RESTMapper) ([]schema.GroupVersionKind, error) { return rm.KindsFor(r) })
}

// ResourceFor implements meta.RESTMapper.
func (m *Mapper) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return lookup(m, func(rm meta.RESTMapper) (schema.GroupVersionResource, error) { return rm.ResourceFor(r) })
}

// ResourcesFor implements meta.RESTMapper.
func (m *Mapper) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return lookup(m, func(rm meta.RESTMapper) ([]schema.GroupVersionResource, error) { return rm.ResourcesFor(r) })
}

// RESTMapping implements meta.RESTMapper.
func (m *Mapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return lookup(m, func(rm meta.RESTMapper) (*meta.RESTMapping, error) { return rm.RESTMapping(gk, versions...) })
}

// RESTMappings implements meta.RESTMapper.
func (m *Mapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return lookup(m, func(rm meta.RESTMapper) ([]*meta.RESTMapping, error) { return rm.RESTMappings(gk, versions...) })
}

// ResourceSingularizer implements meta.RESTMapper; like the dynamic
// RESTMapper's, it reads no discovery again.
func (m *Mapper) ResourceSingularizer(resource string) (string, error) {
	s, err := m.current()
	if err != nil {
		return "", err
	}
	return s.ResourceSingularizer(resource)
}
