// Command golden writes golden consumer-protocol vectors produced by Sarama's own encoders.
//
// Every byte string comes from Sarama: JoinGroupRequest.AddGroupProtocolMetadata (which encodes a
// ConsumerGroupMemberMetadata), SyncGroupRequest.AddGroupAssignmentMember (ConsumerGroupMemberAssignment),
// BalanceStrategySticky.AssignmentData (StickyAssignorUserDataV1) and, from 1.60, the cooperative-sticky
// strategy's SubscriptionUserData. Those are the exported routes to Sarama's unexported encode methods.
// Subscription content is what Sarama's own decoder (JoinGroupResponse.GetMembers) reads back.
//
// Sarama encodes assignments and sticky user data from Go maps, so the topic order on the wire is random
// per call. The generator encodes such values repeatedly, records how many distinct encodings it saw, and
// keeps the one whose topics are in sorted order, so the fixture is reproducible; the facts say so.
//
// Built per release by scripts/regen-golden.sh in a temp module (the import path is rewritten to
// github.com/Shopify/sarama for releases before 1.40). Build tags: sarama_gen (GenerationID/RackID
// fields, 1.45+), sarama_coop (cooperative-sticky strategy, 1.60+).
//
// Usage: golden -version v1.61.1
package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/IBM/sarama"
)

type topicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

type subscriptionContent struct {
	Version         int16             `json:"version"`
	Topics          []string          `json:"topics"`
	OwnedPartitions []topicPartitions `json:"owned_partitions"`
	GenerationID    int32             `json:"generation_id"`
	RackID          *string           `json:"rack_id"`
	UserData        *string           `json:"user_data"`
}

type assignmentContent struct {
	Version            int16             `json:"version"`
	AssignedPartitions []topicPartitions `json:"assigned_partitions"`
	UserData           *string           `json:"user_data"`
}

type userdataContent struct {
	Format string         `json:"format"`
	Fields map[string]any `json:"fields"`
}

type vector struct {
	ID             string   `json:"id"`
	Library        string   `json:"library"`
	LibraryVersion string   `json:"library_version"`
	Kind           string   `json:"kind"`
	Assignor       *string  `json:"assignor"`
	Hex            *string  `json:"hex"`
	Content        any      `json:"content"`
	Canonical      bool     `json:"canonical"`
	Facts          []string `json:"facts"`
	// Malformed marks bytes a strict decoder must reject (Sarama's own lenient decoder accepts them).
	Malformed bool `json:"malformed,omitempty"`
}

const (
	generation   = int32(5)
	repeatEncode = 200
)

var (
	version string
	out     []vector
	rack    = "r1"
)

func main() {
	flag.StringVar(&version, "version", "", "the Sarama release being run, e.g. v1.61.1")
	flag.Parse()
	if version == "" {
		fail("-version is required")
	}
	subscriptions()
	assignments()
	userdata()
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		fail("encoding output: %v", err)
	}
}

// ---------------------------------------------------------------- subscriptions

