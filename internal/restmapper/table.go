package restmapper

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"io"
	"runtime"
	"strings"
	"sync"
	"weak"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cgrestmapper "k8s.io/client-go/restmapper"
)

// Mapping is a RESTMapper a Mapper uses: a read-only mapping built from one
// discovery, which clusters share, or (Dynamic) a cluster's own
// controller-runtime dynamic RESTMapper, which refreshes itself.
type Mapping struct {
	meta.RESTMapper
	Dynamic bool
}

// digest identifies a discovery by the SHA-256 of its mapperInput.
type digest [sha256.Size]byte

// etags are the ETags of a discovery's documents, indexed like
// discoveryPaths; "" where the server sent none.
type etags [2]string

// complete reports whether the server sent both ETags.
func (p etags) complete() bool { return p[0] != "" && p[1] != "" }

// tagged is the mapping the discovery with ETags tags gave.
type tagged struct {
	tags    etags
	mapping weak.Pointer[Mapping]
}

// Table holds shared mappings by digest and by the ETags of the discovery
// they were built from, weakly: a mapping lives while a cluster's Mapper
// points at it, and its entries leave the table once the garbage collector
// has freed it. A Dialer has one.
type Table struct {
	mu   sync.Mutex
	m    map[digest]weak.Pointer[Mapping]
	tags map[etags]*tagged
	// last are the ETags last read: a Mapper's guess before it has its
	// own (the cluster probably serves what the previous one did).
	last *etags
}

// NewTable returns an empty Table.
func NewTable() *Table {
	return &Table{m: map[digest]weak.Pointer[Mapping]{}, tags: map[etags]*tagged{}}
}

// intern returns the table's mapping of groups (a mapperInput), building
// it if the table has none, and records it as what tags gave if both are
// known; it then returns the table's copy of tags (for the Mapper to keep,
// shared with the other clusters), else nil.
func (t *Table) intern(groups []*cgrestmapper.APIGroupResources, tags etags) (*Mapping, *etags) {
	d := digestOf(groups)
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[d].Value()
	if s == nil {
		s = &Mapping{RESTMapper: cgrestmapper.NewDiscoveryRESTMapper(groups)}
		t.m[d] = weak.Make(s)
		runtime.AddCleanup(s, t.forget, d)
	}
	if !tags.complete() {
		return s, nil
	}
	e := t.tags[tags]
	if e == nil || e.mapping.Value() != s {
		e = &tagged{tags: tags, mapping: weak.Make(s)}
		t.tags[tags] = e
		runtime.AddCleanup(s, t.forgetTags, tags)
	}
	t.last = &e.tags
	return s, &e.tags
}

// byTags returns the mapping the discovery with ETags tags gave and the
// table's copy of tags, or nil if the table has none (or tags are not
// both known).
func (t *Table) byTags(tags etags) (*Mapping, *etags) {
	if !tags.complete() {
		return nil, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.tags[tags]
	if e == nil {
		return nil, nil
	}
	s := e.mapping.Value()
	if s == nil {
		return nil, nil
	}
	t.last = &e.tags
	return s, &e.tags
}

// hint returns the ETags the table last read (none if it read none).
func (t *Table) hint() etags {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		return etags{}
	}
	return *t.last
}

// forget drops d's entry once its mapping is freed (unless a new one took
// its place meanwhile).
func (t *Table) forget(d digest) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[d].Value() == nil {
		delete(t.m, d)
	}
}

// forgetTags drops tags' entry once its mapping is freed (unless a new one
// took its place meanwhile).
func (t *Table) forgetTags(tags etags) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.tags[tags]; e != nil && e.mapping.Value() == nil {
		delete(t.tags, tags)
	}
}

// Len is the number of mappings by digest (freed mappings may still count
// until the cleanup that forgets them has run).
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// mapperInput returns exactly what cgrestmapper.NewDiscoveryRESTMapper reads
// of a discovery (groups and resources as GroupsAndMaybeResources returns
// them), in the server's order: each group's name, preferred version and
// versions, and each version's resources' name, singular name, kind and
// scope, subresources left out. Two discoveries with the same mapperInput
// have the same mapping; anything else in them (verbs, short names,
// categories, storage version hashes, server addresses) has no part in it.
func mapperInput(groups *metav1.APIGroupList, resources map[schema.GroupVersion]*metav1.APIResourceList) []*cgrestmapper.APIGroupResources {
	out := make([]*cgrestmapper.APIGroupResources, 0, len(groups.Groups))
	for _, g := range groups.Groups {
		gr := &cgrestmapper.APIGroupResources{
			Group: metav1.APIGroup{Name: g.Name,
				PreferredVersion: metav1.GroupVersionForDiscovery{Version: g.PreferredVersion.Version}},
			VersionedResources: make(map[string][]metav1.APIResource, len(g.Versions)),
		}
		for _, v := range g.Versions {
			gr.Group.Versions = append(gr.Group.Versions, metav1.GroupVersionForDiscovery{Version: v.Version})
			if list := resources[schema.GroupVersion{Group: g.Name, Version: v.Version}]; list != nil {
				gr.VersionedResources[v.Version] = mappedResources(list.APIResources)
			}
		}
		out = append(out, gr)
	}
	return out
}

// mappedResources returns the fields of rs that a RESTMapper reads, without
// subresources (names with a slash).
func mappedResources(rs []metav1.APIResource) []metav1.APIResource {
	out := make([]metav1.APIResource, 0, len(rs))
	for _, r := range rs {
		if !strings.Contains(r.Name, "/") {
			out = append(out, metav1.APIResource{Name: r.Name, SingularName: r.SingularName, Kind: r.Kind, Namespaced: r.Namespaced})
		}
	}
	return out
}

// digestOf hashes every field of groups (a mapperInput), each string and
// list prefixed with its length so that no two inputs write the same bytes.
func digestOf(groups []*cgrestmapper.APIGroupResources) digest {
	w := digestWriter{h: sha256.New()}
	w.int(len(groups))
	for _, g := range groups {
		w.str(g.Group.Name)
		w.str(g.Group.PreferredVersion.Version)
		w.int(len(g.Group.Versions))
		for _, v := range g.Group.Versions {
			w.str(v.Version)
			rs, ok := g.VersionedResources[v.Version]
			if !ok {
				w.int(-1)
				continue
			}
			w.int(len(rs))
			for _, r := range rs {
				w.str(r.Name)
				w.str(r.SingularName)
				w.str(r.Kind)
				w.bool(r.Namespaced)
			}
		}
	}
	var d digest
	w.h.Sum(d[:0])
	return d
}

// digestWriter writes length-prefixed values to a hash.
type digestWriter struct {
	h   hash.Hash
	buf [binary.MaxVarintLen64]byte
}

func (w *digestWriter) int(n int) {
	w.h.Write(binary.AppendVarint(w.buf[:0], int64(n)))
}

func (w *digestWriter) str(s string) {
	w.int(len(s))
	io.WriteString(w.h, s)
}

func (w *digestWriter) bool(b bool) {
	if b {
		w.int(1)
	} else {
		w.int(0)
	}
}
