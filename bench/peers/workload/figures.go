package workload

import "github.com/clusterpool/clusterpool/bench/peers/protocol"

// Figures is what a peer prints on stdout as one JSON object at the end of
// a run: the protocol with the driver (bench/peers/protocol).
type Figures = protocol.Figures

// Point is one bucket of the time series.
type Point = protocol.Point
