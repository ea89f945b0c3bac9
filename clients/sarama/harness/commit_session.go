//go:build sarama_session_commit

package main

import "github.com/IBM/sarama"

// flushMarked commits what the session has marked, synchronously, with
// ConsumerGroupSession.Commit (Sarama 1.27.0+).
func flushMarked(s sarama.ConsumerGroupSession) {
	s.Commit()
}

// setCommitConfig turns the offset manager's automatic flush on for the
// "auto" commit mode only; the other modes flush with flushMarked.
func setCommitConfig(sc *sarama.Config, mode string) {
	sc.Consumer.Offsets.AutoCommit.Enable = mode == "auto"
}

// setRackID sets Config.RackID (present in every release with Commit).
func setRackID(sc *sarama.Config, rack string) error {
	sc.RackID = rack
	return nil
}
