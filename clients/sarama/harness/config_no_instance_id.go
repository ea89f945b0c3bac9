//go:build !sarama_instance_id

package main

import (
	"errors"

	"github.com/IBM/sarama"
)

// setInstanceID refuses static membership: Sarama has Consumer.Group.InstanceId from 1.34.0.
func setInstanceID(sc *sarama.Config, id string) error {
	return errors.New("static membership (group_instance_id) needs Sarama 1.34.0 or later (Consumer.Group.InstanceId)")
}
