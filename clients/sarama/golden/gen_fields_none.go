//go:build !sarama_gen

package main

import "github.com/IBM/sarama"

// hasGenerationFields: releases before 1.45 have no GenerationID/RackID in ConsumerGroupMemberMetadata.
const hasGenerationFields = false

func setGeneration(m *sarama.ConsumerGroupMemberMetadata, generation int32, rack *string) {}

func readGeneration(m *sarama.ConsumerGroupMemberMetadata) (int32, *string) { return -1, nil }
