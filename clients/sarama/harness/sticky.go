//go:build sarama_sticky

package main

import "github.com/IBM/sarama"

// stickyStrategy is Sarama's eager sticky assignor (BalanceStrategySticky, 1.24.0+).
func stickyStrategy() (sarama.BalanceStrategy, error) {
	return sarama.BalanceStrategySticky, nil
}
