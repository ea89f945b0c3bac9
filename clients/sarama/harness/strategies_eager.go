//go:build !sarama_coop

package main

import (
	"fmt"

	"github.com/IBM/sarama"
)

var saramaModule = moduleName

// strategyFor maps a canonical strategy name to this Sarama's BalanceStrategy
// (before 1.60.0: eager strategies only).
func strategyFor(name string) (sarama.BalanceStrategy, error) {
	switch name {
	case "sticky":
		return stickyStrategy()
	case "range":
		return sarama.BalanceStrategyRange, nil
	case "roundrobin":
		return sarama.BalanceStrategyRoundRobin, nil
	}
	return nil, fmt.Errorf("assignment strategy %q is not available in this sarama (before 1.60 it has sticky from 1.24, range, roundrobin)", name)
}
