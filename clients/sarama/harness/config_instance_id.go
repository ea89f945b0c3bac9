//go:build sarama_instance_id

package main

import "github.com/IBM/sarama"

// setInstanceID makes the member static (KIP-345; Consumer.Group.InstanceId, 1.34.0+).
func setInstanceID(sc *sarama.Config, id string) error {
	sc.Consumer.Group.InstanceId = id
	return nil
}
