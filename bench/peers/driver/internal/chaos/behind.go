package chaos

import (
	"fmt"
	"strings"
)

// The tolerance of the behind list: the drop-in is behind in a fault
// class at a quantile when its time back there exceeds the stock cache's
// by more than behindRelative of it plus behindAbsolute seconds.
const (
	behindRelative = 0.10
	behindAbsolute = 0.5
)

// behindRow is a fault class and quantile where the drop-in is behind the
// stock cache: both times back (seconds; -1: never) and the most the
// drop-in may take there (-1: the stock cache never came back).
type behindRow struct {
	Class    string  `json:"class"`
	Quantile string  `json:"quantile"`
	DropIn   float64 `json:"drop_in_s"`
	Stock    float64 `json:"stock_s"`
	Limit    float64 `json:"limit_s"`
}

// behindLimit is the most the drop-in may take where the stock cache
// takes stock seconds (≥ 0).
func behindLimit(stock float64) float64 { return stock*(1+behindRelative) + behindAbsolute }

// isBehind reports whether dropIn is behind stock (seconds, -1 never): a
// never where the stock cache came back is behind; where the stock cache
// never came back nothing is.
func isBehind(dropIn, stock float64) bool {
	switch {
	case stock < 0:
		return false
	case dropIn < 0:
		return true
	}
	return dropIn > behindLimit(stock)
}

// behindList lists, in the registry's class order, every fault class and
// quantile (p50, p99) where dropIn is behind stock. A class without
// samples in either is not compared.
func behindList(dropIn, stock []classStats) []behindRow {
	var out []behindRow
	for _, class := range classOrder() {
		d, okD := findClass(dropIn, class)
		s, okS := findClass(stock, class)
		if !okD || !okS || d.Samples == 0 || s.Samples == 0 {
			continue
		}
		for _, q := range []struct {
			name          string
			dropIn, stock float64
		}{{"p50", d.P50, s.P50}, {"p99", d.P99, s.P99}} {
			if isBehind(q.dropIn, q.stock) {
				out = append(out, behindRow{Class: class, Quantile: q.name, DropIn: q.dropIn, Stock: q.stock, Limit: behindLimit(q.stock)})
			}
		}
	}
	return out
}

// pairOf returns the drop-in's and the stock cache's results; ok is false
// unless both ran.
func pairOf(results []chaosResult) (dropIn, stock chaosResult, ok bool) {
	var haveD, haveS bool
	for _, r := range results {
		switch r.Cache {
		case "adapter":
			dropIn, haveD = r, true
		case "stock":
			stock, haveS = r, true
		}
	}
	return dropIn, stock, haveD && haveS
}

// behindOf is behindList of results' drop-in and stock cache; ok is false
// unless both ran.
func behindOf(results []chaosResult) (rows []behindRow, ok bool) {
	d, s, ok := pairOf(results)
	if !ok {
		return nil, false
	}
	return behindList(d.Classes, s.Classes), true
}

// writeBehind writes the behind list and both times to connect the fleet,
// if both caches ran.
func writeBehind(b *strings.Builder, results []chaosResult) {
	d, s, ok := pairOf(results)
	if !ok {
		return
	}
	dn, sn := cacheTitle(d.Cache), cacheTitle(s.Cache)
	rows := behindList(d.Classes, s.Classes)
	fmt.Fprintf(b, "\nWhere %s is behind %s: every fault class and quantile where its time back exceeds the ClusterCache's + %.0f %% + %.1f s (a never where the ClusterCache came back counts as behind): ",
		dn, sn, behindRelative*100, behindAbsolute)
	if len(rows) == 0 {
		b.WriteString("none.\n")
	} else {
		fmt.Fprintf(b, "%d.\n\n| fault class | quantile | %s | %s | limit |\n|---|---|---|---|---|\n", len(rows), dn, sn)
		for _, r := range rows {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", r.Class, r.Quantile, withUnit(r.DropIn), withUnit(r.Stock), withUnit(r.Limit))
		}
	}
	verdict := "not slower"
	if d.Warmup > s.Warmup {
		verdict = fmt.Sprintf("slower by %.1f s", d.Warmup-s.Warmup)
	}
	fmt.Fprintf(b, "\nTime to connect the fleet before the first fault (every Cluster connected and reconciled, both managers started at once): %s %.1f s, %s %.1f s: the drop-in is %s.\n",
		dn, d.Warmup, sn, s.Warmup, verdict)
}

// withUnit prints seconds with their unit ("never" for -1).
func withUnit(s float64) string {
	if s < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f s", s)
}
