//go:build !sarama_session_commit

package main

import (
	"errors"
	"reflect"

	"github.com/IBM/sarama"
)

// flushMarked does nothing: before 1.27.0 a ConsumerGroupSession has no
// Commit. What MarkOffset marked is sent by the session's offset manager,
// every Consumer.Offsets.CommitInterval (1 s) and when the session ends (its
// offset manager closes with a last flush before the group rejoins or leaves).
// So a `committed` event of these releases records offsets handed to Sarama
// to commit, not a commit that completed.
func flushMarked(s sarama.ConsumerGroupSession) {}

// setCommitConfig keeps the offset manager's periodic flush on in every
// commit mode, since it is the only way marks reach the broker here. Sarama
// 1.25.0 and 1.26.x can switch it off (Consumer.Offsets.AutoCommit.Enable,
// read by reflection as older releases lack the field); before 1.25.0 it is
// always on.
func setCommitConfig(sc *sarama.Config, mode string) {
	auto := reflect.ValueOf(&sc.Consumer.Offsets).Elem().FieldByName("AutoCommit")
	if auto.IsValid() {
		auto.FieldByName("Enable").SetBool(true)
	}
}

// setRackID sets Config.RackID where the release has it (1.26.2+, read by
// reflection) and refuses a rack otherwise.
func setRackID(sc *sarama.Config, rack string) error {
	field := reflect.ValueOf(sc).Elem().FieldByName("RackID")
	if !field.IsValid() {
		return errors.New("rack_id needs Sarama 1.26.2 or later (Config.RackID)")
	}
	field.SetString(rack)
	return nil
}
