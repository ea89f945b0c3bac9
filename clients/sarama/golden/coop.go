//go:build sarama_coop

package main

import "github.com/IBM/sarama"

// cooperativeStrategy returns Sarama's cooperative-sticky strategy (1.60+).
func cooperativeStrategy() sarama.BalanceStrategy {
	return sarama.NewBalanceStrategyCooperativeSticky()
}