func subscriptions() {
	topics := []string{"orders", "audit"}
	ownedInput := []*sarama.OwnedPartition{{Topic: "orders", Partitions: []int32{2, 0}}, {Topic: "audit", Partitions: []int32{1}}}
	ownedSorted := []*sarama.OwnedPartition{{Topic: "audit", Partitions: []int32{1}}, {Topic: "orders", Partitions: []int32{0, 2}}}
	coopData := []byte{0, 0, 0, 5}

	subscription("subscription-basic-v0", &sarama.ConsumerGroupMemberMetadata{Topics: topics},
		"ConsumerGroupMemberMetadata{Topics: [orders, audit]} with Version unset (0) and nil UserData: "+
			"what consumerGroup.joinGroupRequest builds before 1.60 (it never sets Version)")

	maxVersion := int16(1)
	if hasGenerationFields {
		maxVersion = 3
	}
	for v := int16(0); v <= maxVersion; v++ {
		m := &sarama.ConsumerGroupMemberMetadata{Version: v, Topics: topics, UserData: coopData, OwnedPartitions: ownedInput}
		setGeneration(m, generation, &rack)
		desc := fmt.Sprintf("Version %d set explicitly; owned partitions given unsorted [orders:[2,0], audit:[1]], "+
			"UserData 00000005, generation 5, rack r1 (fields the version lacks are not written)", v)
		if v == 3 {
			desc += "; the encoder supports v3 although the consumer never writes it"
		}
		subscription(fmt.Sprintf("subscription-full-v%d", v), m, desc)
	}

	if coop := cooperativeStrategy(); coop != nil {
		// What consumerGroup.subscriptionMetadata builds (1.60+): Version from subscriptionVersion()
		// (v0 below Kafka 2.4, v1 from 2.4, v2 from 3.2), topics as passed to Consume, OwnedPartitions
		// from ownedPartitions() (unexported; sorts topics and partitions, replicated here from the
		// source), the current generation, and the strategy's SubscriptionUserData.
		withAssignment(coop, generation)
		data := subscriptionUserData(coop)
		for _, kv := range []struct {
			kafka string
			v     int16
		}{{"2.3.0", 0}, {"2.4.0", 1}, {"3.2.0", 2}} {
			m := &sarama.ConsumerGroupMemberMetadata{Version: kv.v, Topics: topics, UserData: data, OwnedPartitions: ownedSorted}
			setGeneration(m, generation, nil)
			subscription("subscription-consumer-kafka-"+kv.kafka, m, fmt.Sprintf(
				"what the 1.60+ consumer sends with config.Version = %s and cooperative-sticky in generation 5: "+
					"subscriptionVersion() = %d, topics in the order given to Consume, ownedPartitions() sorted, "+
					"no RackID", kv.kafka, kv.v))
		}
	}

	sortedVersion := int16(0)
	if cooperativeStrategy() != nil {
		sortedVersion = 2
	}
	m := &sarama.ConsumerGroupMemberMetadata{Version: sortedVersion, Topics: []string{"audit", "orders"}, UserData: coopData, OwnedPartitions: ownedSorted}
	setGeneration(m, generation, nil)
	subscription(fmt.Sprintf("subscription-sorted-v%d", sortedVersion), m,
		"inputs already in sorted order, at the highest version this release's consumer writes")

	m = &sarama.ConsumerGroupMemberMetadata{Version: 1, Topics: []string{"audit", "orders"}, UserData: []byte{}}
	subscription("subscription-empty-userdata-v1", m,
		"UserData []byte{} (empty, not nil), no owned partitions, Version 1")
}

