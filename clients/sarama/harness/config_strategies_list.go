//go:build sarama_group_strategies

package main

import "github.com/IBM/sarama"

// setStrategies gives Sarama the member's assignors in order (1.37.0+:
// Consumer.Group.Rebalance.GroupStrategies; the coordinator picks among them).
func setStrategies(sc *sarama.Config, strategies []sarama.BalanceStrategy) error {
	sc.Consumer.Group.Rebalance.GroupStrategies = strategies
	return nil
}
