package main

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// balancerFor maps a canonical strategy name (conformance/members/harness_config.py) to kgo's
// balancer. Every franz-go 1.x has all four; cooperative-sticky is kgo's default.
func balancerFor(name string) (kgo.GroupBalancer, error) {
	switch name {
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer(), nil
	case "sticky":
		return kgo.StickyBalancer(), nil
	case "range":
		return kgo.RangeBalancer(), nil
	case "roundrobin":
		return kgo.RoundRobinBalancer(), nil
	}
	return nil, fmt.Errorf("unknown assignment strategy %q (franz-go has cooperative-sticky, sticky, range, roundrobin)", name)
}

// declaredProtocol is the history's `protocol` before the first assignment: cooperative when
// every listed strategy is cooperative. kgo itself decides per join by the protocol the group
// chose (a [cooperative-sticky, range] member runs cooperatively in a group that chose
// cooperative-sticky); observed below.
func declaredProtocol(strategies []string) string {
	for _, s := range strategies {
		if s != "cooperative-sticky" {
			return "eager"
		}
	}
	return "cooperative"
}

// observed wraps one of kgo's balancers and changes nothing it writes or decides. kgo parses
// every SyncGroup assignment with the balancer of the protocol the group chose, so
// ParseSyncAssignment tells which one it is; the history's `protocol` follows it (eager or
// cooperative, as kgo's IsCooperative says), before kgo calls any partition callback of that
// generation.
type observed struct {
	kgo.GroupBalancer
	hist *History
}

func (o observed) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	if o.IsCooperative() {
		o.hist.setContext("protocol", "cooperative")
	} else {
		o.hist.setContext("protocol", "eager")
	}
	return o.GroupBalancer.ParseSyncAssignment(assignment)
}

// groupBalancers is the balancer list for kgo.Balancers, in the config's order.
//
// Group protocols:
//
//   - "classic" (JoinGroup/SyncGroup, the client's balancer assigns): every balancer wrapped in
//     observed, which sets the history's protocol from the balancer the group chose.
//   - "consumer" (KIP-848, ConsumerGroupHeartbeat; franz-go 1.22.0+, built with the franzgo_848
//     tag: server_side.go): kgo's own balancers, UNWRAPPED. kgo runs KIP-848 only when the first
//     balancer's concrete type is its sticky balancer (sticky and cooperative-sticky: server
//     assignor "uniform") or its range balancer ("range"), and silently runs classic otherwise,
//     so a wrapper would turn the member classic. roundrobin has no server-side counterpart: a
//     list that starts with it gets cooperative-sticky in front, so the member asks for "uniform",
//     the broker's default and what the Java and librdkafka consumer members get by naming none.
//     The rest of the list is kept (kgo uses it only if it falls back to classic, which the
//     harness refuses: lifecycleTap in main.go). The history's protocol is "consumer" throughout.
func groupBalancers(cfg *Config, hist *History) ([]kgo.GroupBalancer, error) {
	if len(cfg.AssignmentStrategies) == 0 {
		return nil, fmt.Errorf("assignment_strategies is empty")
	}
	var out []kgo.GroupBalancer
	switch cfg.GroupProtocol {
	case "classic":
		for _, name := range cfg.AssignmentStrategies {
			b, err := balancerFor(name)
			if err != nil {
				return nil, err
			}
			out = append(out, observed{GroupBalancer: b, hist: hist})
		}
	case "consumer":
		if err := serverSideAvailable(); err != nil {
			return nil, err
		}
		if serverAssignorOf(cfg.AssignmentStrategies[0]) == "" {
			out = append(out, kgo.CooperativeStickyBalancer())
		}
		for _, name := range cfg.AssignmentStrategies {
			b, err := balancerFor(name)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
	default:
		return nil, fmt.Errorf("unknown group_protocol %q (classic or consumer)", cfg.GroupProtocol)
	}
	return out, nil
}

// serverAssignorOf is the KIP-848 server assignor kgo asks for when strategy leads the list
// (consumer_group_848.go's manage848), or "" when kgo has none for it.
func serverAssignorOf(strategy string) string {
	switch strategy {
	case "sticky", "cooperative-sticky":
		return "uniform"
	case "range":
		return "range"
	}
	return ""
}

// serverAssignor is the server assignor a consumer member of cfg asks for (see groupBalancers).
func serverAssignor(cfg *Config) string {
	if len(cfg.AssignmentStrategies) > 0 {
		if a := serverAssignorOf(cfg.AssignmentStrategies[0]); a != "" {
			return a
		}
	}
	return "uniform"
}
