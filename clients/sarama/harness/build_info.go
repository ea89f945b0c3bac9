package main

// Overridden at build time with -ldflags -X (see conformance/members/kinds/sarama.py).
var (
	moduleName        = "github.com/IBM/sarama"
	cooperativeMember = "unknown"
)
