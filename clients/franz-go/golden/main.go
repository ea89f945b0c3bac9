// Command golden writes golden consumer-protocol vectors produced by franz-go's own balancers.
//
// Every byte string comes from franz-go (package kgo) through the calls its group consumer makes:
// GroupBalancer.JoinGroupMetadata (the JoinGroup subscription, with the sticky balancers' userData
// inside) and, for assignments, the leader's path MemberBalancer(members).Balance(topics)
// .IntoSyncAssignment() over members whose metadata those same balancers wrote. Content is what
// franz-go's own decoders (kmsg.ConsumerMemberMetadata, kmsg.ConsumerMemberAssignment,
// kmsg.StickyMemberMetadata) read back. The generator writes no byte itself.
//
// The client guarantees JoinGroupMetadata sorted topics and partitions (it sorts them before the
// call), so the inputs here are sorted as the client passes them. Where output could depend on Go
// map order, each value is encoded repeatedly and the number of distinct encodings is a fact.
//
// One source for every release from 1.7.0: fields a release's kmsg may lack (Generation, Rack of
// ConsumerMemberMetadata, v2/v3) are read by reflection. Built per release by
// scripts/regen-golden.sh in a throw-away module.
//
// Usage: golden -version v1.22.3
package main

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
}

const (
	generation = int32(5)
	repeat     = 50
)

var (
	version string
	out     []vector
	topics  = []string{"audit", "orders"} // sorted, as the client passes them
	owned   = map[string][]int32{"orders": {0, 2}, "audit": {1}}
)

type named struct {
	name string
	b    kgo.GroupBalancer
}

func balancers() []named {
	return []named{
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
		{"sticky", kgo.StickyBalancer()},
		{"range", kgo.RangeBalancer()},
		{"roundrobin", kgo.RoundRobinBalancer()},
	}
}

func main() {
	flag.StringVar(&version, "version", "", "the franz-go release being run, e.g. v1.22.3")
	flag.Parse()
	if version == "" {
		fail("-version is required")
	}
	for _, n := range balancers() {
		if n.b.ProtocolName() != n.name {
			fail("balancer %q calls itself %q", n.name, n.b.ProtocolName())
		}
		subscriptions(n)
	}
	assignments()
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		fail("encoding output: %v", err)
	}
}

// ---------------------------------------------------------------- subscriptions (and their userData)

func subscriptions(n named) {
	fresh, distinct := stable(func() []byte { return n.b.JoinGroupMetadata(topics, map[string][]int32{}, -1) })
	subscription(n, "subscription-"+n.name+"-fresh", fresh, distinct,
		n.name+"Balancer().JoinGroupMetadata([audit, orders], {}, -1): a member's first JoinGroup "+
			"(no assignment yet, generation -1)")
	held, distinct := stable(func() []byte { return n.b.JoinGroupMetadata(topics, copyOwned(), generation) })
	subscription(n, "subscription-"+n.name+"-gen5", held, distinct,
		n.name+"Balancer().JoinGroupMetadata([audit, orders], {audit: [1], orders: [0, 2]}, 5): a rejoin "+
			"holding three partitions after generation 5")
}

func subscription(n named, id string, raw []byte, distinct int, description string) {
	var meta kmsg.ConsumerMemberMetadata
	if err := meta.ReadFrom(raw); err != nil {
		fail("%s: franz-go cannot decode its own bytes %x: %v", id, raw, err)
	}
	facts := []string{"description: " + description}
	facts = append(facts, repeatFact(distinct)...)
	c := subscriptionContent{Version: meta.Version, Topics: meta.Topics, GenerationID: -1, OwnedPartitions: []topicPartitions{}}
	if meta.Version >= 1 {
		for _, op := range meta.OwnedPartitions {
			c.OwnedPartitions = append(c.OwnedPartitions, topicPartitions{op.Topic, nonNil(op.Partitions)})
		}
	}
	if meta.Version >= 2 {
		c.GenerationID = int32(field(meta, "Generation").Int())
	}
	if meta.Version >= 3 {
		if r := field(meta, "Rack"); !r.IsNil() {
			s := r.Elem().String()
			c.RackID = &s
		}
	}
	c.UserData = hexOrNil(meta.UserData)
	switch {
	case meta.UserData == nil:
		facts = append(facts, "userData null (length -1)")
	case len(meta.UserData) == 0:
		facts = append(facts, "userData empty (length 0), not null")
	}
	facts = append(facts, fmt.Sprintf("subscription version %d", meta.Version))
	emit(id, "subscription", nil, raw, c, sort.StringsAreSorted(c.Topics) && canonicalPartitions(c.OwnedPartitions), facts)
	if n.name == "cooperative-sticky" || n.name == "sticky" {
		stickyUserData(n, strings.Replace(id, "subscription-", "userdata-", 1), meta.UserData)
	}
}

