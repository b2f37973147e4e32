// Command tracepic draws a waterfall of a real demo trace from Jaeger's HTTP
// query API: a Reconcile span, its clusterpool.Wait child, and the
// clusterpool.Dial trace the wait links to. It is how docs/trace.png is made
// (hack/trace-picture.sh, `make trace-picture`).
//
//	go run ./cmd/tracepic -query http://127.0.0.1:16686 -service clusterpool-demo -out trace.png
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

type span struct {
	TraceID, SpanID, OperationName string
	References                     []struct{ RefType, TraceID, SpanID string }
	StartTime, Duration            int64 // µs
	Tags                           []struct {
		Key   string
		Value any
	}
}

func (s span) tag(k string) string {
	for _, t := range s.Tags {
		if t.Key == k {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

type traces struct {
	Data []struct {
		TraceID string
		Spans   []span
	}
}

func main() {
	query := flag.String("query", "http://127.0.0.1:16686", "Jaeger query API")
	service := flag.String("service", "clusterpool-demo", "service name")
	out := flag.String("out", "trace.png", "output PNG")
	cluster := flag.String("cluster", "fleet/healthy-1", "prefer waits for this cluster")
	flag.Parse()
	if err := run(*query, *service, *cluster, *out); err != nil {
		fmt.Fprintln(os.Stderr, "tracepic:", err)
		os.Exit(1)
	}
}

func get(u string, v any) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// pick finds a reconcile trace whose wait links to a dial, preferring the
// given cluster and then a wait that acquired the client, and returns its
// spans and the dial's.
func pick(query, service, cluster string) ([]span, []span, error) {
	var ts traces
	if err := get(query+"/api/traces?limit=500&lookback=1h&service="+url.QueryEscape(service), &ts); err != nil {
		return nil, nil, err
	}
	var best []span
	var link struct{ TraceID, SpanID string }
	rank := 0
	for _, t := range ts.Data {
		for _, s := range t.Spans {
			if s.OperationName != "clusterpool.Wait" {
				continue
			}
			r := map[string]int{"acquired": 3, "timeout": 2}[s.tag("clusterpool.outcome")]
			if s.tag("clusterpool.cluster") == cluster {
				r += 10
			}
			for _, ref := range s.References {
				if ref.RefType == "FOLLOWS_FROM" && r > rank {
					rank, best, link = r, t.Spans, struct{ TraceID, SpanID string }{ref.TraceID, ref.SpanID}
				}
			}
		}
	}
	if best == nil {
		return nil, nil, errors.New("no wait span linked to a dial in service " + service)
	}
	var dial traces
	if err := get(query+"/api/traces/"+link.TraceID, &dial); err != nil {
		return nil, nil, err
	}
	if len(dial.Data) == 0 {
		return nil, nil, errors.New("linked dial trace not found")
	}
	return best, dial.Data[0].Spans, nil
}

func run(query, service, cluster, out string) error {
	reconcile, dial, err := pick(query, service, cluster)
	if err != nil {
		return err
	}
	for _, ss := range [][]span{reconcile, dial} {
		sort.Slice(ss, func(i, j int) bool { return ss[i].StartTime < ss[j].StartTime })
	}
	all := append(append([]span(nil), reconcile...), dial...)
	t0 := all[0].StartTime
	for _, s := range all {
		t0 = min(t0, s.StartTime)
	}
	p := plot.New()
	p.Title.Text = "A demo reconcile in Jaeger: its wait, and the dial it links to (own trace)"
	p.X.Label.Text = "ms since the first span started (this reconcile joined a dial already in flight)"
	var names []string
	for i := range all {
		s := all[len(all)-1-i] // first span on top
		label := s.OperationName
		if o := s.tag("clusterpool.outcome"); o != "" {
			label += " (" + o + ")"
		}
		if r := s.tag("clusterpool.dial.result"); r != "" {
			label += " (" + r + ")"
		}
		if s.TraceID != reconcile[0].TraceID {
			label = "linked trace: " + label
		}
		names = append(names, strings.TrimSpace(label))
		start := float64(s.StartTime-t0) / 1000
		end := start + max(float64(s.Duration)/1000, 0.2)
		l, err := plotter.NewLine(plotter.XYs{{X: start, Y: float64(i)}, {X: end, Y: float64(i)}})
		if err != nil {
			return err
		}
		l.Width = vg.Points(9)
		l.Color = color.RGBA{R: 0x3b, G: 0x6e, B: 0xb5, A: 0xff}
		if s.TraceID != reconcile[0].TraceID {
			l.Color = color.RGBA{R: 0xd9, G: 0x7a, B: 0x1c, A: 0xff}
		}
		p.Add(l)
	}
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.7, float64(len(all))-0.3
	p.Add(plotter.NewGrid())
	return p.Save(9*vg.Inch, vg.Length(1+0.45*float64(len(all)))*vg.Inch, out)
}
