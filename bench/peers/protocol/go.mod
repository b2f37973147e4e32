module github.com/clusterpool/clusterpool/bench/peers/protocol

go 1.26.0