// stickyUserData records the sticky balancers' userData as franz-go's kmsg.StickyMemberMetadata reads it.
func stickyUserData(n named, id string, raw []byte) {
	var sm kmsg.StickyMemberMetadata
	if err := sm.ReadFrom(raw); err != nil {
		fail("%s: franz-go cannot decode its own sticky userData %x: %v", id, raw, err)
	}
	previous := []map[string]any{}
	var tps []topicPartitions
	for _, a := range sm.CurrentAssignment {
		previous = append(previous, map[string]any{"topic": a.Topic, "partitions": nonNil(a.Partitions)})
		tps = append(tps, topicPartitions{a.Topic, nonNil(a.Partitions)})
	}
	facts := []string{"description: the userData inside " + strings.Replace(id, "userdata-", "subscription-", 1)}
	c := userdataContent{Format: "sticky-v1", Fields: map[string]any{"previous_assignment": previous, "generation": sm.Generation}}
	if sm.Generation == -1 {
		// kmsg's StickyMemberMetadata.AppendTo writes the generation only when it is not -1.
		c = userdataContent{Format: "sticky-v0", Fields: map[string]any{"previous_assignment": previous}}
		facts = append(facts, "generation -1 is not written: the StickyAssignor v0 layout (previous assignment "+
			"only); with nothing held that is 00000000, four bytes that also read as a bare int32 generation 0")
	} else {
		facts = append(facts, "StickyAssignor v1 layout (previous assignment, then int32 generation), "+
			"not Java's bare cooperative generation")
	}
	name := n.name
	emit(id, "userdata", &name, raw, c, canonicalPartitions(tps), facts)
}

// ---------------------------------------------------------------- assignments (the leader's bytes)

// assignments balances two members, then three, with each balancer as the leader does.
func assignments() {
	for _, n := range balancers() {
		members := joinMembers(n, 2)
		assignment(n, "assignment-"+n.name+"-two-members", members, map[string]int32{"orders": 3, "audit": 1},
			"two fresh members m1, m2 subscribed to [audit, orders] (audit 1 partition, orders 3)")
	}
	n := balancers()[2] // range: the third member of one one-partition topic gets nothing
	members := joinMembers(n, 3)
	assignment(n, "assignment-range-empty", members, map[string]int32{"audit": 1, "orders": 1},
		"three fresh members over two one-partition topics: range gives m3 nothing")
}

func joinMembers(n named, count int) []kmsg.JoinGroupResponseMember {
	var members []kmsg.JoinGroupResponseMember
	for i := 1; i <= count; i++ {
		m := kmsg.NewJoinGroupResponseMember()
		m.MemberID = fmt.Sprintf("m%d", i)
		m.ProtocolMetadata = n.b.JoinGroupMetadata(topics, map[string][]int32{}, -1)
		members = append(members, m)
	}
	return members
}

