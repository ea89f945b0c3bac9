//go:build !sarama_sticky

package main

import (
	"errors"

	"github.com/IBM/sarama"
)

// stickyStrategy refuses: Sarama has BalanceStrategySticky from 1.24.0.
func stickyStrategy() (sarama.BalanceStrategy, error) {
	return nil, errors.New("assignment strategy \"sticky\" needs Sarama 1.24.0 or later (BalanceStrategySticky)")
}