func subscription(id string, m *sarama.ConsumerGroupMemberMetadata, description string) {
	req := &sarama.JoinGroupRequest{}
	if err := req.AddGroupProtocolMetadata("golden", m); err != nil {
		fail("%s: AddGroupProtocolMetadata: %v", id, err)
	}
	raw := req.OrderedGroupProtocols[0].Metadata
	resp := &sarama.JoinGroupResponse{Members: []sarama.GroupMember{{MemberId: "m", Metadata: raw}}}
	members, err := resp.GetMembers()
	if err != nil {
		fail("%s: Sarama cannot decode its own bytes %x: %v", id, raw, err)
	}
	back := members["m"]
	facts := []string{"description: " + description}
	facts = append(facts, orderFact("topics", back.Topics, m.Topics)...)
	c := subscriptionContent{Version: back.Version, Topics: back.Topics, GenerationID: -1, OwnedPartitions: []topicPartitions{}}
	malformed := false
	if back.Version >= 1 && len(raw) == v0Length(m) {
		malformed = true
		facts = append(facts, fmt.Sprintf("MALFORMED: declares version %d but writes only the v0 fields "+
			"(this release's encoder ignores Version and OwnedPartitions); Sarama's own decoder tolerates "+
			"the missing OwnedPartitions array, a strict decoder rejects it. The consumer never sets Version "+
			"in this release, so it only writes v0 in practice", back.Version))
	}
	if back.Version >= 1 {
		for _, op := range back.OwnedPartitions {
			c.OwnedPartitions = append(c.OwnedPartitions, topicPartitions{op.Topic, nonNil(op.Partitions)})
		}
		if len(c.OwnedPartitions) > 0 {
			if canonicalPartitions(c.OwnedPartitions) {
				facts = append(facts, "owned partitions written in the order given (which was sorted)")
			} else {
				facts = append(facts, "owned partitions written in the order given, NOT sorted: the encoder does not sort")
			}
		}
	}
	if back.Version >= 2 {
		c.GenerationID, c.RackID = readGeneration(&back)
	}
	if back.Version < 3 {
		c.RackID = nil
	}
	c.UserData = hexOrNil(back.UserData)
	facts = append(facts, userDataFact(raw, back.UserData)...)
	emit(id, "subscription", nil, raw, c, sort.StringsAreSorted(c.Topics) && canonicalPartitions(c.OwnedPartitions), facts)
	out[len(out)-1].Malformed = malformed
}

// v0Length is the size of the v0 encoding of m (version, topics, user data).
func v0Length(m *sarama.ConsumerGroupMemberMetadata) int {
	n := 2 + 4 + 4 + len(m.UserData)
	for _, t := range m.Topics {
		n += 2 + len(t)
	}
	return n
}

// ---------------------------------------------------------------- assignments

func assignments() {
	single := &sarama.ConsumerGroupMemberAssignment{Topics: map[string][]int32{"orders": {1, 0}}}
	assignment("assignment-single-topic-v0", single,
		"ConsumerGroupMemberAssignment{Topics: {orders: [1, 0]}} as the leader builds it (Version 0, nil UserData)")
	two := &sarama.ConsumerGroupMemberAssignment{Topics: map[string][]int32{"orders": {1, 0}, "audit": {0}}}
	assignment("assignment-two-topics-v0", two,
		"Topics {orders: [1, 0], audit: [0]}: a Go map, so the topic order on the wire varies per call")
	sortedA := &sarama.ConsumerGroupMemberAssignment{Topics: map[string][]int32{"orders": {0, 1}, "audit": {0}}}
	assignment("assignment-sorted-v0", sortedA, "Topics {audit: [0], orders: [0, 1]} (partitions sorted)")
	assignment("assignment-empty-v0", &sarama.ConsumerGroupMemberAssignment{},
		"the empty ConsumerGroupMemberAssignment{} the leader sends a member with no partitions")
	data := stickyUserData(map[string][]int32{"orders": {0, 1}, "audit": {0}})
	withData := &sarama.ConsumerGroupMemberAssignment{Topics: map[string][]int32{"orders": {0, 1}, "audit": {0}}, UserData: data}
	assignment("assignment-sticky-userdata-v0", withData,
		"the eager sticky leader's assignment: UserData = BalanceStrategySticky.AssignmentData(its topics, generation 5)")
}

