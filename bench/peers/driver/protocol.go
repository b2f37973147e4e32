package main

import "github.com/clusterpool/clusterpool/bench/peers/protocol"

// The driver's names for what the peers print (bench/peers/protocol, one
// declaration for the writer and the reader of each field).
type (
	figures       = protocol.Figures
	memClasses    = protocol.Memory
	availability  = protocol.Availability
	point         = protocol.Point
	chaosSample   = protocol.ChaosSample
	chaosCrossing = protocol.Crossing
	chaosHung     = protocol.HungCall
	mhcFigures    = protocol.MHCFigures
)

// Markers and timing names of the scale runs (bench/peers/protocol).
const (
	idleMarker     = protocol.IdleMarker
	loadGetName    = protocol.LoadGetName
	loadFailedName = protocol.LoadFailedName
)
