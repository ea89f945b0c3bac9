//go:build !sarama_group_strategies

package main

import (
	"fmt"

	"github.com/IBM/sarama"
)

// setStrategies gives Sarama the member's one assignor: before 1.37.0 Sarama has
// Consumer.Group.Rebalance.Strategy only, so a list of more than one is refused
// (the suite gives such a member one assignor; see kinds/sarama.py FEATURES).
func setStrategies(sc *sarama.Config, strategies []sarama.BalanceStrategy) error {
	if len(strategies) != 1 {
		return fmt.Errorf("this Sarama takes exactly one assignment strategy (Consumer.Group.Rebalance.Strategy; "+
			"a list needs GroupStrategies, from 1.37.0), got %d", len(strategies))
	}
	sc.Consumer.Group.Rebalance.Strategy = strategies[0]
	return nil
}
