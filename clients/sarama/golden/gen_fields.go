//go:build sarama_gen

package main

import "github.com/IBM/sarama"

// hasGenerationFields: this release's ConsumerGroupMemberMetadata has GenerationID and RackID (1.45+).
const hasGenerationFields = true

func setGeneration(m *sarama.ConsumerGroupMemberMetadata, generation int32, rack *string) {
	m.GenerationID = generation
	m.RackID = rack
}

func readGeneration(m *sarama.ConsumerGroupMemberMetadata) (int32, *string) {
	return m.GenerationID, m.RackID
}
