//go:build !sarama_coop

package main

import "github.com/IBM/sarama"

// cooperativeStrategy: releases before 1.60 have no cooperative-sticky strategy.
func cooperativeStrategy() sarama.BalanceStrategy { return nil }