func assignment(id string, a *sarama.ConsumerGroupMemberAssignment, description string) {
	raw, distinct := stableEncoding(func() []byte {
		req := &sarama.SyncGroupRequest{}
		if err := req.AddGroupAssignmentMember("m", a); err != nil {
			fail("%s: AddGroupAssignmentMember: %v", id, err)
		}
		return req.GroupAssignments[0].Assignment
	}, keys(a.Topics))
	back, err := (&sarama.SyncGroupResponse{MemberAssignment: raw}).GetMemberAssignment()
	if err != nil {
		fail("%s: Sarama cannot decode its own bytes %x: %v", id, raw, err)
	}
	facts := []string{"description: " + description}
	facts = append(facts, mapOrderFact(len(a.Topics), distinct)...)
	c := assignmentContent{Version: back.Version, AssignedPartitions: []topicPartitions{}, UserData: hexOrNil(back.UserData)}
	for _, t := range wireOrder(raw, keys(back.Topics)) {
		c.AssignedPartitions = append(c.AssignedPartitions, topicPartitions{t, nonNil(back.Topics[t])})
	}
	if len(a.Topics) > 0 && !canonicalPartitions(c.AssignedPartitions) {
		facts = append(facts, "partitions within a topic written in the order given, not sorted")
	}
	facts = append(facts, userDataFact(raw, back.UserData)...)
	emit(id, "assignment", nil, raw, c, canonicalPartitions(c.AssignedPartitions), facts)
}

// ---------------------------------------------------------------- userdata

func userdata() {
	sticky := "sticky"
	prev := map[string][]int32{"orders": {2, 0}, "audit": {1}}
	raw, distinct := stickyUserDataCounted(prev)
	facts := []string{"description: BalanceStrategySticky.AssignmentData(member, {orders: [2, 0], audit: [1]}, 5): " +
		"written by the LEADER into the assignment's UserData and echoed back by the member in its next JoinGroup",
		"StickyAssignorUserDataV1 layout: previous assignment then int32 generation, no version prefix"}
	facts = append(facts, mapOrderFact(len(prev), distinct)...)
	var previous []map[string]any
	var tps []topicPartitions
	for _, t := range wireOrder(raw, keys(prev)) {
		previous = append(previous, map[string]any{"topic": t, "partitions": prev[t]})
		tps = append(tps, topicPartitions{t, prev[t]})
	}
	facts = append(facts, "partitions within a topic written in the order given, not sorted")
	emit("userdata-sticky-gen5", "userdata", &sticky, raw,
		userdataContent{"sticky-v1", map[string]any{"previous_assignment": previous, "generation": generation}},
		canonicalPartitions(tps), facts)

	coop := cooperativeStrategy()
	if coop == nil {
		return
	}
	name := "cooperative-sticky"
	fresh := subscriptionUserData(coop)
	emit("userdata-cooperative-fresh", "userdata", &name, fresh,
		userdataContent{"cooperative-generation", map[string]any{"generation": -1}}, true,
		[]string{"description: NewBalanceStrategyCooperativeSticky().SubscriptionUserData before any assignment",
			"a bare int32 generation like Java's CooperativeStickyAssignor (-1 before the first assignment)"})
	withAssignment(coop, generation)
	emit("userdata-cooperative-gen5", "userdata", &name, subscriptionUserData(coop),
		userdataContent{"cooperative-generation", map[string]any{"generation": generation}}, true,
		[]string{"description: SubscriptionUserData after OnAssignment(assignment, 5)",
			"a bare int32 generation like Java's CooperativeStickyAssignor"})
}

// stickyUserData is BalanceStrategySticky.AssignmentData(topics, generation 5), topics in sorted order.
func stickyUserData(topics map[string][]int32) []byte {
	b, _ := stickyUserDataCounted(topics)
	return b
}

func stickyUserDataCounted(topics map[string][]int32) ([]byte, int) {
	return stableEncoding(func() []byte {
		b, err := sarama.BalanceStrategySticky.AssignmentData("m", topics, generation)
		if err != nil {
			fail("AssignmentData: %v", err)
		}
		return b
	}, keys(topics))
}

func subscriptionUserData(s sarama.BalanceStrategy) []byte {
	p, ok := s.(interface {
		SubscriptionUserData(topics []string) ([]byte, error)
	})
	if !ok {
		fail("strategy %s has no SubscriptionUserData", s.Name())
	}
	b, err := p.SubscriptionUserData([]string{"orders", "audit"})
	if err != nil {
		fail("SubscriptionUserData: %v", err)
	}
	return b
}