func assignment(n named, id string, members []kmsg.JoinGroupResponseMember, partitions map[string]int32, description string) {
	plans := map[string]map[string][]byte{} // plan as text -> member -> assignment bytes
	for i := 0; i < repeat; i++ {
		mb, _, err := n.b.MemberBalancer(members)
		if err != nil {
			fail("%s: MemberBalancer: %v", id, err)
		}
		var text []string
		plan := map[string][]byte{}
		for _, a := range balance(id, mb, partitions).IntoSyncAssignment() {
			plan[a.MemberID] = a.MemberAssignment
			text = append(text, a.MemberID+"="+hex.EncodeToString(a.MemberAssignment))
		}
		plans[strings.Join(text, ",")] = plan
	}
	var keys []string
	for k := range plans {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	chosen, distinct := plans[keys[0]], len(keys) // the smallest plan as text: the same file every regeneration
	for _, m := range members {
		raw, ok := chosen[m.MemberID]
		if !ok {
			fail("%s: the plan has no assignment for member %s", id, m.MemberID)
		}
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(raw); err != nil {
			fail("%s: franz-go cannot decode its own assignment %x: %v", id, raw, err)
		}
		c := assignmentContent{Version: a.Version, AssignedPartitions: []topicPartitions{}, UserData: hexOrNil(a.UserData)}
		for _, t := range a.Topics {
			c.AssignedPartitions = append(c.AssignedPartitions, topicPartitions{t.Topic, nonNil(t.Partitions)})
		}
		facts := []string{"description: " + n.name + " leader: MemberBalancer(members).Balance(topics)." +
			"IntoSyncAssignment(), " + description + "; this is " + m.MemberID + "'s assignment",
			"IntoSyncAssignment writes topics sorted, partitions ascending"}
		if distinct == 1 {
			facts = append(facts, fmt.Sprintf("the same plan in %d balances", repeat))
		} else {
			facts = append(facts, fmt.Sprintf("the plan is not deterministic: %d distinct plans in %d balances of the "+
				"same input (ties between equally balanced plans); the first in text order is recorded", distinct, repeat))
		}
		if a.UserData == nil {
			facts = append(facts, "userData null (length -1): the leader writes none")
		}
		emit(id+"-"+m.MemberID, "assignment", nil, raw, c, canonicalPartitions(c.AssignedPartitions), facts)
	}
}

// ---------------------------------------------------------------- helpers

// balance is the leader's call: BalanceOrError where the member balancer has it (kgo's own
// ConsumerBalancer does in newer releases, where its Balance panics), else Balance.
func balance(id string, mb kgo.GroupMemberBalancer, partitions map[string]int32) kgo.IntoSyncAssignment {
	if orErr, ok := mb.(interface {
		BalanceOrError(map[string]int32) (kgo.IntoSyncAssignment, error)
	}); ok {
		into, err := orErr.BalanceOrError(partitions)
		if err != nil {
			fail("%s: BalanceOrError: %v", id, err)
		}
		return into
	}
	return mb.Balance(partitions)
}

func copyOwned() map[string][]int32 {
	c := map[string][]int32{}
	for t, ps := range owned {
		c[t] = append([]int32(nil), ps...)
	}
	return c
}

// stable encodes repeatedly (JoinGroupMetadata ranges over a map) and returns the first encoding
// and the number of distinct encodings seen.
func stable(encode func() []byte) ([]byte, int) {
	seen := map[string]bool{}
	var first []byte
	for i := 0; i < repeat; i++ {
		b := encode()
		if first == nil {
			first = b
		}
		seen[string(b)] = true
	}
	return first, len(seen)
}

func repeatFact(distinct int) []string {
	if distinct == 1 {
		return []string{fmt.Sprintf("the same bytes in %d calls (topics sorted before writing)", repeat)}
	}
	return []string{fmt.Sprintf("NOT deterministic: %d distinct encodings in %d calls; the first is recorded", distinct, repeat)}
}

// field reads a struct field a release's kmsg may lack (zero Value if absent is a bug: the version says it is there).
func field(meta kmsg.ConsumerMemberMetadata, name string) reflect.Value {
	v := reflect.ValueOf(meta).FieldByName(name)
	if !v.IsValid() {
		fail("kmsg.ConsumerMemberMetadata has no %s field although the version says so", name)
	}
	return v
}

func nonNil(p []int32) []int32 {
	if p == nil {
		return []int32{}
	}
	return p
}

func hexOrNil(b []byte) *string {
	if b == nil {
		return nil
	}
	h := hex.EncodeToString(b)
	return &h
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
	v := strings.TrimPrefix(version, "v")
	out = append(out, vector{
		ID: "franz-go-" + v + "-" + id, Library: "franz-go", LibraryVersion: v, Kind: kind, Assignor: assignor,
		Hex: hp, Content: content, Canonical: canonical, Facts: facts,
	})
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "golden: "+format+"\n", args...)
	os.Exit(1)
}
