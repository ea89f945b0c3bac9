//go:build sarama_coop

package main

import (
	"fmt"

	"github.com/IBM/sarama"
)

// saramaModule and cooperativeMember are set per build (see kinds/sarama.py).
var saramaModule = moduleName

// strategyFor maps a canonical strategy name to this Sarama's BalanceStrategy
// (1.60.0+: cooperative-sticky exists).
func strategyFor(name string) (sarama.BalanceStrategy, error) {
	switch name {
	case "cooperative-sticky":
		return sarama.NewBalanceStrategyCooperativeSticky(), nil
	case "sticky":
		return sarama.NewBalanceStrategySticky(), nil
	case "range":
		return sarama.NewBalanceStrategyRange(), nil
	case "roundrobin":
		return sarama.NewBalanceStrategyRoundRobin(), nil
	}
	return nil, fmt.Errorf("unknown assignment strategy %q (this sarama has cooperative-sticky, sticky, range, roundrobin)", name)
}