func withAssignment(s sarama.BalanceStrategy, gen int32) {
	p, ok := s.(interface {
		OnAssignment(*sarama.ConsumerGroupMemberAssignment, int32)
	})
	if !ok {
		fail("strategy %s has no OnAssignment", s.Name())
	}
	p.OnAssignment(&sarama.ConsumerGroupMemberAssignment{Topics: map[string][]int32{"orders": {0, 2}, "audit": {1}}}, gen)
}

// ---------------------------------------------------------------- helpers

// stableEncoding calls encode repeatedly (its output depends on Go map order) and returns the encoding
// whose topics appear in sorted order, with the number of distinct encodings seen.
func stableEncoding(encode func() []byte, topics []string) ([]byte, int) {
	seen := map[string][]byte{}
	var chosen []byte
	for i := 0; i < repeatEncode; i++ {
		b := encode()
		seen[string(b)] = b
		if sort.StringsAreSorted(wireOrder(b, topics)) {
			chosen = b
		}
	}
	if chosen == nil {
		fail("no encoding with sorted topics in %d tries (topics %v)", repeatEncode, topics)
	}
	return chosen, len(seen)
}

// wireOrder orders the given topic names by where their length-prefixed name first occurs in b.
func wireOrder(b []byte, topics []string) []string {
	pos := map[string]int{}
	for _, t := range topics {
		needle := append([]byte{byte(len(t) >> 8), byte(len(t))}, t...)
		pos[t] = bytes.Index(b, needle)
	}
	out := append([]string(nil), topics...)
	sort.Slice(out, func(i, j int) bool { return pos[out[i]] < pos[out[j]] })
	return out
}

func mapOrderFact(nTopics, distinct int) []string {
	if nTopics < 2 {
		return nil
	}
	return []string{fmt.Sprintf("topics come from a Go map: topic order on the wire is random per call "+
		"(%d distinct encodings in %d calls); the encoding with sorted topics is recorded", distinct, repeatEncode)}
}

func orderFact(what string, written, input []string) []string {
	if sort.StringsAreSorted(input) {
		return nil
	}
	if equal(written, input) {
		return []string{fmt.Sprintf("%s written in input order %v, not sorted", what, written)}
	}
	return []string{fmt.Sprintf("%s reordered on write: input %v, wrote %v", what, input, written)}
}

func userDataFact(raw []byte, decoded []byte) []string {
	if decoded == nil {
		return []string{"userData null (length -1): Sarama writes a nil []byte as null"}
	}
	if len(decoded) == 0 {
		return []string{"userData empty (length 0), not null: Sarama writes a non-nil empty []byte as empty"}
	}
	return nil
}

func canonicalPartitions(tps []topicPartitions) bool {
	names := make([]string, len(tps))
	for i, tp := range tps {
		names[i] = tp.Topic
		if !sort.SliceIsSorted(tp.Partitions, func(a, b int) bool { return tp.Partitions[a] < tp.Partitions[b] }) {
			return false
		}
	}
	return sort.StringsAreSorted(names)
}

func emit(id, kind string, assignor *string, raw []byte, content any, canonical bool, facts []string) {
	h := hex.EncodeToString(raw)
	var hp *string
	if raw != nil {
		hp = &h
	}
	out = append(out, vector{
		ID: "sarama-" + strings.TrimPrefix(version, "v") + "-" + id, Library: "sarama",
		LibraryVersion: strings.TrimPrefix(version, "v"), Kind: kind, Assignor: assignor, Hex: hp,
		Content: content, Canonical: canonical, Facts: facts,
	})
}

func hexOrNil(b []byte) *string {
	if b == nil {
		return nil
	}
	s := hex.EncodeToString(b)
	return &s
}

func keys(m map[string][]int32) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func nonNil(p []int32) []int32 {
	if p == nil {
		return []int32{}
	}
	return p
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "golden: "+format+"\n", args...)
	os.Exit(1)
}
