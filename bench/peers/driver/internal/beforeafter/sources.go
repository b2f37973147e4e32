package beforeafter

import (
	"bufio"
	"fmt"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/mhc"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// benchRuns are go test -bench results: each benchmark's samples by
// unit, benchmarks in the order first seen.
type benchRuns struct {
	names   []string
	samples map[string]map[string][]float64
}

var procsSuffix = regexp.MustCompile(`-\d+$`)

// parseBench reads go test -bench output (any number of runs).
func parseBench(r io.Reader) (benchRuns, error) {
	b := benchRuns{samples: map[string]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || len(f)%2 != 0 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := procsSuffix.ReplaceAllString(f[0], "")
		if b.samples[name] == nil {
			b.names = append(b.names, name)
			b.samples[name] = map[string][]float64{}
		}
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return b, fmt.Errorf("benchmark line %q: %w", sc.Text(), err)
			}
			b.samples[name][f[i+1]] = append(b.samples[name][f[i+1]], v)
		}
	}
	return b, sc.Err()
}

// readBench parses the go test -bench output in file.
func readBench(file string) (benchRuns, error) {
	f, err := os.Open(file)
	if err != nil {
		return benchRuns{}, err
	}
	defer f.Close()
	b, err := parseBench(f)
	if err != nil {
		return b, fmt.Errorf("%s: %w", file, err)
	}
	return b, nil
}

// median of b's samples of name in unit, NaN if none.
func (b benchRuns) median(name, unit string) float64 {
	s := slices.Clone(b.samples[name][unit])
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	return mhc.Median(s)
}

// benchRows compares the medians of every benchmark both ran: time, and
// memory where either allocates (the other implementations for reference:
// their change is the machine's); after each clusterpool benchmark with a
// syncmap sibling, clusterpool's time over sync.Map's.
func benchRows(before, after benchRuns) []baRow {
	var rows []baRow
	for _, name := range before.names {
		if after.samples[name] == nil {
			continue
		}
		reference := !strings.Contains(name, "impl=clusterpool") // sync.Map, CCT's map, gobreaker: the same code in both trees
		for _, unit := range []string{"ns/op", "B/op", "allocs/op"} {
			b, a := before.median(name, unit), after.median(name, unit)
			if math.IsNaN(b) || math.IsNaN(a) || (unit != "ns/op" && b == 0 && a == 0) {
				continue
			}
			rows = append(rows, newRow(name+", "+unit, "%.1f", b, a, false, reference))
		}
		floor := strings.Replace(name, "impl=clusterpool", "impl=syncmap", 1)
		if floor == name || after.samples[floor] == nil || before.samples[floor] == nil {
			continue
		}
		over := func(r benchRuns) float64 { return r.median(name, "ns/op") / r.median(floor, "ns/op") }
		rows = append(rows, newRow(strings.Replace(name, "impl=clusterpool", "clusterpool ÷ syncmap", 1)+", ns/op",
			"%.2f", over(before), over(after), false, false))
	}
	return rows
}

// benchSection is the hit path: the interleaved runs of both trees'
// benchmarks in bench-before.txt and bench-after.txt.
func benchSection(dir string) (baSection, error) {
	s := baSection{Bar: "Hit path vs sync.Map (bench/: BenchmarkHit, BenchmarkOpenRejection)",
		Raw: []string{"bench-before.txt", "bench-after.txt", "benchstat.txt"}}
	before, err := readBench(filepath.Join(dir, s.Raw[0]))
	if err != nil {
		return missing(s, err)
	}
	after, err := readBench(filepath.Join(dir, s.Raw[1]))
	if err != nil {
		return missing(s, err)
	}
	runs := 0
	if len(before.names) > 0 {
		runs = len(before.samples[before.names[0]]["ns/op"])
	}
	s.Measured = fmt.Sprintf("Medians of %d runs of each tree's test binary, the trees alternating run by run. Raw runs and benchstat's comparison:", runs)
	s.Rows = benchRows(before, after)
	return s, nil
}

// soakLine is TestSoak's summary (pool/soak_test.go's t.Logf).
var soakLine = regexp.MustCompile(`soak (\S+): .*?([\d.]+) Gets/s .*wait p99 (\S+), .*heap (-?[\d.]+) B per cluster; (\d+) pool goroutines`)

// soakRun is one TestSoak run's figures; ok is false if it failed or
// printed no summary.
type soakRun struct {
	duration string
	figures  []float64 // Gets/s, wait p99 ms, heap B per cluster, goroutines
	ok       bool
}

// parseSoak reads one TestSoak run's go test -v output.
func parseSoak(text string) soakRun {
	m := soakLine.FindStringSubmatch(text)
	if m == nil {
		return soakRun{}
	}
	p99, err := time.ParseDuration(m[3])
	if err != nil {
		return soakRun{}
	}
	gets, _ := strconv.ParseFloat(m[2], 64)
	heap, _ := strconv.ParseFloat(m[4], 64)
	goroutines, _ := strconv.ParseFloat(m[5], 64)
	return soakRun{duration: m[1], figures: []float64{gets, float64(p99) / float64(time.Millisecond), heap, goroutines},
		ok: !strings.Contains(text, "--- FAIL")}
}

// soakFigures name soakRun.figures: format, higher better.
var soakFigures = []struct {
	name, format string
	higherBetter bool
}{{"Gets/s", "%.0f", true}, {"wait p99, ms", "%.2f", false}, {"heap per cluster, B", "%.0f", false}, {"pool goroutines at the end", "%.0f", false}}

// soakSection is the soak: soak-<i>-<tree>.txt, one TestSoak run each,
// i its place in the run order.
func soakSection(dir string) (baSection, error) {
	s := baSection{Bar: "Soak (pool TestSoak, make soak)"}
	files, err := filepath.Glob(filepath.Join(dir, "soak-*.txt"))
	if err != nil || len(files) == 0 {
		return missing(s, os.ErrNotExist)
	}
	slices.Sort(files)
	runs := map[string][]soakRun{}
	var order []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return s, err
		}
		tree := strings.TrimSuffix(filepath.Base(file)[strings.LastIndex(filepath.Base(file), "-")+1:], ".txt")
		runs[tree] = append(runs[tree], parseSoak(string(data)))
		order = append(order, tree)
		s.Raw = append(s.Raw, filepath.Base(file))
	}
	d := "?"
	if len(runs[beforeLabel]) > 0 {
		d = runs[beforeLabel][0].duration
	}
	s.Measured = fmt.Sprintf("TestSoak for %s per run, in the order %s; the mean of each tree's runs that passed. Raw runs:", d, strings.Join(order, ", "))
	b, a := soakMeans(runs[beforeLabel]), soakMeans(runs["after"])
	for i, f := range soakFigures {
		s.Rows = append(s.Rows, newRow(f.name, f.format, b[i], a[i], f.higherBetter, false))
	}
	s.Rows = append(s.Rows, newRow("runs that failed", "%.0f", b[len(soakFigures)], a[len(soakFigures)], false, false))
	return s, nil
}

// soakMeans is the mean of each figure over the runs that passed (NaN if
// none did), then the count of runs that failed.
func soakMeans(runs []soakRun) []float64 {
	out := make([]float64, len(soakFigures)+1)
	n := 0
	for _, r := range runs {
		if !r.ok {
			out[len(soakFigures)]++
			continue
		}
		n++
		for i, v := range r.figures {
			out[i] += v
		}
	}
	for i := range soakFigures {
		out[i] /= float64(n) // 0/0: NaN, none passed
	}
	return out
}
